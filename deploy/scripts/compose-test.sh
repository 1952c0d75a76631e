#!/usr/bin/env bash
# The compose end-to-end test (make compose-test): builds the images, brings the stack of
# docker-compose.yml up under its own project name, checks it through the proxy on
# localhost:$PROXY_PORT, and always takes it down again (down -v), also on failure.
#
#   1. smoke     geoip lookup, /geoip/docs and /chat/docs behind the prefix, a chat send
#                and its WebSocket delivery
#   2. balance   --scale geoip=2: lookups reach both replicas
#   3. scale     --scale chat=2: messages sent through both replicas reach every client;
#                then Prometheus (profile monitoring) finds all four replicas through DNS
#   4. failover  a chat replica is killed under six clients: its clients reconnect through
#                the proxy with since= and recover what they missed, the others see nothing
#   5. persist   Redis restarted: no acknowledged message is lost
#
# Environment:
#   COMPOSE_TEST_IMAGES  local (default): base images built from Debian packages
#                        (deploy/scripts/build-local-images.sh), for machines without a
#                        registry; official: the compose file's defaults (pulled)
#   COMPOSE_TEST_PROJECT compose project name (default apistack-e2e)
#   PROXY_PORT           the proxy's port on 127.0.0.1 (default 8080)
#   PROMETHEUS_PORT      Prometheus's port on 127.0.0.1 (default 19090)
#   COMPOSE_TEST_KEEP=1  leave the stack running after a failure, for a look
#   COMPOSE_TEST_GOCACHE=0  build each image from a cold Go cache (see below)
#   COMPOSE_TEST_COMPOSE the compose command (default: docker compose, else docker-compose)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

export COMPOSE_PROJECT_NAME=${COMPOSE_TEST_PROJECT:-apistack-e2e}
export PROXY_PORT=${PROXY_PORT:-8080}
export PROXY_BIND=127.0.0.1
export PROMETHEUS_PORT=${PROMETHEUS_PORT:-19090} GRAFANA_PORT=${GRAFANA_PORT:-13030}
# The checks send more requests from one address than the default limit allows.
export RATE_LIMIT_MAX=${RATE_LIMIT_MAX:-100000}
export RATE_LIMIT_WINDOW=${RATE_LIMIT_WINDOW:-1m}
export CHAT_ADMIN_TOKEN=${CHAT_ADMIN_TOKEN:-e2e-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}
export NODE_ENV=${NODE_ENV:-production}
export GEOIP_IMAGE=${GEOIP_IMAGE:-apistack/geoip:e2e} CHAT_IMAGE=${CHAT_IMAGE:-apistack/chat:e2e}

# docker compose v2 when the plugin is there, else Debian's docker-compose 1.29 (or the
# command in COMPOSE_TEST_COMPOSE).
if [ -n "${COMPOSE_TEST_COMPOSE:-}" ]; then
	read -ra compose_cmd <<<"$COMPOSE_TEST_COMPOSE"
elif docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
else
	compose_cmd=(docker-compose)
fi
compose() { "${compose_cmd[@]}" -f "$repo/docker-compose.yml" "$@"; }

log() { printf '\n==> [%3ds] %s\n' "$SECONDS" "$*"; }
die() { printf 'compose-test: %s\n' "$*" >&2; exit 1; }

# service_containers SERVICE lists the running containers of one service of this project.
service_containers() {
	docker ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
		--filter "label=com.docker.compose.service=$1"
}

# Internal subcommands, run by the e2e checker at a scenario's fault point.
case "${1:-}" in
__kill-upstream) # SERVICE: kill the replica whose address is $UPSTREAM (host:port)
	ip=${UPSTREAM%:*}
	for id in $(service_containers "$2"); do
		if docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$id" | tr ' ' '\n' | grep -qxF "$ip"; then
			echo "     docker kill $(docker inspect -f '{{.Name}}' "$id") ($ip)"
			docker kill "$id" >/dev/null
			exit 0
		fi
	done
	die "no $2 container has address $ip"
	;;
__restart) # SERVICE
	echo "     restart $2"
	compose restart "$2"
	exit 0
	;;
"") ;;
*) die "unknown argument $1" ;;
esac

