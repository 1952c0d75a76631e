# shellcheck shell=bash
# netfree.sh: sourced by the scripts that start servers (the Docker tests, run-check.sh,
# bench/scripts/lib.sh) to pick what must not be fixed on a shared machine: a free TCP
# port on 127.0.0.1 and an IPv4 /24 that no Docker network holds. Each function prints
# its pick or, when none is found, an error naming what to stop, and returns 1.

# free_port: a TCP port nothing listens on now at 127.0.0.1 (from 20000-59999; not
# race-free, but a server that loses the race fails loudly).
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "no free TCP port found on 127.0.0.1 in 20000-59999" >&2
	return 1
}

# ipv4_int A.B.C.D: the address as one integer.
ipv4_int() {
	local IFS=. a b c d
	read -r a b c d <<<"$1"
	echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

# cidr_overlaps X/n Y/m: whether two IPv4 networks share an address.
cidr_overlaps() {
	local a=${1%/*} an=${1#*/} b=${2%/*} bn=${2#*/} lo1 hi1 lo2 hi2
	lo1=$(($(ipv4_int "$a") & ~((1 << (32 - an)) - 1) & 0xffffffff))
	hi1=$((lo1 + (1 << (32 - an)) - 1))
	lo2=$(($(ipv4_int "$b") & ~((1 << (32 - bn)) - 1) & 0xffffffff))
	hi2=$((lo2 + (1 << (32 - bn)) - 1))
	((lo1 <= hi2 && lo2 <= hi1))
}

# docker_subnets: every IPv4 subnet a Docker network on this engine holds, one a line,
# each with the network's name.
docker_subnets() {
	local id
	for id in $(docker network ls -q); do
		docker network inspect -f '{{.Name}}{{range .IPAM.Config}} {{.Subnet}}{{end}}' "$id" 2>/dev/null
	done | awk '{for (i = 2; i <= NF; i++) if ($i !~ /:/) print $i, $1}'
}

# free_subnet [WANT]: WANT when no Docker network overlaps it (an error naming the
# network that does, otherwise); without WANT, the first of 172.30.80.0/24 to
# 172.30.255.0/24 and then 10.231.0.0/24 to 10.231.255.0/24 that none overlaps.
free_subnet() {
	local taken c net name
	taken=$(docker_subnets)
	if [ -n "${1:-}" ]; then
		while read -r net name; do
			[ -n "$net" ] || continue
			if cidr_overlaps "$1" "$net"; then
				echo "subnet $1 overlaps Docker network $name ($net): stop that stack (docker-compose down) or choose another subnet" >&2
				return 1
			fi
		done <<<"$taken"
		echo "$1"
		return 0
	fi
	for c in $(seq 80 255 | sed 's/^/172.30./') $(seq 0 255 | sed 's/^/10.231./'); do
		c=$c.0/24
		while read -r net name; do
			[ -n "$net" ] || continue
			cidr_overlaps "$c" "$net" && continue 2
		done <<<"$taken"
		echo "$c"
		return 0
	done
	echo "no free /24 in 172.30.80-255.0 or 10.231.0-255.0: every one overlaps a Docker network (docker network ls)" >&2
	return 1
}
