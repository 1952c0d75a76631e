#!/usr/bin/env bash
# chat-raid.sh: issue 28's raid simulation. Builds chat and raid, starts a redis-server
# of its own (AOF with appendfsync always, as in docker-compose.yml) and two chat
# replicas on it, then runs bench/cmd/raid: fresh JWT accounts sending within a short
# time on one channel with auto_shield on while sockets read it (seconds until shield
# mode is on, what reached the readers before and after, stored/held/refused), then
# the per-send CPU of the moderation checks against a plain send, side by side.
# Stops everything it started (by PID) on exit.
#
#   bench/scripts/chat-raid.sh [raid flags...]
#
# The default flags are the issue's run:
#   -raiders 500 -within 30s -readers 1000 -cost-sends 5000 -cost-rounds 4
# a small one (what make raid-short runs):
#   bench/scripts/chat-raid.sh -raiders 100 -within 5s -readers 100 -cost-sends 2000 -cost-rounds 2
#
# Environment: CHAT_BIN (use this chat binary), REDIS_PORT and CHAT_PORTS (two, space
# separated; free ports unless set). Needs redis-server (apt-get install redis-server).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

redis_port=${REDIS_PORT:-$(free_port)}
read -r -a chat_ports <<<"${CHAT_PORTS:-$(free_port) $(free_port)}"
# Free ports are picked before anything listens: the picks may meet.
while [[ -z ${CHAT_PORTS:-} && ( ${chat_ports[0]} == "${chat_ports[1]}" || ${chat_ports[0]} == "$redis_port" || ${chat_ports[1]} == "$redis_port" ) ]]; do
	chat_ports=("$(free_port)" "$(free_port)")
done
admin_token=bench-admin-token-0123456789
jwt_secret=bench-jwt-secret-0123456789abcdef0123456789
args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then
	args=(-raiders 500 -within 30s -readers 1000 -cost-sends 5000 -cost-rounds 4)
fi

ports_free "$redis_port" "${chat_ports[@]}"
scratch

build_chat
go_build bench ./cmd/raid
start_redis redis "$redis_port" --appendonly yes --appendfsync always

# Loopback is exempt from the per-client limit and the socket limits (every reader
# comes from 127.0.0.1); the per-user send limit stays off so that the cost runs
# measure sends, not refusals.
urls=()
replica_pids=()
for port in "${chat_ports[@]}"; do
	PORT=$port REDIS_URL=redis://127.0.0.1:$redis_port/0 CHAT_ADMIN_TOKEN=$admin_token CHAT_JWT_SECRET=$jwt_secret \
		RATE_LIMIT_ALLOW=127.0.0.0/8 CHAT_SEND_LIMIT=off CHAT_WS_MAX_SOCKETS_PER_IP=0 CHAT_WS_MAX_SOCKETS_PER_NET=0 \
		CHAT_WS_MAX_CHANNELS_PER_IP=0 LOG_LEVEL=warn "$chat_bin" &
	pids+=($!)
	replica_pids+=($!)
	wait_ready "http://127.0.0.1:$port/readyz"
	urls+=("http://127.0.0.1:$port")
done

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), load before:$(uptime | sed 's/.*load average://')"
BENCH_TOKEN=$admin_token CHAT_JWT_SECRET=$jwt_secret "$work/raid" -base "$(
	IFS=,
	echo "${urls[*]}"
)" -pid "$(
	IFS=,
	echo "${replica_pids[*]}"
)" -redis-pid "$redis_pid" "${args[@]}" &
pids+=($!)
wait "$!"
echo "# $(date -u +%FT%TZ) load after:$(uptime | sed 's/.*load average://')"
