#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh [--cached]: build (once) the debug kernel of
# `make check-debug` and print where it is, as shell assignments:
#
#   DEBUG_BZIMAGE=/var/cache/krdma/debug-kernel/<key>/bzImage
#   DEBUG_MODULES=/var/cache/krdma/debug-kernel/<key>/lib/modules/<release>
#   DEBUG_KDIR=/var/cache/krdma/debug-kernel/<key>/linux   (a built tree: KDIR)
#
# for `selftests/vm/run.sh --kernel $DEBUG_BZIMAGE --modules $DEBUG_MODULES
# --kdir $DEBUG_KDIR`.  The kernel is Debian's linux-source-6.1 (installed
# if missing) configured as `make allnoconfig` + selftests/vm/debug.config
# (KCONFIG_ALLCONFIG) + olddefconfig: what the test VM needs, built in, and
# KASAN, lockdep, kmemleak, DEBUG_OBJECTS, UBSAN, fault injection.  It is
# cached under $KRDMA_CACHE/debug-kernel/<key> (default /var/cache/krdma),
# the key a hash of debug.config, the source package version, the compiler
# and the build recipe; it is rebuilt only when one of those changes.  A new
# key starts from a copy of the newest older build of the same source, so a
# small change to debug.config rebuilds only what it touches.  The two
# newest builds are kept.
#
# --cached: print the assignments if the kernel is built, else exit 1
# without building.  --deps: install what the build needs and exit (so that
# a build in the background never runs apt beside another user of it).  Env: KRDMA_DEBUG_JOBS (make -j, default 2; the build
# runs under nice -n 19).  A build log is kept in the cache directory.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
FRAG=$VMDIR/debug.config
CACHE=${KRDMA_CACHE:-/var/cache/krdma}
BASE=$CACHE/debug-kernel
JOBS=${KRDMA_DEBUG_JOBS:-2}
# bump when the steps below change what they produce
RECIPE=2

note() { echo "debug-kernel.sh: $*" >&2; }
die() { note "$*"; exit 1; }

CACHED_ONLY=0 DEPS_ONLY=0
case ${1:-} in
--cached) CACHED_ONLY=1 ;;
--deps) DEPS_ONLY=1 ;;
"") ;;
*) die "usage: debug-kernel.sh [--cached | --deps]" ;;
esac

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)

