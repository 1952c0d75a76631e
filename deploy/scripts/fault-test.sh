#!/usr/bin/env bash
# The fault test across containers (make fault-test): chat replicas from the project's own
# image and Redis from the local image run with `docker run` on two private networks made
# for this run, and the Go driver in deploy/scripts/faults puts them under send load
# (HTTP sends retried with the same Idempotency-Key) and live load (WebSocket subscribers
# that reconnect with since=) while one fault at a time is injected:
#
#   pause     Redis paused (docker pause) for 10 s
#   cut       one chat replica cut off Redis (docker network disconnect) for 20 s; the
#             driver still reaches it on the other network
#   restart   Redis restarted (docker restart; append-only file, fsync always)
#   kill      a chat replica killed (docker kill), started again 5 s later
#   failover  on a Redis Cluster of 3 primaries with one replica each, the primary of one of
#             the test's channels killed until its replica is promoted, then started again
#
# For each one the driver checks: no acknowledged send lost, no text stored twice, every
# subscriber got its channel's log once and in order, and every replica acknowledges sends
# again; it prints the figures, and the script ends with them as a Markdown table
# (docs/faults.md). Every fault runs even when an earlier one failed (unless
# FAULT_TEST_KEEP=1); the exit status is 1 if any did.
#
# Networks: "front" (the chat replicas, each port published on 127.0.0.1 for the driver)
# and "back" (internal: Redis and the chat replicas). Names carry a random run id, and
# everything made is labelled with it and removed at the end, also on failure or Ctrl-C.
# Nothing is pulled: the images must exist (make images-local writes their names to .env).
#
# Environment:
#   FAULT_TEST_FAULTS   the faults to run, in order (default: pause cut restart kill failover)
#   FAULT_TEST_REPORT   also write the Markdown table to this file
#   FAULT_TEST_KEEP=1   stop at the first failure and leave its containers running, for a look
#   FAULT_TEST_BUILD=0  use $CHAT_IMAGE as it is instead of building it
#   CHAT_IMAGE          the chat image to build and run (default apistack/chat:e2e, as the
#                       compose test: its build is then a cache hit)
#   FAULT_TEST_COMPOSE  the compose command that builds it (default: docker compose, else
#                       docker-compose)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
self="$repo/deploy/scripts/fault-test.sh"

log() { printf '\n==> [%3ds] %s\n' "$SECONDS" "$*"; }
die() { printf 'fault-test: %s\n' "$*" >&2; exit 1; }

# --- Subcommands the driver runs as a fault's -inject/-heal (state in $FT_*). ---------

# cluster_cli NODE ARGS: redis-cli against cluster node NODE (rc1..rc6) from a running node.
cluster_cli() {
	local target=$1 via
	shift
	for via in $FT_CLUSTER_NODES; do
		[ "$via" = "$(cat "$FT_STATE/killed" 2>/dev/null)" ] && continue
		if docker exec "$FT_PREFIX-$via" redis-cli -h "$target" "$@" 2>/dev/null; then return 0; fi
	done
	return 1
}

# slot_owner SLOT [EXCEPT]: the primary (rcN) serving SLOT, as a live node other than
# EXCEPT sees it; nothing while the slot has no healthy primary.
slot_owner() {
	local slot=$1 except=${2:-} node
	for node in $FT_CLUSTER_NODES; do
		[ "$node" = "$except" ] && continue
		cluster_cli "$node" cluster nodes | awk -v slot="$slot" '
			$3 ~ /master/ && $3 !~ /fail/ {
				for (i = 9; i <= NF; i++) {
					n = split($i, r, "-"); lo = r[1]; hi = (n > 1 ? r[2] : r[1])
					if (slot >= lo && slot <= hi) { split($2, a, ","); print a[2]; exit }
				}
			}' && return 0
	done
}

