#!/usr/bin/env bash
# chat-issue12.sh: issue 12's delivery benchmarks in one run, on one Redis or on a
# 3-primary Redis Cluster. Builds chat, fanout, wsfloor and wsidle, starts the Redis
# (append-only, appendfsync always, as in docker-compose.yml), two chat replicas with
# the connection limits off (the generator is one address) and the floor, runs the
# chosen measurement, prints the CPU seconds each process used (to check that the
# generator costs less than the servers) and stops everything it started (by PID).
#
#   bench/scripts/chat-issue12.sh channels      10 vs 1000 channels x 2 subscribers, 200 msg/s
#   bench/scripts/chat-issue12.sh latency       1 channel, 1000 subscribers, 100 msg/s, vs the floor
#   bench/scripts/chat-issue12.sh saturation    1 channel, 1000 subscribers, as fast as accepted, vs the floor
#   bench/scripts/chat-issue12.sh idle          memory per idle channel: 10,000 sockets on 10,000
#                                               channels vs on 1 channel, on one fresh replica each
#
# Extra arguments go to fanout (e.g. -rounds 2). Environment:
#   REDIS_CLUSTER=1     a 3-primary cluster (ports REDIS_PORT..REDIS_PORT+2) instead of one Redis
#   REDIS_PORT (16379), CHAT_PORTS ("18081 18082"), FLOOR_PORT (18091)
#   CHAT_PPROF=1        a profiling build (go build -tags pprof); each replica serves
#                       pprof on 127.0.0.1:<its port + 1000>
# Needs redis-server and redis-cli (apt-get install redis-server redis-tools).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

mode=${1:-}
shift || true
case $mode in
channels | latency | saturation | idle) ;;
*)
	echo "usage: $(basename "$0") channels|latency|saturation|idle [fanout flags...]" >&2
	exit 2
	;;
esac
redis_port=${REDIS_PORT:-16379}
read -r -a chat_ports <<<"${CHAT_PORTS:-18081 18082}"
floor_port=${FLOOR_PORT:-18091}
admin_token=bench-admin-token-0123456789
cluster=${REDIS_CLUSTER:-}

redis_ports=("$redis_port")
if [[ -n $cluster ]]; then
	redis_ports=("$redis_port" $((redis_port + 1)) $((redis_port + 2)))
fi
ports_free "${redis_ports[@]}" "$floor_port" "${chat_ports[@]}"
scratch

build_chat
go_build bench ./cmd/fanout ./cmd/wsfloor ./cmd/wsidle

redis_pids=()
for port in "${redis_ports[@]}"; do
	extra=()
	if [[ -n $cluster ]]; then
		extra=(--cluster-enabled yes --cluster-config-file "$work/redis-$port/nodes.conf")
	fi
	start_redis "redis-$port" "$port" --appendonly yes --appendfsync always "${extra[@]}"
	redis_pids+=("$redis_pid")
done
redis_url=redis://127.0.0.1:$redis_port/0
if [[ -n $cluster ]]; then
	nodes=()
	for port in "${redis_ports[@]}"; do
		nodes+=("127.0.0.1:$port")
	done
	redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$work/cluster-create.log"
	for port in "${redis_ports[@]}"; do
		for _ in $(seq 1 100); do
			if redis-cli -p "$port" cluster info | grep -q cluster_state:ok; then
				break
			fi
			sleep 0.1
		done
	done
	redis_url="redis+cluster://127.0.0.1:${redis_ports[0]}?addr=127.0.0.1:${redis_ports[1]}&addr=127.0.0.1:${redis_ports[2]}"
fi

# start_replica PORT: one chat replica, access logs off, loopback exempt from the
# per-client request limit, no per-user send limit, no connection limits.
start_replica() {
	local pprof=
	if [[ -n ${CHAT_PPROF:-} ]]; then
		pprof=127.0.0.1:$(($1 + 1000))
	fi
	CHAT_PPROF_ADDR=$pprof PORT=$1 REDIS_URL=$redis_url CHAT_ADMIN_TOKEN=$admin_token RATE_LIMIT_ALLOW=127.0.0.0/8 \
		CHAT_SEND_LIMIT=off CHAT_WS_MAX_SOCKETS=0 CHAT_WS_MAX_SOCKETS_PER_IP=0 CHAT_WS_MAX_CHANNELS_PER_IP=0 \
		CHAT_WS_MAX_SOCKETS_PER_NET=0 CHAT_WS_MAX_SOCKETS_PER_USER=0 \
		LOG_LEVEL=warn "$chat_bin" &
	pids+=($!)
	chat_pids+=($!)
}

