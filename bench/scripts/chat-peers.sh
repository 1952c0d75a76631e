#!/usr/bin/env bash
# chat-peers.sh: chat against the program users would pick instead, Centrifugo (v6, its
# Redis engine), with the same load generator (bench/cmd/fanout, -protocol chat or
# centrifugo) in interleaved rounds: two chat replicas on one redis-server against two
# Centrifugo nodes on another, 1000 subscribers of one channel spread over the two
# servers, sends to both servers round-robin, at saturation and at a fixed rate. Prints
# each run, then per mode: deliveries/s and the ratio chat/centrifugo per round and its
# median, each side's server CPU per delivery (its two servers' CPU-s, and its Redis's, over
# its deliveries) and the ratio, p99, lost and duplicated deliveries, and the generator's own
# CPU (it must not be the bottleneck).
#
# Centrifugo is built from its public source outside the repository, in a temporary
# directory removed on exit: CENTRIFUGO_BIN (a built binary) when set, else CENTRIFUGO_SRC
# (a checkout or a bare git directory of github.com/centrifugal/centrifugo), else `go install
# github.com/centrifugal/centrifugo/v6@$CENTRIFUGO_VERSION` through the module proxy. No peer
# code is kept in the repository.
#
#   bench/scripts/chat-peers.sh
#
# Environment: ROUNDS (3), DURATION (10s per run), RATE (100 msg/s), SUBS (1000), INFLIGHT
# (16 sends at a time at saturation), CHAT_BIN, CENTRIFUGO_BIN, CENTRIFUGO_SRC,
# CENTRIFUGO_VERSION (v6.9.1). Ports are free ones picked at start. Needs redis-server.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
rate=${RATE:-100}
subs=${SUBS:-1000}
inflight=${INFLIGHT:-16}
cent_version=${CENTRIFUGO_VERSION:-v6.9.1}
admin_token=bench-admin-token-0123456789
api_key=bench-centrifugo-api-key-0123456789
hmac_secret=bench-centrifugo-hmac-secret-0123456789

for tool in redis-server redis-cli jq; do
	command -v "$tool" >/dev/null || {
		echo "chat-peers.sh: $tool not found (apt-get install -y redis-server jq)" >&2
		exit 1
	}
done

scratch

# Centrifugo, built outside the repository.
if [[ -n ${CENTRIFUGO_BIN:-} ]]; then
	cp "$CENTRIFUGO_BIN" "$work/centrifugo"
elif [[ -n ${CENTRIFUGO_SRC:-} ]]; then
	mkdir -p "$work/centrifugo-src"
	if [[ -d $CENTRIFUGO_SRC/.git || -f $CENTRIFUGO_SRC/HEAD ]]; then
		gitdir=$CENTRIFUGO_SRC
		[[ -d $CENTRIFUGO_SRC/.git ]] && gitdir=$CENTRIFUGO_SRC/.git
		git --git-dir="$gitdir" archive HEAD | tar -x -C "$work/centrifugo-src"
		src_version=$(git --git-dir="$gitdir" describe --tags 2>/dev/null || git --git-dir="$gitdir" log -1 --format='%h %cs')
	else
		cp -r "$CENTRIFUGO_SRC/." "$work/centrifugo-src"
		chmod -R u+w "$work/centrifugo-src" # a module cache copy is read-only
	fi
	(cd "$work/centrifugo-src" && GOWORK=off GOFLAGS=-mod=mod go build -o "$work/centrifugo" .)
else
	GOWORK=off GOBIN=$work go install "github.com/centrifugal/centrifugo/v6@$cent_version" || {
		echo "chat-peers.sh: cannot fetch Centrifugo through the module proxy; set CENTRIFUGO_SRC to a checkout of github.com/centrifugal/centrifugo or CENTRIFUGO_BIN to a binary" >&2
		exit 1
	}
fi
# Release builds carry their version; a go install'ed one says v0.0.0, its module version
# is in the build info.
cent_version=$(go version -m "$work/centrifugo" 2>/dev/null | awk '$1 == "mod" {print $3}')
if [[ -n ${src_version:-} ]]; then
	cent_version="$src_version (source)"
elif [[ -z $cent_version || $cent_version == "(devel)" ]]; then
	cent_version="$("$work/centrifugo" version 2>/dev/null | head -1) from ${CENTRIFUGO_SRC:-$CENTRIFUGO_BIN}"
