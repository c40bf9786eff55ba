#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# chroot.sh SUITE COMMAND...: the build root of a Debian suite whose kernel
# headers this host cannot build against (bullseye's want gcc-10, sid's
# gcc-16 and sid's kbuild).  A debootstrapped minbase chroot per suite,
# cached under $KRDMA_CACHE/chroot/SUITE (default /var/cache/krdma), with
# its own apt state: the host's sources and apt state are never touched.
#
#   chroot.sh SUITE path            create it if need be; print its path
#   chroot.sh SUITE apt ARGS...     apt-get ARGS inside (non-interactive)
#   chroot.sh SUITE headers ABI     install linux-headers-ABI-amd64 (and
#                                   drop older ones); print the KDIR
#   chroot.sh SUITE abis REGEX      ABIs (e.g. 5.10.0-46) whose image and
#                                   headers the suite has, oldest first
#   chroot.sh SUITE version PKG     PKG's candidate version (empty: none)
#   chroot.sh SUITE download DIR PKG...  apt-get download PKG... into DIR
#   chroot.sh SUITE run CMD...      CMD inside, with /proc mounted and the
#                                   repository bind-mounted at its own path
#                                   (in a private mount namespace: nothing
#                                   stays mounted), as the repository's owner
#
# The package lists are refreshed when older than a day.  Needs root (or
# sudo) and debootstrap, which is installed if missing.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
REPO=$(cd "$VMDIR/../.." && pwd)
CACHE=${KRDMA_CACHE:-/var/cache/krdma}
MIRROR=${KRDMA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# bump when what a new chroot gets changes
RECIPE=1
BASE_PKGS=(make sparse kmod ca-certificates)

note() { echo "chroot.sh: $*" >&2; }
die() { note "$*"; exit 1; }

USAGE="usage: chroot.sh SUITE path|apt|headers|abis|version|download|run ..."
SUITE=${1:?$USAGE}
CMD=${2:?$USAGE}
shift 2
case $SUITE in bullseye|bookworm|trixie|sid) ;; *) die "unknown suite $SUITE" ;; esac
DIR=$CACHE/chroot/$SUITE

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)

# apt inside; a frozen mirror's Release files may have expired
in_apt() {
	"${SUDO[@]}" chroot "$DIR" env DEBIAN_FRONTEND=noninteractive \
		apt-get -q -o Acquire::Check-Valid-Until=false "$@"
}

sources() {
	echo "deb $MIRROR $SUITE main"
	case $SUITE in
	sid) ;;
	*) echo "deb ${MIRROR%/debian}/debian-security $SUITE-security main" ;;
	esac
}

create() {
	local tmp=$DIR.new
	if ! command -v debootstrap >/dev/null; then
		note "installing debootstrap"
		"${SUDO[@]}" apt-get update -qq >/dev/null 2>&1 || true
		"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends debootstrap >/dev/null || die "cannot install debootstrap"
	fi
	note "creating the $SUITE build root in $DIR (a few minutes)"
	"${SUDO[@]}" rm -rf "$tmp" "$DIR"
	"${SUDO[@]}" mkdir -p "$(dirname "$DIR")"
	"${SUDO[@]}" debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" \
		> "$CACHE/chroot/$SUITE.log" 2>&1 ||
		die "debootstrap $SUITE failed (see $CACHE/chroot/$SUITE.log)"
	sources | "${SUDO[@]}" tee "$tmp/etc/apt/sources.list" >/dev/null
	"${SUDO[@]}" mv "$tmp" "$DIR"
	in_apt update -qq >/dev/null || die "apt-get update in $DIR failed"
	in_apt install -y --no-install-recommends "${BASE_PKGS[@]}" >/dev/null ||
		die "apt-get install ${BASE_PKGS[*]} in $DIR failed"
	echo "$RECIPE" | "${SUDO[@]}" tee "$DIR/.krdma-recipe" >/dev/null
}

ensure() {
	"${SUDO[@]}" mkdir -p "$CACHE/chroot"
	exec 8>"$CACHE/chroot/$SUITE.lock"
	flock 8
	[ "$(cat "$DIR/.krdma-recipe" 2>/dev/null)" = "$RECIPE" ] || create
	if [ -z "$(find "$DIR/var/lib/apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
		in_apt update -qq >/dev/null || note "apt-get update in $DIR failed (using the old lists)"
	fi
	flock -u 8
}

ensure
case $CMD in
path)
	echo "$DIR"
	;;
apt)
	flock 8		# one user of the build root's dpkg at a time
	in_apt "$@"
	;;
abis)
	re=${1:?chroot.sh SUITE abis REGEX}
	names=$("${SUDO[@]}" chroot "$DIR" apt-cache pkgnames linux-)
	for abi in $(sed -nE "s/^linux-image-($re)-amd64(-unsigned)?\$/\\1/p" <<<"$names" | sort -uV); do
		grep -qxF "linux-headers-$abi-amd64" <<<"$names" && echo "$abi"
	done
	;;
headers)
	abi=${1:?chroot.sh SUITE headers ABI}
	pkg=linux-headers-$abi-amd64
	flock 8		# one user of the build root's dpkg at a time
	if [ ! -e "$DIR/usr/src/$pkg/Makefile" ]; then
		note "installing $pkg in the $SUITE build root"
		in_apt install -y --no-install-recommends "$pkg" >/dev/null ||
			die "apt-get install $pkg in $DIR failed"
		# one kernel's headers per suite: drop the ones it replaces
		old=$("${SUDO[@]}" chroot "$DIR" dpkg-query -W -f='${Package}\n' 'linux-headers-*' 2>/dev/null |
			grep -vxF -e "linux-headers-$abi-amd64" -e "linux-headers-$abi-common" || true)
		# shellcheck disable=SC2086
		[ -z "$old" ] || in_apt purge -y $old >/dev/null || true
	fi
	echo "/usr/src/$pkg"
	;;
version)
	"${SUDO[@]}" chroot "$DIR" apt-cache show --no-all-versions "${1:?chroot.sh SUITE version PKG}" 2>/dev/null |
		sed -n 's/^Version: //p' | head -n 1 || true
	;;
download)
	dest=${1:?chroot.sh SUITE download DIR PKG...}
	shift
	tmp=$("${SUDO[@]}" chroot "$DIR" mktemp -d)
	"${SUDO[@]}" chroot "$DIR" sh -c 'cd "$1" && shift && apt-get download -q "$@"' sh "$tmp" "$@" >/dev/null ||
		die "apt-get download $* in $DIR failed"
	"${SUDO[@]}" sh -c 'mv "$1"/*.deb "$2"/ && rmdir "$1"' sh "$DIR$tmp" "$dest"
	;;
run)
	[ $# -gt 0 ] || die "run: no command"
	owner=$(stat -c %u:%g "$REPO")
	# shellcheck disable=SC2016 # expanded by the inner shell
	"${SUDO[@]}" unshare --mount --propagation private sh -c '
		dir=$1 repo=$2 owner=$3
		shift 3
		mount -t proc proc "$dir/proc" &&
		mkdir -p "$dir$repo" &&
		mount --bind "$repo" "$dir$repo" &&
		exec chroot --userspec="$owner" "$dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/tmp LANG=C.UTF-8 sh -c "cd \"\$0\" && exec \"\$@\"" "$repo" "$@"
	' sh "$DIR" "$REPO" "$owner" "$@"
	;;
*)
	die "unknown command $CMD"
	;;
esac