# ws_counters PORT: a replica's live events written, WebSocket frames written
# (chat_ws_events_delivered_total, chat_ws_frames_written_total), and the number and
# total seconds of its POST /api/v1/messages/send requests, and its socket writes that
# lasted over 2 ms (chat_ws_stuck_writes_total; 0 before the writer pool), space-separated.
ws_counters() {
	curl -fs "http://127.0.0.1:$1/metrics" | awk '
		$1 == "chat_ws_events_delivered_total" { e = $2 }
		$1 == "chat_ws_frames_written_total" { f = $2 }
		/^http_request_duration_seconds_(count|sum)\{/ && /method="POST"/ && /route="\/api\/v1\/messages\/send"/ {
			if ($1 ~ /_count/) { n = $2 } else { t = $2 }
		}
		$1 == "chat_ws_stuck_writes_total" { s = $2 }
		END { printf "%d %d %d %.6f %d", e, f, n, t, s }'
}

# cpu PID: user+system CPU seconds of a live process.
cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"
}

chat_pids=()
urls=()
for port in "${chat_ports[@]}"; do
	start_replica "$port"
	wait_ready "http://127.0.0.1:$port/readyz"
	urls+=("http://127.0.0.1:$port")
done
replicas=$(
	IFS=,
	echo "${urls[*]}"
)
redis_kind="one server"
if [[ -n $cluster ]]; then
	redis_kind="3-primary cluster"
fi
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), redis: $redis_kind, load before:$(uptime | sed 's/.*load average://')"

if [[ $mode == idle ]]; then
	# Each measurement on a fresh replica: its RSS before is the same empty state.
	for chans in 1 10000; do
		port=$((chat_ports[1] + 10))
		start_replica "$port"
		wait_ready "http://127.0.0.1:$port/readyz"
		"$work/wsidle" -base "http://127.0.0.1:$port" -pid "${chat_pids[-1]}" -k 10000 -channels "$chans" -settle 10s "$@"
		kill "${chat_pids[-1]}"
		wait "${chat_pids[-1]}" 2>/dev/null || true
		sleep 1
	done
	exit 0
fi

targets=()
case $mode in
channels)
	args=(-subs-per-channel 2 -rate 200 -d 10s -rounds 4 -alternate)
	targets=(-target "ch10=$replicas#10" -target "ch1000=$replicas#1000")
	;;
latency)
	args=(-subs 1000 -rate 100 -d 10s -rounds 4 -alternate)
	;;
saturation)
	args=(-subs 1000 -saturate -inflight 16 -d 10s -rounds 4 -alternate)
	;;
esac
if [[ $mode != channels ]]; then
	"$work/wsfloor" -addr "127.0.0.1:$floor_port" >/dev/null &
	pids+=($!)
	floor_pid=$!
	wait_ready "http://127.0.0.1:$floor_port/stats"
	targets=(-target "floor=http://127.0.0.1:$floor_port" -target "chat=$replicas")
fi

before=()
for p in "${chat_pids[@]}" "${redis_pids[@]}" ${floor_pid:+"$floor_pid"}; do
	before+=("$(cpu "$p")")
done
counters_before=()
for port in "${chat_ports[@]}"; do
	counters_before+=("$(ws_counters "$port")")
done
BENCH_TOKEN=$admin_token /usr/bin/time -f "# fanout (the generator): %U s user + %S s system CPU over %e s" \
	"$work/fanout" "${targets[@]}" "${args[@]}" "$@" &
pids+=($!)
wait "$!"
i=0
for p in "${chat_pids[@]}" "${redis_pids[@]}" ${floor_pid:+"$floor_pid"}; do
	name=chat
	if [[ " ${redis_pids[*]} " == *" $p "* ]]; then
		name=redis
	elif [[ $p == "${floor_pid:-}" ]]; then
		name=wsfloor
	fi
	echo "# $name pid $p: $(awk -v a="$(cpu "$p")" -v b="${before[i]}" 'BEGIN { printf "%.1f", a - b }') s CPU during the run"
	i=$((i + 1))
done
# Events per WebSocket frame: how much each socket write carried (at saturation,
# the more the cheaper a delivery); and how long a send took inside the replica.
i=0
for port in "${chat_ports[@]}"; do
	read -r e0 f0 n0 t0 s0 <<<"${counters_before[i]}"
	read -r e1 f1 n1 t1 s1 <<<"$(ws_counters "$port")"
	awk -v p="$port" -v e=$((e1 - e0)) -v f=$((f1 - f0)) -v n=$((n1 - n0)) -v s=$((s1 - s0)) -v t="$(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }')" \
		'BEGIN { printf "# chat :%s: %d events in %d frames during the run: %.2f events per frame; %d sends, %.1f ms each on average in the replica; %d writes over 2 ms\n", p, e, f, (f ? e / f : 0), n, (n ? 1000 * t / n : 0), s }'
	i=$((i + 1))
done
echo "# $(date -u +%FT%TZ) load after:$(uptime | sed 's/.*load average://')"