fi

build_chat
go_build bench ./cmd/fanout

# A redis-server of its own for each side, both with the same settings (AOF with
# appendfsync always, as in docker-compose.yml).
chat_redis=$(free_port)
start_redis chat-redis "$chat_redis" --appendonly yes --appendfsync always
chat_redis_pid=$redis_pid
cent_redis=$(free_port)
start_redis cent-redis "$cent_redis" --appendonly yes --appendfsync always
cent_redis_pid=$redis_pid

# Two chat replicas as chat-raid.sh runs them: access logs off, loopback exempt from the
# per-client limit, no per-user send limit, and no per-address or per-network socket limits
# (every subscriber comes from 127.0.0.1; Centrifugo has no such limits by default).
chat_pids=() chat_urls=()
for _ in 1 2; do
	port=$(free_port)
	PORT=$port REDIS_URL=redis://127.0.0.1:$chat_redis/0 CHAT_ADMIN_TOKEN=$admin_token \
		RATE_LIMIT_ALLOW=127.0.0.0/8 CHAT_SEND_LIMIT=off CHAT_WS_MAX_SOCKETS_PER_IP=0 \
		CHAT_WS_MAX_SOCKETS_PER_NET=0 CHAT_WS_MAX_CHANNELS_PER_IP=0 LOG_LEVEL=warn "$chat_bin" &
	pids+=("$!")
	chat_pids+=("$!")
	wait_ready "http://127.0.0.1:$port/readyz"
	chat_urls+=("http://127.0.0.1:$port")
done

# Two Centrifugo nodes on the Redis engine, on its defaults otherwise (no history: chat's
# store is what the chat pays for and Centrifugo does not keep), subscriptions to channels
# without a namespace allowed for clients with a connection token.
cent_pids=() cent_urls=()
for n in 1 2; do
	port=$(free_port)
	cat >"$work/centrifugo-$n.json" <<JSON
{
  "http_server": {"address": "127.0.0.1", "port": $port},
  "log": {"level": "error"},
  "health": {"enabled": true},
  "client": {"token": {"hmac_secret_key": "$hmac_secret"}},
  "http_api": {"key": "$api_key"},
  "channel": {"without_namespace": {"allow_subscribe_for_client": true}},
  "engine": {"type": "redis", "redis": {"address": ["redis://127.0.0.1:$cent_redis"]}}
}
JSON
	"$work/centrifugo" --config "$work/centrifugo-$n.json" >"$work/centrifugo-$n.log" 2>&1 &
	pids+=("$!")
	cent_pids+=("$!")
	wait_ready "http://127.0.0.1:$port/health" "$work/centrifugo-$n.log"
	cent_urls+=("http://127.0.0.1:$port")
done

tck=$(getconf CLK_TCK)
# cpu PID...: the processes' user+system CPU in clock ticks.
cpu() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}

# run MODE SIDE: one fanout run against one side; prints
# "MODE SIDE delivered/s p99-ms lost dup deliveries servers-cpu-s redis-cpu-s fanout-cpu-s".
run() {
	local mode=$1 side=$2 flags urls servers redis_p tok proto json tf s0 r0 s1 r1
	flags=(-subs "$subs" -d "$duration" -rounds 1)
	if [[ $mode == sat ]]; then
		flags+=(-saturate -inflight "$inflight")
	else
		flags+=(-rate "$rate")
	fi
	if [[ $side == chat ]]; then
		urls=$(IFS=,; echo "${chat_urls[*]}") servers=("${chat_pids[@]}") redis_p=$chat_redis_pid tok=$admin_token proto=chat
	else
		urls=$(IFS=,; echo "${cent_urls[*]}") servers=("${cent_pids[@]}") redis_p=$cent_redis_pid tok=$api_key proto=centrifugo
	fi
	json=$(mktemp)
	tf=$(mktemp)
	s0=$(cpu "${servers[@]}")
	r0=$(cpu "$redis_p")
	{
		TIMEFORMAT='%U %S'
		# time counts the sender child too: bash reports the waited-for children's CPU.
		time CENTRIFUGO_HMAC_SECRET=$hmac_secret "$work/fanout" -protocol "$proto" -token "$tok" \
			-target "$side=$urls" "${flags[@]}" -json "$json" >"$work/fanout-last.txt"
	} 2>"$tf"
	s1=$(cpu "${servers[@]}")
	r1=$(cpu "$redis_p")
	if grep -q "errors\|did not parse\|warning" "$work/fanout-last.txt"; then
		sed "s/^/# $mode $side: /" "$work/fanout-last.txt" | grep "errors\|did not parse\|warning" >&2
	fi
	jq -r --arg m "$mode" --arg s "$side" --arg sc "$(awk -v t="$((s1 - s0))" -v hz="$tck" 'BEGIN {printf "%.2f", t / hz}')" \
		--arg rc "$(awk -v t="$((r1 - r0))" -v hz="$tck" 'BEGIN {printf "%.2f", t / hz}')" \
		--arg gc "$(awk '{printf "%.2f", $1 + $2}' "$tf")" \
		'.targets[0].rounds[0] | [$m, $s, (.delivered / (.window_ns / 1e9) | floor), (.latency.p99_ns / 1e6 * 100 | round / 100),
		  .lost, .duplicated, .delivered, $sc, $rc, $gc] | map(tostring) | join(" ")' "$json"
	rm -f "$json" "$tf"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3); chat $(git -C "$root" rev-parse --short HEAD), centrifugo $cent_version"
