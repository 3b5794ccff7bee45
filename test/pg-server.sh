#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/pg-server.sh
#	  The PostgreSQL servers of the version matrix, from what Debian's
#	  archive serves: built or fetched once, cached outside the clone keyed
#	  by version, reused when present.
#
# Usage:
#	test/pg-server.sh pg_config MAJOR   print the pg_config of MAJOR's
#	                                    server, making it first if needed
#	test/pg-server.sh run MAJOR CMD...  run CMD where MAJOR's server is
#	                                    (inside the trixie root for 17)
#	test/pg-server.sh path MAJOR        print where MAJOR's server is
#	                                    cached (nothing is made)
#
# The servers:
#	15  Debian bookworm's own packages (postgresql-15, -server-dev-15),
#	    installed by .ci/run: what users install on this system.
#	17  Debian trixie's own binary packages, inside a trixie root made with
#	    `debootstrap --variant=minbase trixie` in $CACHE/trixie-17; schedq
#	    is built and tested inside it (chroot, in a private mount
#	    namespace), and nothing of the system is replaced.
#	18  sid's source package of PostgreSQL 18 (`apt-get source
#	    postgresql-18`, a deb-src line for sid is added to apt's sources):
#	    the upstream tarball only (none of Debian's patches), configured
#	    with --enable-cassert --enable-debug --enable-tap-tests and
#	    installed, with contrib and the isolation tester, into the private
#	    prefix $CACHE/18.
#	15-main Debian bookworm's PostgreSQL 15 of the release itself (bookworm
#	    main, not bookworm-security), its server, client and server-dev
#	    packages unpacked into $CACHE/15-main-VERSION: the old cluster of the
#	    upgrade across majors (test/t/062_pg_upgrade.pl).  The 15 of
#	    bookworm-security (15.20) marks every column with an option
#	    (pg_attver) that 18.6, the newest 18 served here, does not know,
#	    so pg_upgrade from it to 18.6 fails for any database; 15.18 and
#	    18.6 are of one release batch.  schedq is built against its own
#	    headers (an extension built against 15.20's does not load in
#	    15.18: heap_getattr calls a function 15.18 lacks) and installed
#	    into it (test/matrix.sh).
#	16, 19  no package of either is served here: a maintainer passes
#	    their server's pg_config to `make check PG_CONFIG=...` or
#	    `test/matrix.sh` (MATRIX="16=/path/to/pg_config").
#
# Environment:
#	SCHEDQ_PG_CACHE  the cache (default /var/cache/schedq-pg as root,
#	                 ~/.cache/schedq-pg otherwise)
#	PG_BUILD_JOBS    make -j for the source build (default: nproc)
#
# Making a server needs root (apt-get, debootstrap, chroot); using a cached
# one does not, except 17's `run` (chroot).
#-------------------------------------------------------------------------

set -eu
set -o pipefail

# Nothing of a calling make (its MAKEFLAGS carry command-line variables and
# job-server descriptors) may reach the builds run here.
unset MAKEFLAGS MFLAGS MAKELEVEL

if [ "$(id -u)" = 0 ]; then
	CACHE=${SCHEDQ_PG_CACHE:-/var/cache/schedq-pg}
else
	CACHE=${SCHEDQ_PG_CACHE:-$HOME/.cache/schedq-pg}
fi
JOBS=${PG_BUILD_JOBS:-$(nproc)}
TRIXIE=$CACHE/trixie-17

log()
{
	printf 'pg-server: %s\n' "$*" >&2
}

die()
{
	log "$*"
	exit 1
}

need_root()
{
	[ "$(id -u)" = 0 ] || die "making the PostgreSQL $1 server needs root ($2)"
}

# A lock per version, so that two runs do not build the same server at once.
with_lock()
{
	local name=$1
	shift
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.$name.lock"
	flock 9
	"$@"
	exec 9>&-
}

apt_install()
{
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o Dpkg::Use-Pty=0 "$@" </dev/null >/dev/null
}