case "${1:-}" in
__cluster-kill) # kill the primary that serves the first of $FAULT_CHANNELS
	channel=${FAULT_CHANNELS%% *}
	slot=$(cluster_cli rc1 cluster keyslot "chat:{ch:$channel}:log" || cluster_cli rc2 cluster keyslot "chat:{ch:$channel}:log")
	primary=$(slot_owner "$slot")
	[ -n "$primary" ] || die "no primary serves slot $slot of channel $channel"
	echo "$primary" >"$FT_STATE/killed"
	echo "$slot" >"$FT_STATE/slot"
	echo "     channel $channel: slot $slot on primary $primary: docker kill $FT_PREFIX-$primary"
	docker kill "$FT_PREFIX-$primary" >/dev/null
	exit 0
	;;
__cluster-heal) # wait until a replica serves the killed primary's slots, then start it again
	killed=$(cat "$FT_STATE/killed") slot=$(cat "$FT_STATE/slot")
	deadline=$((SECONDS + 60))
	while :; do
		owner=$(slot_owner "$slot" "$killed")
		if [ -n "$owner" ] && [ "$owner" != "$killed" ]; then break; fi
		[ "$SECONDS" -lt "$deadline" ] || die "slot $slot: no replica promoted within 60s"
		sleep 0.2
	done
	echo "     slot $slot now on $owner (promoted after ${SECONDS}s); docker start $FT_PREFIX-$killed"
	rm -f "$FT_STATE/killed"
	docker start "$FT_PREFIX-$killed" >/dev/null
	exit 0
	;;
"") ;;
*) die "unknown argument $1" ;;
esac

# --- Setup. ---------------------------------------------------------------------------

cd "$repo"
command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "no Docker engine reachable"
command -v curl >/dev/null || die "curl is not installed"

run=ft$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
export FT_PREFIX=apistack-$run
label=apistack.fault-test=$run
front=$FT_PREFIX-front back=$FT_PREFIX-back
CHAT_ADMIN_TOKEN=faults-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
export CHAT_ADMIN_TOKEN
export CHAT_IMAGE=${CHAT_IMAGE:-apistack/chat:e2e}
workdir=$(mktemp -d)
export FT_STATE=$workdir
export FT_CLUSTER_NODES="rc1 rc2 rc3 rc4 rc5 rc6"
report=$workdir/report.jsonl
faults=${FAULT_TEST_FAULTS:-pause cut restart kill failover}

# The base images, as compose reads them: .env (make images-local), else the defaults,
# which this test never pulls.
env_image() {
	local name=$1 default=$2 v=${!1:-}
	if [ -z "$v" ] && [ -f "$repo/.env" ]; then
		v=$(sed -nE "s/^$name=(.*)$/\1/p" "$repo/.env" | tail -n 1)
	fi
	echo "${v:-$default}"
}
REDIS_IMAGE=$(env_image REDIS_IMAGE redis:7-bookworm)

# dump_logs prints the state of this run's containers and the chat replicas' last log
# lines, leaving out the access lines (one per request), which would bury what went wrong.
dump_logs() {
	docker ps -a --filter "label=$label" --format '{{.Names}}\t{{.Status}}' || true
	for id in $(docker ps -aq --filter "label=$label" --filter "label=apistack.role=chat"); do
		echo "--- $(docker inspect -f '{{.Name}}' "$id"): the last 30 lines that are not access lines"
		docker logs "$id" 2>&1 | grep -vF '"msg":"request"' | tail -n 30 || true
	done
}

