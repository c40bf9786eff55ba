# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# kernels.sh (sourced): the kernels krdma is tested on, and where Debian
# keeps each.
#
#   5.10   bullseye   the oldest LTS still in use (for RHEL 9's 5.14 and
#                     Ubuntu 22.04's 5.15 too); the lowest krdma builds on
#   6.1    bookworm   this host's suite
#   6.12   bookworm   (bookworm's second kernel series)
#   sid    sid        the newest kernel Debian has, the nearest to mainline
#                     (7.2 today); a series such as 7.2 picks it in sid too
#
# A suite other than the host's (bookworm) is built in its own chroot
# (chroot.sh), with the compiler its kernel was built with.

KRDMA_VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
KRDMA_REPO=$(cd "$KRDMA_VMDIR/../.." && pwd)
CACHE=${KRDMA_CACHE:-/var/cache/krdma}

# the default matrix of make check, oldest first (used by the scripts
# that source this file)
# shellcheck disable=SC2034
KRDMA_MATRIX="5.10 6.1 6.12 sid"
# the suite the host runs: its kernels build with the host's compiler
KRDMA_HOST_SUITE=bookworm

# kernel_suite SERIES: the Debian suite that has it
kernel_suite() {
	case $1 in
	5.10) echo bullseye ;;
	6.1|6.12) echo bookworm ;;
	sid|[7-9].*) echo sid ;;
	*) return 1 ;;
	esac
}

# kernel_abi_re SERIES: an extended regex of the series' Debian ABIs (the
# part of a package name between linux-image- and -amd64)
kernel_abi_re() {
	case $1 in
	5.10|6.1) echo "${1//./\\.}\\.0-[0-9]+" ;;
	sid) echo '[0-9]+\.[0-9]+\.[0-9]+\+deb[0-9]+' ;;
	*) echo "${1//./\\.}\\.[0-9]+\\+deb[0-9]+" ;;
	esac
}

# kernel_series RELEASE: the series a release belongs to (6.12.57+deb12-amd64
# -> 6.12)
kernel_series() {
	local r=${1%%-*}
	r=${r%%+*}
	echo "${r%.*}"
}

# --------------------------------------------------- apt on the host (the
# caller defines note and die)
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
APT_UPDATED=0
apt_update() {
	[ $APT_UPDATED = 1 ] && return 0
	note "apt-get update"
	"${SUDO[@]}" apt-get update -qq >/dev/null || note "apt-get update failed"
	APT_UPDATED=1
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
apt_install() {
	local missing=() p
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} = 0 ] && return 0
	note "installing ${missing[*]}"
	apt_update
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}
# apt-get download PKG into DIR (cwd must be writable by us)
apt_download() {
	local dir=$1; shift
	( cd "$dir" && apt-get download "$@" >/dev/null 2>&1 ) && return 0
	apt_update
	( cd "$dir" && apt-get download "$@" >/dev/null ) || die "apt-get download $* failed"
}
pkg_version() { apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1; }

