#!/usr/bin/env bash
# geoip-http.sh: geoip against its floor (a plain gin handler encoding a record of the same
# fields, bench/cmd/geoipfloor) with Debian's wrk, in interleaved rounds, random IPv4
# addresses on the full DB-IP BIN and a fixed address; prints each round, the ratios and the
# CPU the load generator used against the server's. Stops the servers (by PID) on exit.
#
# Two floors: "floor" answers the record with Content-Type only, as the issue that set the
# targets defined it; "floorh" (geoipfloor -headers) also sends the four other headers of a
# geoip answer (request id, nosniff, Cache-Control, ETag: fixed values of their length), so
# that wrk and the kernel handle the same bytes for both. Ratios are given to each.
#
# Rounds rotate the servers' order (the first round runs floor, floorh, geoip; the second
# floorh, geoip, floor; and so on), so ROUNDS a multiple of 3 puts each in each position
# as often.
#
# A warm-up round comes first, the same for both servers and not counted: the figures are
# of servers in their steady state. A geoip just started first grows its heap to the size it
# keeps (each new page costs a page fault: about 36,000 in its first 6 s of random
# addresses, 4,900 in the next 6 s, then 0-120 per 6 s) and fills its location-fragment
# cache; the floor has neither.
#
#   bench/scripts/geoip-http.sh [DB.BIN]
#
# DB.BIN defaults to $GEOIP_BENCH_DB, else services/geoip/testdata/.cache/dbip-city-full.BIN
# (`make geoip-bin` builds it from the shared DB-IP data). Environment: ROUNDS (6: each
# server twice in each position), DURATION (10s, in seconds), WARMUP (the warm-up round's
# wrk duration, 10s; 0s skips it), CONNS (64), THREADS (2), GEOIP_PORT, FLOOR_PORT
# FLOORH_PORT (free ports unless set), FIXED_IP (8.8.8.8).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
db=${1:-${GEOIP_BENCH_DB:-$root/services/geoip/testdata/.cache/dbip-city-full.BIN}}
rounds=${ROUNDS:-6}
duration=${DURATION:-10s}
conns=${CONNS:-64}
threads=${THREADS:-2}
geoip_port=${GEOIP_PORT:-$(free_port)}
floor_port=${FLOOR_PORT:-$(free_port)}
floorh_port=${FLOORH_PORT:-$(free_port)}
fixed=${FIXED_IP:-8.8.8.8}
warmup=${WARMUP:-10s}
if [[ ! -f $db ]]; then
	echo "geoip-http.sh: $db: no such file; run 'make geoip-bin' or pass DB.BIN" >&2
	exit 1
fi
command -v wrk >/dev/null || {
	echo "geoip-http.sh: wrk not found (apt-get install wrk)" >&2
	exit 1
}

ports_free "$geoip_port" "$floor_port" "$floorh_port"
scratch

go_build bench ./cmd/geoipfloor
go_build services/geoip ./cmd/geoip

"$work/geoipfloor" -addr "127.0.0.1:$floor_port" >/dev/null &
floor_pid=$!
pids+=("$floor_pid")
"$work/geoipfloor" -headers -addr "127.0.0.1:$floorh_port" >/dev/null &
floorh_pid=$!
pids+=("$floorh_pid")
# The deployed mode (APP_ENV=production), access logs off (LOG_LEVEL=warn: the floor has no
# logger either) and loopback exempt
# from the per-client rate limit, which would otherwise answer 429 after 100 requests.
HOST=127.0.0.1 PORT=$geoip_port GEOIP_DB=$db APP_ENV=production LOG_LEVEL=warn RATE_LIMIT_ALLOW=127.0.0.1 \
	"$work/geoip" serve &
geoip_pid=$!
pids+=("$geoip_pid")

wait_ready "http://127.0.0.1:$geoip_port/readyz"
wait_ready "http://127.0.0.1:$floor_port/8.8.8.8/json/"
wait_ready "http://127.0.0.1:$floorh_port/8.8.8.8/json/"
curl -fs "http://127.0.0.1:$geoip_port/$fixed/json/" >/dev/null

# cpu PID: user+system clock ticks the process has used so far.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

tck=$(getconf CLK_TCK)

# run NAME PID URL [wrk args]: one wrk run; prints "NAME req/s p99 wrk-cpu-s server-cpu-s".
run() {
	local name=$1 pid=$2 url=$3
	shift 3
	local out tf s0 s1 rps p99 wcpu
	out=$(mktemp)
	tf=$(mktemp)
	s0=$(cpu "$pid")
	{
		TIMEFORMAT='%U %S'
		time wrk -t"$threads" -c"$conns" -d"$duration" --latency "$@" "$url" >"$out"
	} 2>"$tf"
	s1=$(cpu "$pid")
	if grep -q "Non-2xx" "$out"; then
		echo "geoip-http.sh: $name answered errors:" >&2
		cat "$out" >&2
		exit 1
	fi
	rps=$(awk '/^Requests\/sec/ {print $2}' "$out")
	p99=$(awk '$1 == "99%" {print $2}' "$out")
	wcpu=$(awk '{printf "%.1f", $1 + $2}' "$tf")
	rm -f "$out" "$tf"
	echo "$name $rps $p99 $wcpu $(awk -v t="$((s1 - s0))" -v hz="$tck" 'BEGIN {printf "%.1f", t / hz}')"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)," \
	"database $(basename "$db") ($(stat -c %s "$db") bytes), wrk -t$threads -c$conns -d$duration, $rounds interleaved rounds" \
	"after a warm-up round of $warmup"
