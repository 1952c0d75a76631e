#!/usr/bin/env bash
# The compose end-to-end test (make compose-test): builds the images, brings the stack of
# docker-compose.yml up under its own project name, checks it through the proxy on
# localhost:$PROXY_PORT, and always takes it down again (down -v), also on failure.
#
#   0. newcomer  `make images-local` wrote .env, and compose (run with no image variables,
#                as the README does) reads the local images from it
#   1. smoke     the proxy's HTML index at / and every link on it, geoip lookup, geoip's
#                root index and its links under /geoip/, /metrics
#                not served through the proxy, /geoip/docs and /chat/docs behind the
#                prefix, a chat send and its WebSocket delivery; then no health-check
#                access line in the services' (info-level) logs
#   2. balance   --scale geoip=2: lookups reach both replicas
#   2b. keys     geoip's keys file from GEOIP_CONFIG_DIR (a folder of this test's): after the
#                scale, a key's limit holds through the proxy across both replicas (its
#                limit-th lookup answered, the next 429, RateLimit-Limit the key's), and a
#                key added by renaming a new file over the old one is served within the
#                watch interval
#   3. scale     --scale chat=2: messages sent through both replicas reach every client,
#                whose hello names its replica by the container's host name; then
#                Prometheus alone (profile prometheus) scrapes all four replicas, has
#                loaded deploy/prometheus/rules and sends to Alertmanager
#   4. failover  a chat replica is killed under six clients: its clients reconnect through
#                the proxy with since= and recover what they missed, the others see nothing
#   5. persist   Redis restarted: no acknowledged message is lost
#   6. trace     tracing on (OTEL_EXPORTER_OTLP_ENDPOINT at the checker's own OTLP sink on
#                the host, reached through the edge network's gateway): a geoip lookup
#                and a chat request with a traceparent of ours are continued, their access
#                lines carry our trace id and their exported spans are in our trace
#
# Environment:
#   COMPOSE_TEST_IMAGES  local (default): base images built from Debian packages by
#                        deploy/scripts/build-local-images.sh (make images-local), selected
#                        through .env; official: the compose file's defaults (pulled;
#                        .env is then ignored)
#   COMPOSE_TEST_PROJECT compose project name (default apistack-e2e)
#   PROXY_PORT           the proxy's port on 127.0.0.1 (default: a free one)
#   PROMETHEUS_PORT      Prometheus's port on 127.0.0.1 (default: a free one)
#   GRAFANA_PORT         Grafana's port on 127.0.0.1 (default: a free one)
#   PROXY_SUBNET         the edge network's subnet (default: the first /24 from 172.30.80.0
#                        that no Docker network holds, so a developer's own stack, which
#                        has 172.30.80.0/24, may keep running; a given one that overlaps
#                        one stops the test with the network's name)
#   COMPOSE_TEST_KEEP=1  leave the stack running after a failure, for a look
#   COMPOSE_TEST_COMPOSE the compose command (default: docker compose, else docker-compose)
#   OTLP_SINK_PORT       the checker's OTLP/HTTP sink port on the edge gateway (default: a
#                        free one)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

export COMPOSE_PROJECT_NAME=${COMPOSE_TEST_PROJECT:-apistack-e2e}
log() { printf '\n==> [%3ds] %s\n' "$SECONDS" "$*"; }
die() { printf 'compose-test: %s\n' "$*" >&2; exit 1; }

# No fixed port or subnet: a developer's own stack (8080, 172.30.80.0/24) or another
# test may hold them.
# shellcheck source-path=SCRIPTDIR/../.. source=deploy/scripts/netfree.sh
. "$repo/deploy/scripts/netfree.sh"
export PROXY_BIND=127.0.0.1
export PROXY_PORT=${PROXY_PORT:-$(free_port)} PROMETHEUS_PORT=${PROMETHEUS_PORT:-$(free_port)}
export GRAFANA_PORT=${GRAFANA_PORT:-$(free_port)}
# The checks send more requests from one address than the default limit allows.
export RATE_LIMIT_MAX=${RATE_LIMIT_MAX:-100000}
export RATE_LIMIT_WINDOW=${RATE_LIMIT_WINDOW:-1m}
export CHAT_ADMIN_TOKEN=${CHAT_ADMIN_TOKEN:-e2e-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}
# Production refuses the compose file's placeholder JWT secret, as it does the admin token's.
export CHAT_JWT_SECRET=${CHAT_JWT_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
export NODE_ENV=${NODE_ENV:-production}
export GEOIP_IMAGE=${GEOIP_IMAGE:-apistack/geoip:e2e} CHAT_IMAGE=${CHAT_IMAGE:-apistack/chat:e2e}
export ALERTMANAGER_PORT=${ALERTMANAGER_PORT:-19093}

# docker compose v2 when the plugin is there, else Debian's docker-compose 1.29 (or the
# command in COMPOSE_TEST_COMPOSE).
if [ -n "${COMPOSE_TEST_COMPOSE:-}" ]; then
	read -ra compose_cmd <<<"$COMPOSE_TEST_COMPOSE"
elif docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
else
	compose_cmd=(docker-compose)
fi
compose_args=(-f "$repo/docker-compose.yml")
compose() { "${compose_cmd[@]}" "${compose_args[@]}" "$@"; }

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
__logs) # SERVICE...: for the trace check, which runs outside this shell
	compose logs --no-color "${@:2}"
	exit 0
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
PROXY_SUBNET=$(free_subnet "${PROXY_SUBNET:-}") || die "no subnet for the edge network (above)"
export PROXY_SUBNET
log "edge network $PROXY_SUBNET; proxy on 127.0.0.1:$PROXY_PORT, Prometheus on :$PROMETHEUS_PORT"
log "compose: ${compose_cmd[*]} ($("${compose_cmd[@]}" version --short 2>/dev/null || echo '?')), project $COMPOSE_PROJECT_NAME"

