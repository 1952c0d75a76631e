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
