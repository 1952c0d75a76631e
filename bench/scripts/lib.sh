# shellcheck shell=bash
# Shared by the bench scripts: source it, do not run it. It is the one way a script runs
# a process: scratch for the work directory and the stop on exit, free_port or ports_free
# for its ports, build_chat and go_build to build once into $work, start_redis for a
# redis-server, and wait_ready for a server to answer (with its log on failure). A script
# keeps no copies of these.

# root: the repository's top directory.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# wait_ready URL [LOG]: wait up to 60 s for URL to answer 2xx, or exit the calling script,
# printing the end of LOG (the server's output, when it goes to a file) first.
wait_ready() {
	for _ in $(seq 1 300); do
		if curl -fs -o /dev/null "$1"; then
			return 0
		fi
		sleep 0.2
	done
	echo "$(basename "$0"): $1 did not answer" >&2
	if [[ -n ${2:-} ]]; then
		tail -20 "$2" >&2 || true
	fi
	exit 1
}

# go_build MODULE PKG...: builds the packages of MODULE (a directory under root: bench,
# services/geoip) into $work, once per run.
go_build() {
	local module=$1
	shift
	(cd "$root/$module" && go build -o "$work/" "$@")
}

# build_chat: sets chat_bin to $CHAT_BIN when set, else to chat built into $work (with
# -tags pprof when CHAT_PPROF is set: a replica then serves pprof on CHAT_PPROF_ADDR).
build_chat() {
	chat_bin=${CHAT_BIN:-}
	if [[ -n $chat_bin ]]; then
		return 0
	fi
	chat_bin=$work/chat
	local tags=()
	if [[ -n ${CHAT_PPROF:-} ]]; then
		tags=(-tags pprof)
	fi
	(cd "$root/services/chat" && go build "${tags[@]}" -o "$chat_bin" ./cmd/chat)
}

# start_redis NAME PORT [redis-server flags...]: a redis-server of the script's own on
# 127.0.0.1:PORT, no snapshots, its files in $work/NAME and its log in $work/NAME.log
# (the flags add to that: --appendonly yes --appendfsync always, as docker-compose.yml).
# Sets redis_pid (also appended to pids) and returns once it answers PING; else it prints
# the end of the log and exits the calling script.
start_redis() {
	local name=$1 port=$2
	shift 2
	command -v redis-server >/dev/null || {
		echo "$(basename "$0"): redis-server not found (apt-get install -y redis-server)" >&2
		exit 1
	}
	mkdir "$work/$name"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --dir "$work/$name" --logfile "$work/$name.log" "$@" &
	redis_pid=$!
	pids+=("$redis_pid")
	for _ in $(seq 1 300); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "$(basename "$0"): redis-server on port $port did not start:" >&2
	tail -20 "$work/$name.log" >&2 || true
	exit 1
}

# ports_free PORT...: exit the calling script when something already listens on one of
# them: it would answer in place of the servers the script starts.
ports_free() {
	local port
	for port in "$@"; do
		if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$(basename "$0"): port $port is in use" >&2
			exit 1
		fi
	done
}

# free_port: prints a loopback port nothing listens on now, for scripts whose caller named
# none: a fixed default fails whenever another run, or anything else, holds it. One copy
# for every script of the repository, in deploy/scripts/netfree.sh.
# shellcheck source-path=SCRIPTDIR/../.. source=deploy/scripts/netfree.sh
source "$root/deploy/scripts/netfree.sh"

# scratch: sets work (a new temporary directory) and pids (append every background process
# started); on exit, Ctrl-C included, the processes are stopped newest first (replicas
# before the Redis they use) and work is removed.
scratch() {
	work=$(mktemp -d)
	pids=()
	trap scratch_cleanup EXIT
	trap 'exit 130' INT TERM
}

scratch_cleanup() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	rm -rf "$work"
}
