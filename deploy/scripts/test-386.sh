#!/usr/bin/env bash
# test-386.sh DIR PACKAGE: a package's tests on a 32-bit target (GOARCH=386), where this
# machine can run them. Compiling and vetting for 386 always happen: they catch size and
# alignment mistakes (a uintptr taken for 8 bytes, an atomic 64-bit field off its
# alignment) at build time. Running needs a kernel that executes 386 programs, which
# many cloud and microVM kernels do not (CONFIG_IA32_EMULATION off), or qemu-i386 from
# Debian's qemu-user; a small probe program decides once. Where neither works the run
# is skipped with one line that says so; REQUIRE_386=1 makes that a failure instead.
set -euo pipefail
dir=$1 pkg=$2
cd "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

GOARCH=386 go vet "$pkg"
GOARCH=386 go test -c -o "$tmp/pkg.test" "$pkg"

# The probe does what a test binary's runtime does first: start threads, run the
# collector. (qemu-user 7.2 runs a bare 386 "hello" yet crashes Go's runtime when it
# starts a second thread, so a trivial probe would send the tests to a crash.)
cat >"$tmp/probe.go" <<'GO'
package main

import (
	"fmt"
	"runtime"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = make([]byte, 1<<20); runtime.GC() }()
	}
	wg.Wait()
	fmt.Println("ok")
}
GO
(cd "$tmp" && GOARCH=386 GOWORK=off GOFLAGS="" go build -o probe probe.go)

runner=()
why=""
if [ "$("$tmp/probe" 2>/dev/null)" = ok ]; then
	:
elif command -v qemu-i386 >/dev/null && [ "$(qemu-i386 "$tmp/probe" 2>/dev/null)" = ok ]; then
	runner=(qemu-i386)
else
	why="this kernel does not execute 386 programs"
	if command -v qemu-i386 >/dev/null; then
		why+=", and Go's runtime does not run under $(qemu-i386 --version | head -n 1)"
	else
		why+=" and qemu-i386 (Debian's qemu-user) is not installed"
	fi
fi

if [ -n "$why" ]; then
	if [ "${REQUIRE_386:-0}" = 1 ]; then
		echo "test-386: FAIL: $pkg compiled and vetted for 386, but cannot run: $why (REQUIRE_386=1)" >&2
		exit 1
	fi
	echo "test-386: SKIP running $pkg on 386 (compiled and vetted for 386: ok): $why"
	exit 0
fi
echo "test-386: running $pkg on 386${runner:+ under ${runner[*]}}"
(cd "$(go list -f '{{.Dir}}' "$pkg")" && "${runner[@]}" "$tmp/pkg.test" -test.count=1)
echo "ok      $pkg (GOARCH=386)"
