#!/usr/bin/env bash
# Idle capacity of one chat replica: K idle WebSocket sockets (100,000 by default) from
# several 127.x source addresses, on 1 channel and then on 10,000 channels, each on a
# fresh replica over a real redis-server; bench/cmd/wsidle reports the replica's
# resident memory per socket (VmRSS after minus before, over K), its goroutines per
# socket, and its own CPU and memory (the client must not be what limits the run).
#
#   bench/scripts/chat-capacity.sh               K=100000, channels 1 and 10000
#   K=19000 CHANNELS=10000 bench/scripts/chat-capacity.sh
#
# The replica's socket limits are raised for the run through the environment, never
# by changing their defaults: CHAT_WS_MAX_SOCKETS=0 (no per-replica limit),
# CHAT_WS_MAX_SOCKETS_PER_IP=0, CHAT_WS_MAX_CHANNELS_PER_IP=0 and
# CHAT_WS_MAX_SOCKETS_PER_NET=0 (the sources share few /24s); any other
# CHAT_WS_* variable set when the script starts is passed on. `ulimit -n` is raised to
# the hard limit: a replica needs K open files and more, and the script stops with a
# message when the hard limit is lower (raising it needs CAP_SYS_RESOURCE).
# Environment: K, CHANNELS ("1 10000"), SOURCES (8: one address has ~28,000 ports),
# SETTLE (60s), REDIS_PORT, CHAT_PORT (free ports unless set), CHAT_PPROF=1 (a profiling build
# serving pprof on 127.0.0.1:<CHAT_PORT+1000>), CHAT_GOMEMLIMIT (GOMEMLIMIT for the replica
# only, e.g. 1400MiB: the Go runtime then collects and returns memory to stay under it).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

k=${K:-100000}
read -r -a channel_counts <<<"${CHANNELS:-1 10000}"
sources=${SOURCES:-8}
settle=${SETTLE:-60s}
redis_port=${REDIS_PORT:-$(free_port)}
chat_port=${CHAT_PORT:-$(free_port)}

hard=$(ulimit -Hn)
if [[ $hard != unlimited ]] && ((hard < k + 1000)); then
	echo "$(basename "$0"): the open-file hard limit is $hard: one replica cannot hold $k sockets here (it needs about $((k + 1000)) files; raising the hard limit needs CAP_SYS_RESOURCE); set K below $((hard - 1000))" >&2
	exit 1
fi
ulimit -n "$hard"
ports_free "$redis_port" "$chat_port"
scratch

build_chat
go_build bench ./cmd/wsidle
start_redis redis "$redis_port" --appendonly no

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(go version | cut -d' ' -f3), open-file limit $(ulimit -n), load before:$(uptime | sed 's/.*load average://')"
for chans in "${channel_counts[@]}"; do
	redis-cli -p "$redis_port" flushall >/dev/null
	pprof=
	if [[ -n ${CHAT_PPROF:-} ]]; then
		pprof=127.0.0.1:$((chat_port + 1000))
	fi
	GOMEMLIMIT=${CHAT_GOMEMLIMIT:-off} CHAT_PPROF_ADDR=$pprof PORT=$chat_port REDIS_URL=redis://127.0.0.1:$redis_port/0 \
		CHAT_ADMIN_TOKEN=capacity-admin-token-0123456789 RATE_LIMIT_ALLOW=127.0.0.0/8 \
		CHAT_WS_MAX_SOCKETS=0 CHAT_WS_MAX_SOCKETS_PER_IP=0 CHAT_WS_MAX_CHANNELS_PER_IP=0 CHAT_WS_MAX_SOCKETS_PER_NET=0 \
		LOG_LEVEL=warn "$chat_bin" &
	pids+=($!)
	chat_pid=$!
	wait_ready "http://127.0.0.1:$chat_port/readyz"
	echo "# $k sockets on $chans channel(s), $sources source addresses, settle $settle, GOMEMLIMIT ${CHAT_GOMEMLIMIT:-off}"
	probe=()
	if [[ -n $pprof ]]; then
		# Where the resident memory is, while the sockets are open: the Go runtime's statistics.
		probe=(-probe "http://$pprof/debug/pprof/heap?debug=1")
	fi
	"$work/wsidle" -base "http://127.0.0.1:$chat_port" -pid "$chat_pid" -k "$k" -channels "$chans" \
		-sources "$sources" -settle "$settle" "${probe[@]}"
	awk -v hz="$(getconf CLK_TCK)" '{ printf "# chat pid %d: %.1f s CPU\n", $1, ($14 + $15) / hz }' "/proc/$chat_pid/stat"
	# Why the replica closed sockets, if it did (a missing pong, a slow consumer...).
	curl -fs "http://127.0.0.1:$chat_port/metrics" | grep -E '^chat_ws_(server_closes_total|dead_peers_total|slow_consumers_total|refused_total)' |
		awk '$NF != 0 { print "# " $0 }' || true
	kill "$chat_pid"
	wait "$chat_pid" 2>/dev/null || true
done