#
# 18: sid's source package, built with assertions into $CACHE/18.
#
make_18()
{
	local prefix=$CACHE/18 src tarball
	[ -x "$prefix/bin/pg_config" ] && return 0
	need_root 18 "apt-get source"
	local start=$SECONDS

	if ! grep -rqs 'Suites: sid' /etc/apt/sources.list.d/ &&
		! grep -qs 'deb-src .* sid ' /etc/apt/sources.list; then
		cat >/etc/apt/sources.list.d/schedq-sid-src.sources <<-'EOF'
			Types: deb-src
			URIs: http://deb.debian.org/debian
			Suites: sid
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt-get update -q </dev/null >/dev/null
	fi
	# What the build needs from bookworm.
	apt_install dpkg-dev build-essential bison flex zlib1g-dev libipc-run-perl \
		perl

	src=$(mktemp -d "$CACHE/18-src.XXXXXX")
	# --download-only: the upstream tarball, not Debian's patched tree.
	(cd "$src" && apt-get source --download-only -q postgresql-18 </dev/null >/dev/null) ||
		die "apt-get source postgresql-18 failed"
	tarball=$(ls "$src"/postgresql-18_*.orig.tar.* | head -n 1)
	[ -f "$tarball" ] || die "no upstream tarball in postgresql-18's source package"
	tar -xf "$tarball" -C "$src"
	local tree
	tree=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-18*' | head -n 1)
	log "building $(basename "$tree") with assertions into $prefix"
	(
		cd "$tree"
		./configure --prefix="$prefix" --enable-cassert --enable-debug \
			--enable-tap-tests --without-icu --without-readline \
			--without-zstd --without-lz4 >"$src/configure.log" 2>&1
		make -s -j"$JOBS" >"$src/build.log" 2>&1
		make -s -C contrib -j"$JOBS" >>"$src/build.log" 2>&1
		make -s -C src/test/isolation -j"$JOBS" >>"$src/build.log" 2>&1
		make -s install >>"$src/build.log" 2>&1
		make -s -C contrib install >>"$src/build.log" 2>&1
		make -s -C src/test/isolation install >>"$src/build.log" 2>&1
	) || {
		tail -n 40 "$src/build.log" "$src/configure.log" >&2 || true
		die "building PostgreSQL 18 failed"
	}
	rm -rf "$src"
	log "PostgreSQL 18 built in $((SECONDS - start)) s"
}

#
# 15-main: bookworm's own PostgreSQL 15 packages, unpacked privately.
#
main_15_version()
{
	apt-cache madison postgresql-15 | awk -F'|' '$3 ~ /bookworm\/main/ { gsub(/ /, "", $2); print $2; exit }'
}

make_15_main()
{
	local version dir tmp
	version=$(main_15_version)
	[ -n "$version" ] || die "no postgresql-15 in bookworm main (apt-get update?)"
	dir=$CACHE/15-main-$version
	echo "$dir" >"$CACHE/15-main.path"
	[ -f "$dir/usr/include/postgresql/15/server/postgres.h" ] && return 0
	need_root 15-main "apt-get download"
	tmp=$(mktemp -d "$CACHE/15-main.XXXXXX")
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get download -q "postgresql-15=$version" "postgresql-client-15=$version" \
		"postgresql-server-dev-15=$version" \
		</dev/null >/dev/null 2>&1) || die "apt-get download postgresql-15=$version failed"
	mkdir -p "$tmp/root"
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root" || die "dpkg-deb -x $deb failed"
	done
	rm -rf "$dir"
	mv "$tmp/root" "$dir"
	rm -rf "$tmp"
	log "PostgreSQL $version (bookworm main) unpacked into $dir"
}

#
# 17: Debian trixie's packages in a trixie root.
#
TRIXIE_PACKAGES=(
	postgresql-17 postgresql-server-dev-17 postgresql-client-17
	libpq-dev libncurses-dev libmicrohttpd-dev build-essential make perl libipc-run-perl
	util-linux findutils coreutils
	# the package test (t/070_package.pl): make dist, make deb
	git unzip dpkg-dev debhelper fakeroot postgresql-server-dev-all
)