echo "# 2 servers and 1 redis-server (AOF, appendfsync always) each side; $subs subscribers of one channel; $rounds interleaved rounds of $duration runs, at saturation ($inflight sends in flight) and at $rate msg/s"
echo "# columns: round mode side delivered/s p99-ms lost dup deliveries servers-cpu-s redis-cpu-s fanout-cpu-s"
results=$(mktemp)
sides=(chat centrifugo)
for r in $(seq 1 "$rounds"); do
	# Every other round starts with the other side, so that neither always runs first.
	order=("${sides[@]}")
	if ((r % 2 == 0)); then
		order=("${sides[1]}" "${sides[0]}")
	fi
	for mode in sat rate; do
		for side in "${order[@]}"; do
			echo "round $r $(run "$mode" "$side")" | tee -a "$results"
		done
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in sat rate; do
	label="saturation"
	[[ $mode == rate ]] && label="$rate msg/s"
	awk -v m="$mode" -v label="$label" '$3 == m {
			d[$2" "$4] = $5; p[$2" "$4] = $6; lost[$4] += $7; dup[$4] += $8
			del[$4] += $9; srv[$4] += $10; red[$4] += $11; gen[$4] += $12; n = $2 > n ? $2 : n
		}
		function median(a, k,   i, j, t) {
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		END {
			printf "# %s:\n", label
			for (r = 1; r <= n; r++) {
				ratio[r] = d[r" centrifugo"] ? d[r" chat"] / d[r" centrifugo"] : 0
				pc[r] = p[r" chat"]; pz[r] = p[r" centrifugo"]; pr[r] = pz[r] ? pc[r] / pz[r] : 0
				printf "#   round %d: deliveries/s chat %d, centrifugo %d, ratio %.3f; p99 chat %.2f ms, centrifugo %.2f ms\n", r, d[r" chat"], d[r" centrifugo"], ratio[r], pc[r], pz[r]
			}
			printf "#   deliveries/s chat/centrifugo: median %.3f over %d rounds; p99 median chat %.2f ms, centrifugo %.2f ms; p99 chat/centrifugo median %.3f\n", median(ratio, n), n, median(pc, n), median(pz, n), median(pr, n)
			for (s in del) {
				printf "#   %s: %d deliveries, lost %d, dup %d; servers %.1f CPU-s (%.2f us/delivery), redis %.1f CPU-s, together %.2f us/delivery; fanout %.1f CPU-s\n",
					s, del[s], lost[s], dup[s], srv[s], del[s] ? srv[s] / del[s] * 1e6 : 0, red[s], del[s] ? (srv[s] + red[s]) / del[s] * 1e6 : 0, gen[s]
			}
			if (del["chat"] && del["centrifugo"] && srv["centrifugo"]) {
				printf "#   CPU per delivery chat/centrifugo: servers %.3f, servers and redis %.3f\n",
					(srv["chat"] / del["chat"]) / (srv["centrifugo"] / del["centrifugo"]),
					((srv["chat"] + red["chat"]) / del["chat"]) / ((srv["centrifugo"] + red["centrifugo"]) / del["centrifugo"])
			}
		}' "$results"
done
rm -f "$results"