PKG=linux-source-6.1
srcver=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null || true)
tarball=$(ls /usr/src/$PKG.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$tarball" ] || [ -z "$srcver" ]; then
	[ $CACHED_ONLY = 1 ] && exit 1
	note "installing $PKG"
	"${SUDO[@]}" apt-get update -qq >/dev/null 2>&1 || true
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "$PKG" >/dev/null || die "apt-get install $PKG failed"
	srcver=$(dpkg-query -W -f='${Version}' "$PKG")
	tarball=$(ls /usr/src/$PKG.tar.* | head -n 1)
fi
# what a kernel build needs besides the compiler (present here; not on
# every fresh Debian): installed once, only when one is missing
BUILD_PKGS=(make gcc flex bison bc libelf-dev libssl-dev cpio xz-utils)
missing=()
for p in "${BUILD_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ $CACHED_ONLY = 0 ]; then
	note "installing ${missing[*]}"
	"${SUDO[@]}" apt-get update -qq >/dev/null 2>&1 || true
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
fi
[ $DEPS_ONLY = 0 ] || exit 0
CC=${CC:-gcc}
KEY=$( { echo "recipe $RECIPE"; echo "$PKG $srcver"; "$CC" --version | head -n 1
	grep -E '^(CONFIG_|# CONFIG_)' "$FRAG"; } | sha256sum | cut -c1-16)
D=$BASE/$KEY

print() {
	local rel
	rel=$(cat "$D/release")
	echo "DEBUG_BZIMAGE=$D/bzImage"
	echo "DEBUG_MODULES=$D/lib/modules/$rel"
	echo "DEBUG_KDIR=$D/linux"
}

[ -e "$D/.done" ] && { print; exit 0; }
[ $CACHED_ONLY = 1 ] && exit 1

"${SUDO[@]}" mkdir -p "$BASE"
[ -w "$BASE" ] || "${SUDO[@]}" chown "$(id -u):$(id -g)" "$BASE"
exec 8>"$BASE/.lock"
flock 8
[ -e "$D/.done" ] && { print; exit 0; }

t0=$SECONDS
rm -rf "$D"
mkdir -p "$D"
LOG=$D/build.log
# the newest finished build of the same source, to start from
prev=
# shellcheck disable=SC2045 # newest first: a glob cannot sort by time
for p in $(ls -td "$BASE"/*/ 2>/dev/null); do
	p=${p%/}
	[ -e "$p/.done" ] && [ "$(cat "$p/srcver" 2>/dev/null)" = "$srcver" ] && [ -d "$p/linux" ] || continue
	prev=$p
	break
done
if [ -n "$prev" ]; then
	note "starting from $prev"
	cp -a "$prev/linux" "$D/linux"
else
	note "unpacking $tarball"
	top=$(basename "$tarball"); top=${top%.tar.*}
	tar -xf "$tarball" -C "$D"
	mv "$D/$top" "$D/linux"
fi
# rxe in 6.1 (fixed in later kernels): a QP whose creation failed before
# its timers were set up is cleaned up with del_timer_sync() on them, which
# DEBUG_OBJECTS reports as a WARN (a panic with panic_on_warn).  The fail-nth
# sweeps of selftests/krdma_failnth.c get there; guard the calls as later
# kernels do.  (RECIPE counts this patch.)
f=$D/linux/drivers/infiniband/sw/rxe/rxe_qp.c
if ! grep -q 'if (qp->retrans_timer.function)' "$f"; then
	sed -i -e 's/^\t\tdel_timer_sync(&qp->retrans_timer);/\t\tif (qp->retrans_timer.function)\n\t\t\tdel_timer_sync(\&qp->retrans_timer);/' \
	       -e 's/^\t\tdel_timer_sync(&qp->rnr_nak_timer);/\t\tif (qp->rnr_nak_timer.function)\n\t\t\tdel_timer_sync(\&qp->rnr_nak_timer);/' "$f"
	grep -q 'if (qp->rnr_nak_timer.function)' "$f" || die "patching $f failed"
fi
echo "$srcver" > "$D/srcver"
cp "$FRAG" "$D/debug.config"

K=(nice -n 19 make -C "$D/linux" -j"$JOBS")
note "configuring (allnoconfig + debug.config)"
"${K[@]}" KCONFIG_ALLCONFIG="$D/debug.config" allnoconfig >"$LOG" 2>&1 ||
	{ tail -n 30 "$LOG" >&2; die "allnoconfig failed"; }
"${K[@]}" olddefconfig >>"$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; die "olddefconfig failed"; }
# every line of the fragment must have stuck (a typo or an unmet dependency
# would silently drop a debug option)
bad=0
while read -r line; do
	case $line in
	CONFIG_*=n) sym=${line%%=*}; want=n ;;
	CONFIG_*=*) sym=${line%%=*}; want=${line#*=} ;;
	"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; want=n ;;
	*) continue ;;
	esac
	have=$(sed -n "s/^$sym=//p" "$D/linux/.config")
	[ -n "$have" ] || have=n
	if [ "$have" != "$want" ]; then
		note "debug.config: $sym=$want did not stick (got $have)"
		bad=1
	fi
done < <(grep -E '^(CONFIG_|# CONFIG_)' "$FRAG")
[ $bad = 0 ] || die "fix selftests/vm/debug.config"

note "building $(make -s -C "$D/linux" kernelversion) (make -j$JOBS under nice; log in $LOG)"
tb=$SECONDS
"${K[@]}" >>"$LOG" 2>&1 || { grep -E 'error|Error' "$LOG" | head -n 30 >&2; die "kernel build failed (log $LOG)"; }
rel=$(make -s -C "$D/linux" kernelrelease)
rm -rf "${D:?}/lib"
"${K[@]}" INSTALL_MOD_PATH="$D" modules_install >>"$LOG" 2>&1 ||
	die "modules_install failed (log $LOG)"
rm -f "$D/lib/modules/$rel/build" "$D/lib/modules/$rel/source"
[ -e "$D/lib/modules/$rel/modules.builtin" ] || die "no modules.builtin in $D/lib/modules/$rel"
cp "$D/linux/arch/x86/boot/bzImage" "$D/bzImage"
echo "$rel" > "$D/release"
touch "$D/.done"
note "built $rel in $((SECONDS - tb))s (total $((SECONDS - t0))s)"

# keep the two newest builds
n=0
# shellcheck disable=SC2045 # newest first: a glob cannot sort by time
for p in $(ls -td "$BASE"/*/ 2>/dev/null); do
	p=${p%/}
	[ -e "$p/.done" ] || { [ "$p" = "$D" ] || rm -rf "$p"; continue; }
	n=$((n + 1))
	[ $n -le 2 ] || rm -rf "$p"
done
print