workdir=$(mktemp -d)
# geoip's files (docker-compose.yml mounts GEOIP_CONFIG_DIR): one key with a small limit,
# readable by the container's nonroot user.
key_limit=7
key_a=k-e2e-a-$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n')
key_b=k-e2e-b-$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n')
export GEOIP_CONFIG_DIR=$workdir/geoip
mkdir -p "$GEOIP_CONFIG_DIR"
printf '{"keys": [{"key": "%s", "name": "e2e-a", "limit": %d, "window": "1h"}]}\n' "$key_a" "$key_limit" >"$GEOIP_CONFIG_DIR/keys.json"
printf '[]\n' >"$GEOIP_CONFIG_DIR/overrides.json"
chmod 755 "$workdir" "$GEOIP_CONFIG_DIR"
chmod 644 "$GEOIP_CONFIG_DIR"/*.json
case "${COMPOSE_TEST_IMAGES:-local}" in
local)
	log "0. local base images (make images-local), selected through .env"
	"$repo/deploy/scripts/build-local-images.sh"
	# The README's path: no image variable anywhere but .env. Every image compose resolves
	# must be the local one.
	(
		unset GO_IMAGE RUNTIME_IMAGE REDIS_IMAGE CADDY_IMAGE PROMETHEUS_IMAGE ALERTMANAGER_IMAGE POSTGRES_IMAGE
		compose --profile prometheus config
	) >"$workdir/config.yml"
	while IFS='=' read -r name value; do
		grep -qE "^ *(image: |$name: )$value\$" "$workdir/config.yml" ||
			die ".env from make images-local does not select $name=$value: compose resolves $(grep -E 'image:|_IMAGE:' "$workdir/config.yml" | tr -s ' ' | tr '\n' ';')"
	done < <(grep -E '^[A-Z_]+_IMAGE=' "$repo/deploy/local-images.env")
	echo "     compose reads the local images from .env"
	;;
official)
	# The compose file's defaults, whatever .env says.
	: >"$workdir/empty.env"
	compose_args+=(--env-file "$workdir/empty.env")
	;;
*) die "COMPOSE_TEST_IMAGES must be local or official" ;;
esac

log "building the e2e checker"
(cd "$repo/deploy/scripts/e2e" && GOWORK=off go build -o "$workdir/e2e" .)
e2e() { "$workdir/e2e" -base "http://127.0.0.1:$PROXY_PORT" "$@" | tee -a "$workdir/e2e.log"; }

# A stack left over by an interrupted run would hold the port and the volume.
compose --profile monitoring down -v --remove-orphans >/dev/null 2>&1 || true

# Both services from the root Dockerfile: the second build finds the shared Go stages in
# Docker's layer cache.
log "building the service images"
build_start=$SECONDS
compose build geoip chat
echo "     built in $((SECONDS - build_start))s"

log "up"
compose up -d --no-build
wait_healthy redis 1
wait_healthy postgres 1
wait_healthy geoip 1
wait_healthy chat 1
wait_proxy

log "1. smoke"
e2e smoke

log "1b. health checks are not in the info log"
# The services log every request at info (JSON in production) except the health checks,
# which Docker runs every 5 s per replica: by now each replica has answered several.
sleep 6
logs=$(compose logs --no-color geoip chat)
if grep -qE '"path":"/(healthz|readyz)"' <<<"$logs"; then
	die "health checks logged at info: $(grep -E '"path":"/(healthz|readyz)"' <<<"$logs" | head -n 3)"
fi
grep -qF '"path":"/8.8.8.8/json/"' <<<"$logs" || die "no access line for the smoke lookup: are access logs on at all?"
echo "ok   no /healthz or /readyz access line; the smoke lookup's is there"

log "2. --scale geoip=2"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=1
wait_healthy geoip 2
e2e balance

log "2b. a key's limit through the proxy across both geoip replicas"
# lookup KEY prints the status code and the RateLimit-Limit header of one keyed lookup.
lookup() {
	curl -sS -o /dev/null -D - "http://127.0.0.1:$PROXY_PORT/geoip/8.8.8.8/country/?key=$1" |
		tr -d '\r' | awk 'NR==1 {code=$2} tolower($1)=="ratelimit-limit:" {limit=$2} END {print code, limit}'
}
for i in $(seq 1 "$key_limit"); do
	got=$(lookup "$key_a")
	[ "$got" = "200 $key_limit" ] || die "keyed lookup $i of $key_limit: want 200 with RateLimit-Limit $key_limit, got '$got'"
done
got=$(lookup "$key_a")
[ "${got%% *}" = 429 ] || die "keyed lookup $((key_limit + 1)): want 429 (the key's limit, counted in Redis across replicas), got '$got'"
echo "ok   key e2e-a: $key_limit lookups answered, the next 429, across $(service_containers geoip | wc -l) replicas"
got=$(lookup "$key_b")
[ "${got%% *}" = 403 ] || die "a key not in the file yet: want 403, got '$got'"
# An edit the way the README says: write elsewhere, rename over the old file.
printf '{"keys": [{"key": "%s", "name": "e2e-a", "limit": %d, "window": "1h"}, {"key": "%s", "name": "e2e-b", "limit": 1000, "window": "1h"}]}\n' \
	"$key_a" "$key_limit" "$key_b" >"$GEOIP_CONFIG_DIR/keys.json.new"
chmod 644 "$GEOIP_CONFIG_DIR/keys.json.new"
mv "$GEOIP_CONFIG_DIR/keys.json.new" "$GEOIP_CONFIG_DIR/keys.json"
deadline=$((SECONDS + 60))
# Both replicas must have reloaded: several lookups in a row, spread by the proxy.
until [ "$(for _ in 1 2 3 4 5 6; do lookup "$key_b"; done | sort -u)" = "200 1000" ]; do
	[ "$SECONDS" -lt "$deadline" ] || die "key e2e-b not served 60 s after the keys file was replaced: $(lookup "$key_b")"
	sleep 2
done
echo "ok   key e2e-b served by every replica after the file was renamed over"

log "3. --scale chat=2"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=2
wait_healthy chat 2
chat_hosts=$(for id in $(service_containers chat); do docker inspect -f '{{.Config.Hostname}}' "$id"; done | paste -sd, -)
e2e -chat-hosts "$chat_hosts" scale

log "3b. profile prometheus (no Grafana image needed): Prometheus scrapes every replica"
compose --profile prometheus up -d --no-build --no-recreate --scale geoip=2 --scale chat=2
e2e -prometheus "http://127.0.0.1:$PROMETHEUS_PORT" -want geoip=2,chat=2 monitoring
# The rules are loaded (every group of deploy/prometheus/rules) and Alertmanager is found.
want_groups=$(cat deploy/prometheus/rules/slo.yml deploy/prometheus/rules/alerts.yml | grep -cE '^  - name: ')
deadline=$((SECONDS + 60))
until [ "$(curl -fsS "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/rules" | grep -o '"file":' | wc -l)" -ge "$want_groups" ] &&
	curl -fsS "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/alertmanagers" | grep -q '"activeAlertmanagers":\[{'; do
	[ "$SECONDS" -lt "$deadline" ] || die "Prometheus: want $want_groups rule groups and an active Alertmanager; rules: $(curl -fsS "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/rules" | head -c 300)"
	sleep 2
done
curl -fsS "http://127.0.0.1:$ALERTMANAGER_PORT/-/ready" >/dev/null || die "Alertmanager not ready on 127.0.0.1:$ALERTMANAGER_PORT"
echo "ok   Prometheus loaded $want_groups rule groups and sends to Alertmanager, which is ready"

log "4. a chat replica killed"
e2e -disrupt "\"$repo/deploy/scripts/compose-test.sh\" __kill-upstream chat" failover

log "5. Redis restarted"
compose up -d --no-build --no-recreate --scale geoip=2 --scale chat=2
wait_healthy chat 2
e2e -disrupt "\"$repo/deploy/scripts/compose-test.sh\" __restart redis" persist

log "6. traceparent continued (tracing on, spans to the checker's OTLP sink)"
# Tracing is off without an exporter, and then no trace id is logged: the services are
# recreated with one, the checker's sink on the host, which they reach at the gateway of
# the network they share with the proxy.
sink_port=${OTLP_SINK_PORT:-$(free_port)}
gateway=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' "${COMPOSE_PROJECT_NAME}_edge")
if [ -z "$gateway" ]; then
	subnet=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' "${COMPOSE_PROJECT_NAME}_edge")
	gateway=${subnet%.*}.1
fi
OTEL_EXPORTER_OTLP_ENDPOINT=http://$gateway:$sink_port compose up -d --no-build --scale geoip=1 --scale chat=1 geoip chat
wait_healthy geoip 1
wait_healthy chat 1
e2e -otlp-listen "$gateway:$sink_port" -logs "\"$repo/deploy/scripts/compose-test.sh\" __logs" trace

status=0
log "compose test passed in ${SECONDS}s"
