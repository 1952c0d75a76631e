# shellcheck shell=bash
# Shared by the bench scripts: source it, do not run it.

# wait_ready URL: wait up to 60 s for URL to answer 2xx, or exit the calling script.
wait_ready() {
	for _ in $(seq 1 300); do
		if curl -fs -o /dev/null "$1"; then
			return 0
		fi
		sleep 0.2
	done
	echo "$(basename "$0"): $1 did not answer" >&2
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

# free_port: prints a loopback port nothing listens on now (20000-59999), for scripts whose
# caller named none: a fixed default fails whenever another run, or anything else, holds it.
free_port() {
	local port
	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 40000))
		if ! (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "$(basename "$0"): no free loopback port found" >&2
	exit 1
}

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