# series -> ABI: newest with image-unsigned and headers in the host's apt,
# preferring installed headers.
pick_abi() {
	local series=$1 re cands abi best_inst="" best_any=""
	re=$(kernel_abi_re "$series")
	local names
	names=$(apt-cache pkgnames linux- 2>/dev/null || true)
	if ! grep -q '^linux-image-' <<<"$names"; then
		apt_update; names=$(apt-cache pkgnames linux- 2>/dev/null || true)
	fi
	cands=$(sed -nE "s/^linux-image-($re)-amd64-unsigned\$/\\1/p" <<<"$names" | sort -V)
	for abi in $cands; do
		grep -qxF "linux-headers-$abi-amd64" <<<"$names" || continue
		best_any=$abi
		[ -e "/usr/src/linux-headers-$abi-amd64/Makefile" ] && best_inst=$abi
	done
	if [ -z "$best_any" ]; then
		# offline: fall back to whatever the cache and /usr/src have
		for abi in $(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' 2>/dev/null | sed -E 's|.*/linux-headers-(.*)-amd64$|\1|' | grep -E "^$re\$" | sort -V); do
			ls -d "$CACHE/kernel/$abi"_* >/dev/null 2>&1 && best_inst=$abi
		done
	fi
	echo "${best_inst:-$best_any}"
}

# kernel_resolve SERIES: the newest Debian kernel of SERIES, its headers
# installed (on the host, or in its suite's build root): sets SUITE,
# CHROOT_SUITE (empty: the host builds it), ABI, REL (its uname -r) and, if
# unset, KDIR (for a build root, a path inside it)
kernel_resolve() {
	SUITE=$(kernel_suite "$1") || die "no such kernel series: $1"
	if [ "$SUITE" = "$KRDMA_HOST_SUITE" ]; then
		CHROOT_SUITE=
		ABI=$(pick_abi "$1")
		[ -n "$ABI" ] || die "no Debian kernel ABI found for series $1"
		REL=$ABI-amd64
		[ -n "${KDIR:-}" ] || { apt_install "linux-headers-$REL"; KDIR=/usr/src/linux-headers-$REL; }
	else
		CHROOT_SUITE=$SUITE
		ABI=$("$KRDMA_VMDIR/chroot.sh" "$SUITE" abis "$(kernel_abi_re "$1")" | tail -n 1)
		[ -n "$ABI" ] || die "no Debian kernel ABI found for $1 in $SUITE"
		REL=$ABI-amd64
		[ -n "${KDIR:-}" ] || KDIR=$("$KRDMA_VMDIR/chroot.sh" "$SUITE" headers "$ABI")
	fi
}

# fetch_image VERSION PKG...: the kernel image packages PKG... (of version
# VERSION) of the resolved kernel, unpacked once into $CACHE/kernel (cache
# lock held): sets KKDIR; KKDIR/root has boot/vmlinuz-REL and
# lib/modules/REL, depmod run
fetch_image() {
	local version=$1 d
	shift
	if [ -z "$version" ]; then
		KKDIR=$(find "$CACHE/kernel" -maxdepth 1 -name "${ABI}_*" 2>/dev/null | sort -V | tail -n 1)
		[ -n "$KKDIR" ] || die "$* unknown to apt and not cached"
	else
		KKDIR=$CACHE/kernel/${ABI}_$version
	fi
	[ -e "$KKDIR/.done" ] && return 0
	note "fetching $* $version"
	rm -rf "$KKDIR"; mkdir -p "$KKDIR/deb"
	chmod 777 "$KKDIR/deb" 2>/dev/null || true
	if [ -n "$CHROOT_SUITE" ]; then
		"$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" download "$KKDIR/deb" "$@"
	else
		apt_download "$KKDIR/deb" "$@"
	fi
	for d in "$KKDIR"/deb/*.deb; do dpkg -x "$d" "$KKDIR/root"; done
	# a merged-/usr suite keeps them under usr/
	for d in boot lib; do
		[ -e "$KKDIR/root/$d" ] || [ ! -d "$KKDIR/root/usr/$d" ] || ln -s "usr/$d" "$KKDIR/root/$d"
	done
	if [ ! -e "$KKDIR/root/boot/vmlinuz-$REL" ] && [ -e "$KKDIR/root/lib/modules/$REL/vmlinuz" ]; then
		mkdir -p "$KKDIR/root/boot"
		ln -s "../lib/modules/$REL/vmlinuz" "$KKDIR/root/boot/vmlinuz-$REL"
	fi
	depmod -b "$KKDIR/root" "$REL"
	rm -rf "$KKDIR/deb"
	touch "$KKDIR/.done"
}

# kernel_fetch_image: the resolved kernel's image and modules, unpacked
# in the cache (KKDIR/root), from the suite the headers came from
kernel_fetch_image() {
	local pkg v
	if [ -z "$CHROOT_SUITE" ]; then
		pkg=linux-image-$REL-unsigned
		fetch_image "$(pkg_version "$pkg")" "$pkg"
		return
	fi
	# newer suites split the image (linux-binary) from its modules
	v=$("$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" version "linux-binary-$REL")
	if [ -n "$v" ]; then
		fetch_image "$v" "linux-binary-$REL" "linux-modules-$REL"
		return
	fi
	pkg=linux-image-$REL-unsigned
	v=$("$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" version "$pkg")
	fetch_image "$v" "$pkg"
}

# kernel_run CMD...: CMD in the repository, where the resolved kernel
# builds (its suite's build root, or the host)
kernel_run() {
	if [ -n "$CHROOT_SUITE" ]; then
		"$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" run "$@"
	else
		(cd "$KRDMA_REPO" && "$@")
	fi
}

# kernel_make ARGS...: make for the resolved kernel, stamped with the
# version of the repository (a build root has no git)
kernel_make() {
	kernel_run make KRDMA_VERSION="$("$KRDMA_REPO/scripts/version.sh")" KDIR="$KDIR" "$@"
}
