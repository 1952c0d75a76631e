#!/usr/bin/env bash
# make run-check: `make run` ends cleanly on Ctrl-C. Starts it in a session of its own on
# free ports, waits for both services to answer /healthz, sends SIGINT to the whole process
# group (what a terminal's Ctrl-C does), then requires: make exits 0 or 130 within 20 s, no
# process of the group is left, both ports are closed, and no crash in the output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

die() { printf 'run-check: %s\n' "$*" >&2; [ -f "${log:-}" ] && sed 's/^/  | /' "$log" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR/../.. source=deploy/scripts/netfree.sh
. deploy/scripts/netfree.sh

make -s build
geoip_port=$(free_port)
chat_port=$(free_port)
log=$(mktemp)
trap 'rm -f "$log"; [ -n "${pgid:-}" ] && kill -KILL -- "-$pgid" 2>/dev/null; true' EXIT

setsid make -s run GEOIP_PORT="$geoip_port" CHAT_PORT="$chat_port" >"$log" 2>&1 &
pgid=$!
# The background child runs setsid a moment after the fork: until then it is still in this
# script's group, so wait for the new group rather than check once.
for _ in $(seq 50); do
	[ "$(ps -o pgid= -p "$pgid" | tr -d " ")" = "$pgid" ] && break
	sleep 0.1
done
[ "$(ps -o pgid= -p "$pgid" | tr -d " ")" = "$pgid" ] || die "setsid did not give make run a process group of its own"

deadline=$((SECONDS + 60))
for port in "$geoip_port" "$chat_port"; do
	until curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz"; do
		[ "$SECONDS" -lt "$deadline" ] || die "127.0.0.1:$port/healthz did not answer within 60 s"
		kill -0 "$pgid" 2>/dev/null || die "make run stopped before both services were up"
		sleep 0.2
	done
done

kill -INT -- "-$pgid"
deadline=$((SECONDS + 20))
while kill -0 "$pgid" 2>/dev/null; do
	[ "$SECONDS" -lt "$deadline" ] || die "make run still running 20 s after Ctrl-C"
	sleep 0.2
done
set +e
wait "$pgid"
status=$?
set -e
case $status in 0 | 130) ;; *) die "make run exited $status after Ctrl-C, want 0 or 130" ;; esac
if pgrep -g "$pgid" >/dev/null; then
	die "processes left after Ctrl-C: $(pgrep -g "$pgid" -a | tr '\n' ';')"
fi
for port in "$geoip_port" "$chat_port"; do
	if curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; then die "port $port still answers after Ctrl-C"; fi
done
if grep -qiE 'segmentation fault|core dumped|panic:' "$log"; then die "crash in the output"; fi
pgid=
echo "run-check: make run stopped cleanly on Ctrl-C (exit $status, both services gone)"