echo "# columns: round kind target req/s p99 wrk-cpu-seconds server-cpu-seconds"
results=$(mktemp)
targets=(floor floorh geoip)
# target NAME: sets pid and port of the server NAME.
target() {
	case $1 in
	floor) pid=$floor_pid port=$floor_port ;;
	floorh) pid=$floorh_pid port=$floorh_port ;;
	geoip) pid=$geoip_pid port=$geoip_port ;;
	esac
}
if [[ ${warmup%s} != 0 ]]; then
	for kind in random fixed; do
		for name in "${targets[@]}"; do
			target "$name"
			if [[ $kind == random ]]; then url="http://127.0.0.1:$port/" args=(-s "$here/geoip-random.lua"); else url="http://127.0.0.1:$port/$fixed/json/" args=(); fi
			rps=$(wrk -t"$threads" -c"$conns" -d"$warmup" "${args[@]}" "$url" | awk '/^Requests\/sec/ {print $2}')
			echo "# warm-up $kind $name $rps req/s (not counted)"
		done
	done
fi
for r in $(seq 1 "$rounds"); do
	# Each round starts with the next server, so that every server runs in every position
	# of a round (ROUNDS a multiple of 3): a server measured always last (or first) would
	# carry whatever drifts within a round.
	s=$(((r - 1) % ${#targets[@]}))
	order=("${targets[@]:s}" "${targets[@]:0:s}")
	for kind in random fixed; do
		for name in "${order[@]}"; do
			target "$name"
			if [[ $kind == random ]]; then
				line=$(run "$name" "$pid" "http://127.0.0.1:$port/" -s "$here/geoip-random.lua")
			else
				line=$(run "$name" "$pid" "http://127.0.0.1:$port/$fixed/json/")
			fi
			echo "round $r $kind $line" | tee -a "$results"
		done
	done
done
# Two ratios per round and floor: requests per second, and requests per CPU-second of the
# server (the cost of an answer, which other load on a shared machine disturbs far less
# than throughput).
secs=${duration%s}
# Each round's floors before its geoip line, whatever order the round ran them in: the
# ratios below are taken when the geoip line is read. Rounds in order, random first.
sort -k2,2n -k3,3r -k4,4 -o "$results" "$results"
echo "# ratios per round, geoip/floor and geoip/floorh: throughput, and requests per server CPU-second"
awk -v d="$secs" '{key=$2" "$3; e=$5*d/$8; if ($4 != "geoip") {f[key" "$4]=$5; fe[key" "$4]=e}
	else printf "round %s %s: floor %.3f  %.3f   floorh %.3f  %.3f\n", $2, $3, $5/f[key" floor"], e/fe[key" floor"], $5/f[key" floorh"], e/fe[key" floorh"]}' "$results"
for floor in floor floorh; do
	awk -v d="$secs" -v fl="$floor" '{key=$2" "$3; e=$5*d/$8; if ($4 == fl) {f[key]=$5; fe[key]=e}
		else if ($4 == "geoip") {s[$3]+=$5/f[key]; se[$3]+=e/fe[key]; n[$3]++}}
		END {for (k in s) printf "# mean ratio %s geoip/%s: throughput %.3f, per CPU-second %.3f, over %d rounds\n", k, fl, s[k]/n[k], se[k]/n[k], n[k]}' "$results"
	# The median round too: on a shared machine one round can swing the mean by several percent.
	for kind in random fixed; do
		awk -v k="$kind" -v fl="$floor" '$3 == k {if ($4 == fl) f[$2]=$5; else if ($4 == "geoip") r[$2]=$5/f[$2]} END {for (i in r) print r[i]}' "$results" |
			sort -g | awk -v k="$kind" -v fl="$floor" '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "# median round %s geoip/%s: throughput %.3f\n", k, fl, m}'
	done
done
# geoip/floor by geoip's place in its round (round r starts with server (r-1) mod 3 of
# floor, floorh, geoip): a place that stands out says the machine drifted within rounds.
awk -v n="${#targets[@]}" '{key=$2" "$3; if ($4 == "floor") f[key]=$5
	else if ($4 == "geoip") {p=(n - 1 - ($2 - 1) % n) + 1; s[$3" "p]+=$5/f[key]; c[$3" "p]++}}
	END {for (k in s) {split(k, a, " "); printf "# mean ratio %s geoip/floor with geoip %s in its round: throughput %.3f, over %d rounds\n", a[1], a[2] == 1 ? "first" : a[2] == 2 ? "second" : "third", s[k]/c[k], c[k]}}' "$results" | sort
rm -f "$results"
