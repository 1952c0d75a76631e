#!/usr/bin/env bash
# make images-local: builds, without any image registry, the base images that
# docker-compose.yml can be switched to, and switches it. Every file comes from Debian's
# packages or from this machine's Go toolchain.
#
#   local/golang:1.26      Debian bookworm + the host's Go toolchain (GOROOT) and local CAs, like golang:1.26-bookworm
#   local/static:bookworm  distroless/static-like: CA certificates, tzdata, passwd with nonroot (65532), /tmp
#   local/redis:7          Debian bookworm + redis-server
#   local/caddy:2          Debian bookworm + caddy
#   local/prometheus:2     Debian bookworm + prometheus (profile "prometheus"; Grafana is not in Debian)
#   local/alertmanager:0.25 Debian bookworm + prometheus-alertmanager (profiles "prometheus", "monitoring")
#   local/postgres:15      Debian bookworm + postgresql (15), initialised from POSTGRES_* as the official image is
#
# Then it writes those names (deploy/local-images.env) into .env at the repository root,
# which docker compose v2 and docker-compose 1.29 both read by themselves: every later
# compose command uses the local images with no flag. Other lines of an existing .env are
# kept. ENV_FILE names another file; ENV_FILE= (empty) writes none.
#
# Needs root for debootstrap and chroot: run as root, or it re-runs itself under sudo.
# Installs debootstrap with apt-get when it is missing. A minimal bookworm root filesystem
# is debootstrapped once into $APISTACK_IMAGE_CACHE and reused; images that already exist
# are kept (FORCE=1 rebuilds them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${APISTACK_IMAGE_CACHE:-/var/cache/apistack-images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
force=${FORCE:-0}
goroot=${GOROOT_HOST:-$(go env GOROOT 2>/dev/null || echo /usr/local/go)}

# shellcheck source=deploy/local-images.env
. "$repo/deploy/local-images.env"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'build-local-images: %s\n' "$*" >&2; exit 1; }

env_file=${ENV_FILE-$repo/.env}

command -v docker >/dev/null || die "docker is not installed"
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || die "debootstrap and chroot need root: run this as root (there is no sudo here)"
	log "debootstrap and chroot need root: running under sudo"
	exec sudo env GOROOT_HOST="$goroot" APISTACK_IMAGE_CACHE="$cache" DEBIAN_MIRROR="$mirror" \
		DEBIAN_SECURITY_MIRROR="$security_mirror" FORCE="$force" ENV_FILE="$env_file" \
		OWNER="$(id -u):$(id -g)" "$0" "$@"
fi
docker info >/dev/null 2>&1 || die "no Docker engine reachable (is dockerd running?)"
if ! command -v debootstrap >/dev/null; then
	command -v apt-get >/dev/null || die "debootstrap is not installed and there is no apt-get to install it"
	log "apt-get install debootstrap"
	{ apt-get install -y -qq debootstrap || { apt-get update -qq && apt-get install -y -qq debootstrap; }; } >/dev/null ||
		die "apt-get install debootstrap failed"
fi

