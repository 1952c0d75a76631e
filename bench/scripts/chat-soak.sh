#!/usr/bin/env bash
# Soak one chat replica on a real redis-server: bench/cmd/soak holds 2,000 sockets on
# 100 channels (2% reconnecting with since= every 5 s), sends 100 msg/s and takes a
# moderation action a second through the API, samples the replica's resident memory,
# goroutines and Redis used_memory (less the clients' and AOF buffers, which follow the
# moment's traffic) every 5 s, and fails when one grows more than 10%
# between the end of the warm-up and the end, or a subscriber misses or repeats a
# message. Builds chat and soak, starts Redis (append-only, appendfsync always, as in
# docker-compose.yml) and the replica, prints every process's CPU, stops what it started.
#
#   bench/scripts/chat-soak.sh                     one hour (warm-up 20 min)
#   bench/scripts/chat-soak.sh -d 3m -warmup 80s   the CI version (make soak-short)
#
# Extra arguments go to soak. The replica keeps the default socket limits (the sockets
# come from 40 loopback addresses, 50 each) and its defaults but two: loopback is exempt
# from the request rate limit (RATE_LIMIT_ALLOW) and the per-user send limit is off
# (CHAT_SEND_LIMIT=off), as 40 viewers send 100 msg/s. Environment: REDIS_PORT and
# CHAT_PORT (free ports unless set), CHAT_HISTORY (the service default unless set: the Redis stream of a
# channel grows until it holds CHAT_HISTORY messages, one a second per channel here, so
# the warm-up must be longer than that many seconds).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# Each side of every socket is a file: the replica and soak each need the sockets plus
# some 256 more. Go raises a process's soft open-file limit to the hard one by itself, so
# the hard limit is what counts; where it is lower, say so and run nothing.
sockets=2000
args=("$@")
for i in "${!args[@]}"; do
	case "${args[$i]}" in
	-sockets | --sockets) sockets=${args[$((i + 1))]:-$sockets} ;;
	-sockets=* | --sockets=*) sockets=${args[$i]#*=} ;;
	esac
done
if [ "$(ulimit -Hn)" != unlimited ] && (($(ulimit -Hn) < sockets + 256)); then
	echo "chat-soak: SKIP: the open-file hard limit is $(ulimit -Hn), and $sockets sockets need $((sockets + 256)) (raise it: ulimit -Hn, or LimitNOFILE for a service)"
	exit 0
fi

redis_port=${REDIS_PORT:-$(free_port)}
chat_port=${CHAT_PORT:-$(free_port)}
admin_token=soak-admin-token-0123456789
ports_free "$redis_port" "$chat_port"
scratch

build_chat
go_build bench ./cmd/soak
start_redis redis "$redis_port" --appendonly yes --appendfsync always

PORT=$chat_port REDIS_URL=redis://127.0.0.1:$redis_port/0 CHAT_ADMIN_TOKEN=$admin_token \
	RATE_LIMIT_ALLOW=127.0.0.0/8 CHAT_SEND_LIMIT=off LOG_LEVEL=warn "$chat_bin" &
pids+=($!)
chat_pid=$!
wait_ready "http://127.0.0.1:$chat_port/readyz"

cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"
}
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), $(redis-server --version | cut -d' ' -f3), load before:$(uptime | sed 's/.*load average://')"
status=0
BENCH_TOKEN=$admin_token "$work/soak" -base "http://127.0.0.1:$chat_port" -pid "$chat_pid" -redis "127.0.0.1:$redis_port" "$@" || status=$?
echo "# chat pid $chat_pid: $(cpu "$chat_pid") s CPU; redis pid $redis_pid: $(cpu "$redis_pid") s CPU"
exit "$status"