# wait_healthy SERVICE COUNT: until COUNT containers of SERVICE report healthy.
wait_healthy() {
	local svc=$1 want=$2 deadline=$((SECONDS + 180)) healthy id
	while :; do
		healthy=0
		for id in $(service_containers "$svc"); do
			if [ "$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$id")" = healthy ]; then
				healthy=$((healthy + 1))
			fi
		done
		[ "$healthy" -ge "$want" ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || die "$svc: $healthy of $want containers healthy after 180s"
		sleep 1
	done
}

wait_proxy() {
	local deadline=$((SECONDS + 60))
	until curl -fsS -o /dev/null "http://127.0.0.1:$PROXY_PORT/"; do
		[ "$SECONDS" -lt "$deadline" ] || die "the proxy did not answer on 127.0.0.1:$PROXY_PORT"
		sleep 1
	done
}

status=1
cleanup() {
	if [ "$status" != 0 ]; then
		log "FAILED: state and logs"
		compose ps || true
		compose logs --no-color --tail=80 || true
		if [ "${COMPOSE_TEST_KEEP:-0}" = 1 ]; then
			echo "COMPOSE_TEST_KEEP=1: stack left running; take it down with:"
			echo "  COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME ${compose_cmd[*]} --profile monitoring down -v"
			summary
			return
		fi
	fi
	log "down -v"
	compose --profile monitoring down -v --remove-orphans >/dev/null 2>&1 ||
		compose --profile monitoring down -v --remove-orphans || true
	summary
	rm -rf "${workdir:-}"
}

# summary closes the output with one line for the whole test: the checks' counts, and a
# failure for a step outside the checks (a build, a health wait) that stopped the test.
summary() {
	local passed=0 failed=0
	if [ -f "${workdir:-}/e2e.log" ]; then
		read -r passed failed < <(sed -nE 's/^e2e [a-z]+: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$workdir/e2e.log" |
			awk '{p += $1; f += $2} END {print p + 0, f + 0}')
	fi
	if [ "$status" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
	printf 'compose-test: %d passed, %d failed\n' "$passed" "$failed"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "no Docker engine reachable"
command -v curl >/dev/null || die "curl is not installed"
log "compose: ${compose_cmd[*]} ($("${compose_cmd[@]}" version --short 2>/dev/null || echo '?')), project $COMPOSE_PROJECT_NAME"

case "${COMPOSE_TEST_IMAGES:-local}" in
local)
	log "local base images"
	"$repo/deploy/scripts/build-local-images.sh"
	set -a
	# shellcheck source=deploy/local-images.env
	. "$repo/deploy/local-images.env"
	set +a
	;;
official) ;;
*) die "COMPOSE_TEST_IMAGES must be local or official" ;;
esac

workdir=$(mktemp -d)
log "building the e2e checker"
(cd "$repo/deploy/scripts/e2e" && GOWORK=off go build -o "$workdir/e2e" .)
e2e() { "$workdir/e2e" -base "http://127.0.0.1:$PROXY_PORT" "$@" | tee -a "$workdir/e2e.log"; }

# A stack left over by an interrupted run would hold the port and the volume.
compose --profile monitoring down -v --remove-orphans >/dev/null 2>&1 || true

# Both images compile mostly the same packages (the standard library, gin, go-redis...).
# Compiling them once into a builder image's Go cache and building both services on it
# (as GO_IMAGE) roughly halves the time; the service Dockerfiles run unchanged.
if [ "${COMPOSE_TEST_GOCACHE:-1}" = 1 ]; then
	log "warming the Go build cache (deploy/docker/gocache.Dockerfile)"
	docker build -q -f deploy/docker/gocache.Dockerfile \
		--build-arg GO_IMAGE="${GO_IMAGE:-golang:1.26-bookworm}" -t "apistack/gocache:$COMPOSE_PROJECT_NAME" . >/dev/null
	export GO_IMAGE="apistack/gocache:$COMPOSE_PROJECT_NAME"
fi

log "building the service images (GO_IMAGE=${GO_IMAGE:-default} RUNTIME_IMAGE=${RUNTIME_IMAGE:-default})"
compose build geoip chat

log "up"
compose up -d --no-build
wait_healthy redis 1
wait_healthy geoip 1
wait_healthy chat 1
wait_proxy

log "1. smoke"
e2e smoke

log "2. --scale geoip=2"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=1
wait_healthy geoip 2
e2e balance

log "3. --scale chat=2"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=2
wait_healthy chat 2
e2e scale

log "3b. monitoring profile: Prometheus finds every replica through DNS"
compose --profile monitoring up -d --no-build --no-recreate prometheus
e2e -prometheus "http://127.0.0.1:$PROMETHEUS_PORT" -want geoip=2,chat=2 monitoring

log "4. a chat replica killed"
e2e -disrupt "\"$repo/deploy/scripts/compose-test.sh\" __kill-upstream chat" failover

log "5. Redis restarted"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=2
wait_healthy chat 2
e2e -disrupt "\"$repo/deploy/scripts/compose-test.sh\" __restart redis" persist

status=0
log "compose test passed in ${SECONDS}s"