status=1
failed=()
cleanup() {
	local ids=()
	if [ "$status" != 0 ]; then
		# A failed fault printed its containers' logs when it failed; a failed setup step
		# did not.
		if [ ${#failed[@]} = 0 ]; then
			log "FAILED: container state and logs"
			dump_logs
		fi
		if [ "${FAULT_TEST_KEEP:-0}" = 1 ]; then
			echo "FAULT_TEST_KEEP=1: containers left running; remove them with:"
			echo "  docker rm -fv \$(docker ps -aq --filter label=$label); docker network rm $front $back"
			return
		fi
	fi
	log "removing the containers and networks of run $run"
	mapfile -t ids < <(docker ps -aq --filter "label=$label")
	[ ${#ids[@]} = 0 ] || docker rm -fv "${ids[@]}" >/dev/null || true
	docker network rm "$front" "$back" >/dev/null 2>&1 || true
	rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

docker image inspect "$REDIS_IMAGE" >/dev/null 2>&1 ||
	die "image $REDIS_IMAGE is not here and this test pulls nothing: run make images-local"

if [ "${FAULT_TEST_BUILD:-1}" != 0 ]; then
	log "building $CHAT_IMAGE (a cache hit after make compose-test)"
	if [ -n "${FAULT_TEST_COMPOSE:-}" ]; then
		read -ra compose_cmd <<<"$FAULT_TEST_COMPOSE"
	elif docker compose version >/dev/null 2>&1; then
		compose_cmd=(docker compose)
	else
		compose_cmd=(docker-compose)
	fi
	build_start=$SECONDS
	"${compose_cmd[@]}" -f "$repo/docker-compose.yml" -p "$FT_PREFIX" build chat
	echo "     built in $((SECONDS - build_start))s"
fi
docker image inspect "$CHAT_IMAGE" >/dev/null 2>&1 || die "image $CHAT_IMAGE is not here"

log "building the driver"
(cd "$repo/deploy/scripts/faults" && GOWORK=off go build -o "$workdir/faults" .)

log "networks $front and $back (internal)"
docker network create --label "$label" "$front" >/dev/null
docker network create --label "$label" --internal "$back" >/dev/null

# Each replica's published port is picked free once (fixed from then on, so a killed
# replica comes back on the same one).
# shellcheck source-path=SCRIPTDIR/../.. source=deploy/scripts/netfree.sh
. "$repo/deploy/scripts/netfree.sh"
ports=("$(free_port)" "$(free_port)")
[ "${ports[0]}" != "${ports[1]}" ] || ports[1]=$(free_port)
replicas="http://127.0.0.1:${ports[0]},http://127.0.0.1:${ports[1]}"

# start_chat NAME PORT REDIS_URL: a chat replica on both networks, as in the compose file
# (read-only, no capabilities), with limits raised for the load of one client address.
start_chat() {
	local name=$FT_PREFIX-$1
	docker create --pull never --name "$name" --hostname "$1" --label "$label" --label apistack.role=chat \
		--network "$front" -p "127.0.0.1:$2:3000" \
		--read-only --cap-drop ALL --security-opt no-new-privileges:true \
		-e NODE_ENV=production -e HOST=0.0.0.0 -e PORT=3000 -e LOG_LEVEL=info \
		-e REDIS_URL="$3" -e CHAT_ADMIN_TOKEN \
		-e RATE_LIMIT_MAX=1000000 -e RATE_LIMIT_WINDOW=1m -e CHAT_SEND_LIMIT=50/1s \
		"$CHAT_IMAGE" >/dev/null
	docker network connect "$back" "$name"
	docker start "$name" >/dev/null
}

wait_ready() {
	local port deadline=$((SECONDS + 90))
	for port in "${ports[@]}"; do
		until curl -fs -o /dev/null "http://127.0.0.1:$port/readyz"; do
			[ "$SECONDS" -lt "$deadline" ] || die "the chat replica on port $port is not ready after 90s"
			sleep 0.5
		done
	done
}

# fault NAME DRIVER-ARGS...: one run of the driver; a failure is recorded, not fatal.
fault() {
	local name=$1
	shift
	log "fault $name"
	if "$workdir/faults" run -name "$name" -replicas "$replicas" -report "$report" "$@"; then
		return 0
	fi
	failed+=("$name")
	log "fault $name FAILED: container state and logs"
	dump_logs
	if [ "${FAULT_TEST_KEEP:-0}" = 1 ]; then
		die "fault $name failed; FAULT_TEST_KEEP=1: stopping here, with its containers up"
	fi
}

wants() { [[ " $faults " == *" $1 "* ]]; }

redis=$FT_PREFIX-redis
if wants pause || wants cut || wants restart || wants kill; then
	log "Redis ($REDIS_IMAGE, append-only file, fsync always) and two chat replicas"
	docker run -d --pull never --name "$redis" --label "$label" --network "$back" --network-alias redis \
		"$REDIS_IMAGE" redis-server --appendonly yes --appendfsync always --protected-mode no --dir /data >/dev/null
	start_chat chat1 "${ports[0]}" redis://redis:6379/0
	start_chat chat2 "${ports[1]}" redis://redis:6379/0
	wait_ready
	echo "     replicas on $replicas"

	wants pause && fault pause -describe "docker pause redis; sleep 10; docker unpause redis" \
		-inject "docker pause $redis" -hold 10s -heal "docker unpause $redis"
	wants cut && fault cut -describe "docker network disconnect back chat2; sleep 20; docker network connect back chat2" \
		-inject "docker network disconnect $back $FT_PREFIX-chat2" -hold 20s \
		-heal "docker network connect $back $FT_PREFIX-chat2"
	wants restart && fault restart -describe "docker restart redis" -inject "docker restart $redis"
	wants kill && fault kill -describe "docker kill chat1; sleep 5; docker start chat1" \
		-inject "docker kill $FT_PREFIX-chat1" -hold 5s -heal "docker start $FT_PREFIX-chat1"

	docker rm -fv "$FT_PREFIX-chat1" "$FT_PREFIX-chat2" "$redis" >/dev/null
fi

if wants failover; then
	log "Redis Cluster: 3 primaries, 1 replica each (node timeout 3 s); two chat replicas on it"
	# Started together: each docker run takes seconds here.
	pids=()
	for node in $FT_CLUSTER_NODES; do
		docker run -d --pull never --name "$FT_PREFIX-$node" --label "$label" --network "$back" --network-alias "$node" \
			"$REDIS_IMAGE" redis-server --cluster-enabled yes --cluster-node-timeout 3000 \
			--cluster-announce-hostname "$node" --cluster-preferred-endpoint-type hostname \
			--appendonly yes --appendfsync always --protected-mode no --dir /data >/dev/null &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || die "a cluster node did not start"; done
	addrs=()
	for node in $FT_CLUSTER_NODES; do
		until docker exec "$FT_PREFIX-$node" redis-cli ping >/dev/null 2>&1; do sleep 0.2; done
		addrs+=("$(docker inspect -f "{{(index .NetworkSettings.Networks \"$back\").IPAddress}}" "$FT_PREFIX-$node"):6379")
	done
	docker exec "$FT_PREFIX-rc1" redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$workdir/cluster.log" 2>&1 ||
		{ cat "$workdir/cluster.log"; die "redis-cli --cluster create failed"; }
	deadline=$((SECONDS + 60))
	for node in $FT_CLUSTER_NODES; do
		until docker exec "$FT_PREFIX-$node" redis-cli cluster info 2>/dev/null | grep -q '^cluster_state:ok'; do
			[ "$SECONDS" -lt "$deadline" ] || die "cluster node $node not ok after 60s"
			sleep 0.5
		done
	done
	docker exec "$FT_PREFIX-rc1" redis-cli cluster nodes | awk '{split($2, a, ","); print "     " a[2], $3, $9}'
	cluster_url="redis+cluster://rc1:6379?addr=rc2:6379&addr=rc3:6379"
	start_chat cchat1 "${ports[0]}" "$cluster_url"
	start_chat cchat2 "${ports[1]}" "$cluster_url"
	wait_ready

	fault failover -describe "docker kill (the primary of a test channel); wait for its replica's promotion; docker start it" \
		-inject "\"$self\" __cluster-kill" -heal "\"$self\" __cluster-heal" -recover-timeout 90s
fi

log "results"
"$workdir/faults" table "$report" | tee "${FAULT_TEST_REPORT:-/dev/null}"
if [ ${#failed[@]} -gt 0 ]; then
	die "failed: ${failed[*]} (each one's output above says what)"
fi
status=0
log "fault test passed in ${SECONDS}s"