# Install into the root what TRIXIE_PACKAGES names and it lacks (a cached
# root made from an older list).
trixie_packages()
{
	local root=$1 want
	want=$(printf '%s\n' "${TRIXIE_PACKAGES[@]}" | sort)
	[ "$want" = "$(cat "$root/.schedq-packages" 2>/dev/null)" ] && return 0
	in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends -o Dpkg::Use-Pty=0 "${TRIXIE_PACKAGES[@]}" \
		>"$CACHE/trixie-apt.log" 2>&1 ||
		{ tail -n 30 "$CACHE/trixie-apt.log" >&2; die "installing packages in the trixie root failed"; }
	in_root "$root" apt-get clean
	echo "$want" >"$root/.schedq-packages"
}

make_17()
{
	if [ -x "$TRIXIE/usr/lib/postgresql/17/bin/pg_config" ]; then
		[ "$(id -u)" = 0 ] && trixie_packages "$TRIXIE"
		return 0
	fi
	need_root 17 "debootstrap, chroot"
	local start=$SECONDS tmp

	command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
	tmp="$TRIXIE.new"
	rm -rf "$tmp"
	log "making a trixie root in $TRIXIE"
	debootstrap --variant=minbase trixie "$tmp" http://deb.debian.org/debian \
		>"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$CACHE/debootstrap.log" >&2; die "debootstrap trixie failed"; }
	# No service starts in the root, and no default cluster is made.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$tmp/etc/postgresql-common/createcluster.conf"
	in_root "$tmp" apt-get update -q >/dev/null
	trixie_packages "$tmp"
	mv "$tmp" "$TRIXIE"
	log "trixie root with PostgreSQL 17 made in $((SECONDS - start)) s"
}

# Run a command inside the root $1, in a private mount namespace (the
# mounts vanish with it) with /proc, /dev, /dev/pts, /dev/shm and /sys.
in_root()
{
	local root=$1
	shift
	unshare --mount --propagation private -- /bin/sh -c '
		root=$1; shift
		for d in proc dev dev/pts dev/shm sys; do
			mkdir -p "$root/$d"
			mount --bind "/$d" "$root/$d" || exit 1
		done
		cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
		exec chroot "$root" "$@"
	' in_root "$root" "$@"
}

pg_config_of()
{
	case $1 in
	15)
		[ -x /usr/lib/postgresql/15/bin/pg_config ] ||
			die "Debian's PostgreSQL 15 is not installed (postgresql-server-dev-15)"
		echo /usr/lib/postgresql/15/bin/pg_config
		;;
	17)
		with_lock 17 make_17
		echo /usr/lib/postgresql/17/bin/pg_config
		;;
	18)
		with_lock 18 make_18
		echo "$CACHE/18/bin/pg_config"
		;;
	15-main)
		with_lock 15-main make_15_main
		echo "$(cat "$CACHE/15-main.path")/usr/lib/postgresql/15/bin/pg_config"
		;;
	*)
		die "no server of PostgreSQL $1 can be made here; pass its pg_config (PG_CONFIG=...)"
		;;
	esac
}

case ${1-} in
pg_config)
	[ $# -eq 2 ] || die "usage: $0 pg_config MAJOR"
	pg_config_of "$2"
	;;
path)
	[ $# -eq 2 ] || die "usage: $0 path MAJOR"
	case $2 in
	15) echo /usr/lib/postgresql/15 ;;
	17) echo "$TRIXIE" ;;
	18) echo "$CACHE/18" ;;
	15-main) cat "$CACHE/15-main.path" ;;
	*) die "no server of PostgreSQL $2 is made here" ;;
	esac
	;;
run)
	[ $# -ge 3 ] || die "usage: $0 run MAJOR CMD..."
	major=$2
	shift 2
	pg_config_of "$major" >/dev/null
	if [ "$major" = 17 ]; then
		[ "$(id -u)" = 0 ] || die "running in the trixie root needs root (chroot)"
		in_root "$TRIXIE" "$@"
	else
		"$@"
	fi
	;;
*)
	die "usage: $0 pg_config MAJOR | path MAJOR | run MAJOR CMD..."
	;;
esac