have_image() { [ "$force" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

# base_rootfs debootstraps the shared minimal root filesystem once; the directory is only
# renamed into place when debootstrap succeeded, so an interrupted run starts over.
base_rootfs() {
	local dir=$cache/$suite-minbase
	if [ ! -d "$dir" ]; then
		log "debootstrap $suite into $dir (about a minute)"
		mkdir -p "$cache"
		rm -rf "$dir.tmp"
		debootstrap --variant=minbase "$suite" "$dir.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
			die "debootstrap failed; see $cache/debootstrap.log"
		cat >"$dir.tmp/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
SOURCES
		mv "$dir.tmp" "$dir"
	fi
	printf '%s\n' "$dir"
}

# work_rootfs copies the base into a fresh work directory and installs Debian packages in
# it with chroot; services are never started (policy-rc.d).
work_rootfs() {
	local name=$1; shift
	local base dir
	base=$(base_rootfs)
	dir=$cache/work/$name
	rm -rf "$dir"
	mkdir -p "$cache/work"
	cp -a "$base" "$dir"
	if [ "$#" -gt 0 ]; then
		log "$name: apt-get install $*"
		cp /etc/resolv.conf "$dir/etc/resolv.conf"
		printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
		chmod +x "$dir/usr/sbin/policy-rc.d"
		if ! {
			chroot "$dir" apt-get -q update &&
				DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get -q upgrade -y &&
				DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get -q install -y --no-install-recommends "$@"
		} >"$cache/work/$name.log" 2>&1; then
			tail -n 20 "$cache/work/$name.log" >&2
			die "$name: apt-get failed; see $cache/work/$name.log"
		fi
		rm -f "$dir/usr/sbin/policy-rc.d"
	fi
	printf '%s\n' "$dir"
}

# finish trims a work root filesystem of what an image does not need.
finish() {
	local dir=$1
	chroot "$dir" apt-get -qq clean
	rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/log/*.log \
		"$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/*
	: >"$dir/etc/resolv.conf"
}

# import turns a directory into an image; the remaining arguments are --change lines.
import() {
	local dir=$1 tag=$2; shift 2
	local args=(--change "LABEL io.apistack.base=local-debian")
	local c
	for c in "$@"; do args+=(--change "$c"); done
	log "docker import $tag"
	tar --numeric-owner -C "$dir" -c . | docker import "${args[@]}" - "$tag" >/dev/null
	rm -rf "$dir"
}

path_env='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

build_golang() {
	local tag=$GO_IMAGE version dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	[ -x "$goroot/bin/go" ] || die "no Go toolchain at $goroot (set GOROOT_HOST)"
	version=$("$goroot/bin/go" env GOVERSION)
	case "$tag" in
	*:"${version#go}" | *:"$(echo "${version#go}" | cut -d. -f1,2)") ;;
	*) die "host Go is $version but $tag is wanted; install that Go or change deploy/local-images.env" ;;
	esac
	dir=$(work_rootfs golang ca-certificates git)
	# The builder downloads modules, so it trusts what this machine trusts: certificate
	# authorities added locally (a TLS-inspecting egress proxy's, a company's) come along.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		log "golang: adding this machine's local CA certificates"
		cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
		chroot "$dir" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed"
	fi
	log "golang: copying $goroot ($version)"
	mkdir -p "$dir/usr/local" "$dir/go/bin" "$dir/go/src"
	cp -a "$goroot" "$dir/usr/local/go"
	rm -rf "$dir/usr/local/go/test" "$dir/usr/local/go/doc"
	chmod 1777 "$dir/go"
	finish "$dir"
	import "$dir" "$tag" \
		"ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"ENV GOPATH=/go" "ENV GOTOOLCHAIN=local" "ENV GOLANG_VERSION=${version#go}" \
		"WORKDIR /go" 'CMD ["bash"]'
}

build_static() {
	local tag=$RUNTIME_IMAGE base dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	# Like gcr.io/distroless/static-debian12: no shell, no package manager, only the files
	# a static binary may read. The CA bundle comes from a throwaway ca-certificates install.
	base=$(work_rootfs static-src ca-certificates)
	dir=$cache/work/static
	rm -rf "$dir"
	mkdir -p "$dir/etc/ssl/certs" "$dir/usr/share" "$dir/tmp" "$dir/home/nonroot" "$dir/root"
	cp "$base/etc/ssl/certs/ca-certificates.crt" "$dir/etc/ssl/certs/"
	cp -a "$base/usr/share/zoneinfo" "$dir/usr/share/"
	cp "$base/etc/os-release" "$dir/etc/"
	cat >"$dir/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
	cat >"$dir/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
	printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
	chmod 1777 "$dir/tmp"
	chmod 700 "$dir/root"
	chown 65532:65532 "$dir/home/nonroot"
	rm -rf "$base"
	import "$dir" "$tag" "$path_env" "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
		"USER 65532:65532" "WORKDIR /home/nonroot"
}

build_redis() {
	local tag=$REDIS_IMAGE dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	dir=$(work_rootfs redis redis-server)
	mkdir -p "$dir/data"
	chroot "$dir" chown redis:redis /data
	finish "$dir"
	# The official image compiles protected mode off; Debian's default is on, and the
	# compose file turns it off explicitly for both.
	import "$dir" "$tag" "$path_env" "USER redis" "WORKDIR /data" "VOLUME /data" "EXPOSE 6379" \
		'CMD ["redis-server", "--protected-mode", "no"]'
}

build_caddy() {
	local tag=$CADDY_IMAGE dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	dir=$(work_rootfs caddy caddy ca-certificates)
	mkdir -p "$dir/data" "$dir/config" "$dir/srv"
	chroot "$dir" chown caddy:caddy /data /config
	finish "$dir"
	# Same paths and command as the official caddy image; runs as the caddy user, which is
	# why the Caddyfile listens on 8080 rather than 80.
	import "$dir" "$tag" "$path_env" "ENV XDG_CONFIG_HOME=/config" "ENV XDG_DATA_HOME=/data" \
		"USER caddy" "WORKDIR /srv" "EXPOSE 8080" \
		'CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]'
}

build_prometheus() {
	local tag=$PROMETHEUS_IMAGE dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	dir=$(work_rootfs prometheus prometheus)
	mkdir -p "$dir/prometheus"
	chroot "$dir" chown prometheus:prometheus /prometheus
	finish "$dir"
	# Debian's Prometheus 2.x reads the same configuration and flags as the official image.
	import "$dir" "$tag" "$path_env" "USER prometheus" "WORKDIR /prometheus" "EXPOSE 9090" \
		'ENTRYPOINT ["/usr/bin/prometheus"]' \
		'CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]'
}

build_alertmanager() {
	local tag=$ALERTMANAGER_IMAGE dir
	if have_image "$tag"; then log "$tag exists"; return; fi
	dir=$(work_rootfs alertmanager prometheus-alertmanager)
	mkdir -p "$dir/alertmanager"
	chroot "$dir" chown prometheus:prometheus /alertmanager
	finish "$dir"
	# Debian names the binary prometheus-alertmanager; the flags and the configuration are
	# the official image's, whose compose command sets both.
	import "$dir" "$tag" "$path_env" "USER prometheus" "WORKDIR /alertmanager" "EXPOSE 9093" \
		'ENTRYPOINT ["/usr/bin/prometheus-alertmanager"]' \
		'CMD ["--config.file=/etc/alertmanager/alertmanager.yml", "--storage.path=/alertmanager"]'
}

build_postgres() {
	local tag=$POSTGRES_IMAGE dir bin
	if have_image "$tag"; then log "$tag exists"; return; fi
	dir=$(work_rootfs postgres postgresql)
	bin=$(cd "$dir" && echo usr/lib/postgresql/*/bin)
	[ -x "$dir/$bin/postgres" ] || die "postgres: no server binary under $dir/usr/lib/postgresql"
	# The package's own cluster is not used: the entrypoint makes one in PGDATA, on the
	# volume, the first time it starts (as the official image does).
	rm -rf "$dir"/var/lib/postgresql/[0-9]* "$dir"/etc/postgresql/[0-9]*
	mkdir -p "$dir/var/lib/postgresql/data" "$dir/var/run/postgresql"
	chroot "$dir" chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
	chmod 700 "$dir/var/lib/postgresql/data"
	# The official image's entrypoint, for the variables compose sets: POSTGRES_PASSWORD
	# (required), POSTGRES_USER (postgres) and POSTGRES_DB (the user's name); password
	# (scram-sha-256) logins from any address, trust over the local socket.
	cat >"$dir/usr/local/bin/docker-entrypoint.sh" <<'ENTRYPOINT'
#!/bin/sh
set -eu
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 --no-locale \
		--auth-local=trust --auth-host=scram-sha-256 >/dev/null
	rm -f "$pwfile"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
	if [ "$db" != postgres ]; then
		echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null
	fi
	echo "docker-entrypoint.sh: initialised $PGDATA (user $user, database $db)"
fi
exec "$@"
ENTRYPOINT
	chmod 755 "$dir/usr/local/bin/docker-entrypoint.sh"
	finish "$dir"
	import "$dir" "$tag" "ENV PATH=/$bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"ENV PGDATA=/var/lib/postgresql/data" "USER postgres" "WORKDIR /var/lib/postgresql" \
		"VOLUME /var/lib/postgresql/data" "EXPOSE 5432" \
		'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' 'CMD ["postgres"]'
}

start=$SECONDS
build_golang
build_static
build_redis
build_caddy
build_prometheus
build_alertmanager
build_postgres
log "local base images ready in $((SECONDS - start))s: $GO_IMAGE $RUNTIME_IMAGE $REDIS_IMAGE $CADDY_IMAGE $PROMETHEUS_IMAGE $ALERTMANAGER_IMAGE $POSTGRES_IMAGE"

# write_env puts the image variables into the env file compose reads, replacing earlier
# ones and keeping every other line. Owned by whoever ran make (sudo's caller).
env_marker='# make images-local: the local base images (deploy/local-images.env); delete these lines for the official ones'
write_env() {
	local file=$1 tmp
	tmp=$(mktemp "$file.XXXXXX")
	{
		if [ -f "$file" ]; then
			grep -vxF "$env_marker" "$file" | grep -vE '^(GO|RUNTIME|REDIS|CADDY|PROMETHEUS|ALERTMANAGER|POSTGRES)_IMAGE=' || true
		fi
		printf '%s\n' "$env_marker"
		grep -E '^(GO|RUNTIME|REDIS|CADDY|PROMETHEUS|ALERTMANAGER|POSTGRES)_IMAGE=' "$repo/deploy/local-images.env"
	} >"$tmp"
	chmod 644 "$tmp"
	if [ -n "${OWNER:-}" ]; then chown "$OWNER" "$tmp"; fi
	mv "$tmp" "$file"
	log "wrote $file: docker compose and docker-compose now use the local images"
}
if [ -n "$env_file" ]; then write_env "$env_file"; fi
