#!/usr/bin/env bash
# make run: geoip and chat from bin/ in the foreground, until Ctrl-C or until either stops.
# Both are always stopped (SIGTERM: each drains and exits) and waited for before this
# script ends: 130 after Ctrl-C, 143 after SIGTERM, else the status of the one that stopped.
# (The old recipe's `trap 'kill 0' INT TERM EXIT` signalled its own shell too, re-entered
# the trap and crashed bash.)
#
#   run-local.sh BIN_DIR GEOIP_PORT CHAT_PORT
set -uo pipefail

bin=${1:-bin}
geoip_port=${2:-3001}
chat_port=${3:-3000}
pids=()

stop() {
	trap - INT TERM
	if [ "${#pids[@]}" -gt 0 ]; then
		kill -TERM "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	fi
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

PORT=$geoip_port "$bin/geoip" serve &
pids+=($!)
PORT=$chat_port "$bin/chat" serve &
pids+=($!)
echo "run: geoip on http://127.0.0.1:$geoip_port/, chat on http://127.0.0.1:$chat_port/ (Ctrl-C stops both)" >&2

wait -n "${pids[@]}"
status=$?
stop
exit "$status"
