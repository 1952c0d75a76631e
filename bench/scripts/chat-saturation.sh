#!/usr/bin/env bash
# chat-saturation.sh: issue 7's fan-out comparison in one run. Builds chat, fanout and
# wsfloor, starts a redis-server of its own (AOF with appendfsync always, as in
# docker-compose.yml), two chat replicas on it and the floor on loopback, runs fanout
# against the floor and the two replicas in interleaved rounds, and stops everything it
# started (by PID) on exit.
#
#   bench/scripts/chat-saturation.sh [fanout flags...]
#
# The default flags are the saturation run:
#   -subs 1000 -saturate -inflight 16 -d 10s -rounds 4 -alternate
# the latency run is
#   bench/scripts/chat-saturation.sh -subs 1000 -rate 100 -d 10s -rounds 4 -alternate
#
# Environment:
#   CHAT_BIN           use this chat binary instead of building ./services/chat/cmd/chat
#   CHAT_BASELINE_BIN  also start two replicas of this binary (on their own Redis database,
#                      so neither pair's readers see the other's traffic) and measure them
#                      as target "base": a before/after comparison in the same rounds
#   CHAT_PPROF         with a profiling build (go build -tags pprof), serve each replica's
#                      pprof on 127.0.0.1:<its port + 1000>
#   REDIS_PORT (16379), CHAT_PORTS ("18081 18082"), BASE_PORTS ("18083 18084"),
#   FLOOR_PORT (18091)
# Needs redis-server (apt-get install redis-server); the system service is not used.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

redis_port=${REDIS_PORT:-16379}
read -r -a chat_ports <<<"${CHAT_PORTS:-18081 18082}"
read -r -a base_ports <<<"${BASE_PORTS:-18083 18084}"
floor_port=${FLOOR_PORT:-18091}
admin_token=bench-admin-token-0123456789
args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then
	args=(-subs 1000 -saturate -inflight 16 -d 10s -rounds 4 -alternate)
fi

# Something already listening would answer in place of the servers started here.
ports=("$redis_port" "$floor_port" "${chat_ports[@]}")
if [[ -n ${CHAT_BASELINE_BIN:-} ]]; then
	ports+=("${base_ports[@]}")
fi
ports_free "${ports[@]}"
scratch

build_chat
go_build bench ./cmd/fanout ./cmd/wsfloor
start_redis redis "$redis_port" --appendonly yes --appendfsync always

# start_replica BINARY PORT DB: one chat replica on the bench Redis, access logs off,
# loopback exempt from the per-client limit, no per-user send limit, and no per-address
# socket limits (the 1,000 subscribers dial from loopback: with the default of 100 sockets
# per address 800 of them were refused with 429).
start_replica() {
	local pprof=
	if [[ -n ${CHAT_PPROF:-} ]]; then
		pprof=127.0.0.1:$(($2 + 1000))
	fi
	CHAT_PPROF_ADDR=$pprof PORT=$2 REDIS_URL=redis://127.0.0.1:$redis_port/$3 CHAT_ADMIN_TOKEN=$admin_token \
		RATE_LIMIT_ALLOW=127.0.0.0/8 CHAT_SEND_LIMIT=off CHAT_WS_MAX_SOCKETS_PER_IP=0 CHAT_WS_MAX_SOCKETS_PER_NET=0 \
		CHAT_WS_MAX_CHANNELS_PER_IP=0 LOG_LEVEL=warn "$1" &
	pids+=($!)
}


targets=(-target "floor=http://127.0.0.1:$floor_port")
"$work/wsfloor" -addr "127.0.0.1:$floor_port" >/dev/null &
pids+=($!)
wait_ready "http://127.0.0.1:$floor_port/stats"

urls=()
for port in "${chat_ports[@]}"; do
	start_replica "$chat_bin" "$port" 0
	wait_ready "http://127.0.0.1:$port/readyz"
	urls+=("http://127.0.0.1:$port")
done
if [[ -n ${CHAT_BASELINE_BIN:-} ]]; then
	base_urls=()
	for port in "${base_ports[@]}"; do
		start_replica "$CHAT_BASELINE_BIN" "$port" 1
		wait_ready "http://127.0.0.1:$port/readyz"
		base_urls+=("http://127.0.0.1:$port")
	done
	targets+=(-target "base=$(
		IFS=,
		echo "${base_urls[*]}"
	)")
fi
targets+=(-target "redis=$(
	IFS=,
	echo "${urls[*]}"
)")

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), load before:$(uptime | sed 's/.*load average://')"
# In the background, so that a signal to this script stops the run at once (bash runs
# traps only between commands) and the cleanup stops fanout too.
BENCH_TOKEN=$admin_token "$work/fanout" "${targets[@]}" "${args[@]}" &
pids+=($!)
wait "$!"
echo "# $(date -u +%FT%TZ) load after:$(uptime | sed 's/.*load average://')"
