#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: run a command inside a throw-away qemu guest (a Debian kernel of
# the matrix, soft-RoCE rxe device, krdma.ko loaded) and exit with its status.
#
#   selftests/vm/run.sh [options] -- CMD [ARG...]
#
# Options:
#   --kernel 5.10|6.1|6.12|sid|7.2|PATH  kernel series (default 6.1; see
#                       kernels.sh).  For a series, the newest Debian ABI
#                       that has both an image and linux-headers-<abi>-amd64
#                       in its suite is used (this host's apt for bookworm,
#                       preferring installed headers; a build root's, made
#                       by chroot.sh, for another suite, the module built
#                       there).  PATH is a bzImage; then --modules and
#                       --kdir are needed.
#   --modules DIR       lib/modules/<release> tree for --kernel PATH
#   --kdir DIR          kernel tree to build krdma.ko against (default: the
#                       Debian headers of the chosen ABI)
#   --vms 1|2           one guest (default), or two guests joined by a qemu
#                       socket netdev on 127.0.0.1
#   --peer-cmd 'CMD2'   (--vms 2) shell command run in the second guest, in
#                       the background, before CMD starts in the first guest
#   --timeout SECS      whole-run watchdog (default 900, env KRDMA_VM_TIMEOUT)
#   --mem MB            guest memory (default 1024, env MEM)
#   --accel tcg|kvm     (default tcg, env KRDMA_VM_ACCEL; KVM hangs here)
#   --cpu MODEL         qemu's -cpu under TCG (default max, env KRDMA_VM_CPU)
#   --no-build          do not run make (use what is in build/ already)
#   --no-insmod         do not insmod krdma.ko before CMD
#   --ko FILE           this krdma.ko (e.g. one DKMS built) instead of the
#                       build's: installed in the guest's module tree
#                       (updates/), depmod run, and loaded by modprobe
#   --bin DIR           programs put first in the guest's PATH (e.g. a
#                       packaged krdmactl)
#   --verbose           full kernel log level on the console (default
#                       loglevel=5: warnings and worse, which is what counts)
#   --append 'ARGS'     more kernel command line (check-debug.sh: panic_on_warn=1)
#
# Host environment: KRDMA_CACHE (default /var/cache/krdma) holds the kernel
# and userspace debs, extracted, keyed by version, and the static initramfs.
# Logs go to $REPO/build/vm/<run>/ (console.log, dmesg.txt, and peer-*.log).
#
# In the guest CMD runs as root in $REPO (the repo is 9p-mounted read-write at
# the same absolute path as on the host), with:
#   KRDMA_REPO          the repo
#   KRDMA_KO            $REPO/build/kernel/<release>/krdma.ko (--ko: the
#                       path of that module in the guest)
#   KRDMA_LOADED        1 if run.sh loaded it, else 0
#   RXE0_ADDR, RXE0_ADDR6   this guest's addresses (192.0.2.1, 2001:db8::1)
#                       on the netdev under rxe0
#   PEER_ADDR, PEER_ADDR6   (--vms 2) the other guest (192.0.2.2, 2001:db8::2;
#                       in the peer guest they name the first guest)
#   RXE1_ADDR, RXE1_ADDR6   (one guest) 192.0.2.11, 2001:db8::11 on krdma1
#                       under rxe1; unset if rxe1 could not be set up
#   KRDMA_VM            1 (guest 1) or 2 (the peer guest); KRDMA_VMS 1 or 2
#   PATH                $REPO/build/bin:$REPO/build/selftests, iproute2
#                       (ip, tc, rdma), rdma-core tools (ibv_*, rping, ib_*
#                       perftest), kmod, busybox; /bin/sh is dash, bash exists
# One guest: veth pair krdma0/krdma1, rxe0 on krdma0, rxe1 on krdma1.  Out of
# the box the kernel carries traffic between two local addresses over lo,
# where rxe drops it (no rxe device on lo), so rxe0 <-> rxe1 fails; policy
# routing (see setup_rxe1 in the guest init) sends traffic from 192.0.2.1 to
# .11 (and back, and the same for 2001:db8::1/::11) through the veth, and
# then rxe0 <-> rxe1 works on 6.1 and 6.12 (ibv_rc_pingpong -g 1 and the IPv6
# GID, rping -I $RXE0_ADDR6 -a $RXE1_ADDR6, ib_write_bw -R).  Traffic with no
# source address chosen (an unbound socket, rdma_resolve_addr without a
# source) still goes over lo, as before, and one rxe device talking to itself
# (both ends on rxe0) works as always.  (A second network namespace does not
# help: in 6.1 rxe in a non-initial netns passes no traffic.)
# --vms 2: eth0 (virtio-net, socket netdev on 127.0.0.1) under rxe0 in each.
# Guest 2 starts CMD2 and signals readiness (a file in the run directory)
# two seconds later; guest 1 waits for that and for a ping before CMD.
#
# Exit status: CMD's status; 1 if CMD passed but the kernel log shows BUG:,
# WARNING:, Oops, KASAN, kmemleak, hung_task, refcount_t, a panic, UBSAN,
# a soft lockup or an RCU stall; 124 if the guest never reported a status
# (watchdog expired, guest crashed); 125 if the guest setup failed (modules,
# 9p, rxe0); 2 for usage and build/setup errors.  The repo path must not
# contain a comma (qemu -virtfs).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
VMDIR=$(dirname "$SELF")
REPO=$(cd "$VMDIR/../.." && pwd)
# shellcheck source=selftests/vm/kernels.sh
. "$VMDIR/kernels.sh"
CACHE=${KRDMA_CACHE:-/var/cache/krdma}
MARK=KRDMA-EXIT-STATUS

KERNEL=6.1
KDIR=
CHROOT_SUITE=
MODDIR=
VMS=1
PEER_CMD=
TIMEOUT=${KRDMA_VM_TIMEOUT:-900}
MEM=${MEM:-1024}
ACCEL=${KRDMA_VM_ACCEL:-tcg}
CPU=${KRDMA_VM_CPU:-max}
BUILD=1
INSMOD=1
KO_FILE=
BIN_DIR=
LOGLEVEL=5
EXTRA_APPEND=

die() { echo "run.sh: $*" >&2; exit 2; }
note() { echo "run.sh: $*" >&2; }
usage() { sed -n '4,38p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNEL=${2:?}; shift 2 ;;
	--kdir) KDIR=${2:?}; shift 2 ;;
	--modules) MODDIR=${2:?}; shift 2 ;;
	--vms) VMS=${2:?}; shift 2 ;;
	--peer-cmd) PEER_CMD=${2?}; shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--mem) MEM=${2:?}; shift 2 ;;
	--accel) ACCEL=${2:?}; shift 2 ;;
	--cpu) CPU=${2:?}; shift 2 ;;
	--no-build) BUILD=0; shift ;;
	--no-insmod) INSMOD=0; shift ;;
	--ko) KO_FILE=$(readlink -f "${2:?}"); shift 2 ;;
	--bin) BIN_DIR=$(readlink -f "${2:?}"); shift 2 ;;
	--verbose) LOGLEVEL=8; shift ;;
	--append) EXTRA_APPEND=${2?}; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	*) echo "run.sh: unknown option $1" >&2; usage ;;
	esac
done
[ $# -gt 0 ] || usage
case $VMS in 1|2) ;; *) die "--vms must be 1 or 2" ;; esac
case $ACCEL in tcg|kvm) ;; *) die "--accel must be tcg or kvm" ;; esac
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "bad --timeout"
[[ $MEM =~ ^[0-9]+$ ]] || die "bad --mem"

# ---------------------------------------------------------------- host setup
apt_install qemu-system-x86 busybox-static kmod cpio xz-utils zstd iproute2
"${SUDO[@]}" mkdir -p "$CACHE"
[ -w "$CACHE" ] || "${SUDO[@]}" chown "$(id -u):$(id -g)" "$CACHE"
# concurrent runs share the cache: fill it under a lock
exec 9>"$CACHE/.lock"
flock 9

T0=$SECONDS
if [ -f "$KERNEL" ]; then
	BZIMAGE=$(readlink -f "$KERNEL")
	[ -d "$MODDIR" ] || die "--kernel PATH needs --modules DIR (a lib/modules/<release> tree)"
	[ -n "$KDIR" ] || die "--kernel PATH needs --kdir DIR"
	MODDIR=$(readlink -f "$MODDIR")
	REL=$(basename "$MODDIR")
	KROOT=$(mktemp -d /tmp/krdma-kroot.XXXXXX)
	mkdir -p "$KROOT/lib/modules"
	ln -s "$MODDIR" "$KROOT/lib/modules/$REL"
	[ -e "$MODDIR/modules.dep" ] || depmod -b "$KROOT" "$REL"
	KKEY=custom-$(cat "$BZIMAGE" "$MODDIR/modules.dep" | sha256sum | cut -c1-16)
else
	kernel_resolve "$KERNEL"
	kernel_fetch_image
	KROOT=$KKDIR/root
	BZIMAGE=$KROOT/boot/vmlinuz-$REL
	KKEY=$(basename "$KKDIR")
fi
[ -f "$BZIMAGE" ] || die "no kernel image $BZIMAGE"

# ------------------------------------------------------------------ build
if [ $BUILD = 1 ]; then
	AS_USER=()
	if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
		AS_USER=(runuser -u "$SUDO_USER" --)
	fi
	if [ -n "$CHROOT_SUITE" ]; then
		note "building krdma.ko against $KDIR in the $CHROOT_SUITE build root"
		kernel_make -s module || die "make module failed"
	else
		note "building krdma.ko against $KDIR"
		"${AS_USER[@]}" make -s -C "$REPO" KDIR="$KDIR" module || die "make module failed"
	fi
	"${AS_USER[@]}" make -s -C "$REPO" tools selftests || die "make tools selftests failed"
fi
KO=$REPO/build/kernel/$REL/krdma.ko
if [ -n "$KO_FILE" ]; then
	[ -f "$KO_FILE" ] || die "--ko: no file $KO_FILE"
	KO=/usr/lib/modules/$REL/updates/${KO_FILE##*/}
fi
[ -n "$KO_FILE" ] || [ -e "$KO" ] || note "warning: $KO does not exist"

# ---------------------------------------------- guest userspace (debs, cached)
GUEST_PKGS=(rdma-core ibverbs-utils rdmacm-utils ibverbs-providers libibverbs1
	librdmacm1 libibumad3 perftest iproute2)
# the library closure, minus what comes from the host (libc, libgcc_s)
lib_closure() {
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "${GUEST_PKGS[@]}" 2>/dev/null |
		grep -E '^lib[a-z0-9.+-]+$' | grep -vxE 'libc6|libgcc-s1|libelogind0|libpam.*|libsemanage.*|libdebian-installer.*|libnewt.*|libslang.*|libtextwrap.*|libreadline.*|libaudit.*|libcrypt1' | sort -u
}
ALLPKGS=$( { printf '%s\n' "${GUEST_PKGS[@]}"; lib_closure; } | sort -u)
pkg_versions() {	# "name=version" for each of $ALLPKGS, one apt-cache call
	# shellcheck disable=SC2086
	apt-cache show --no-all-versions $ALLPKGS 2>/dev/null |
		awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}' | sort -u | tr '\n' ' '
}
PKGVERS=$(pkg_versions)
[ "$(wc -w <<<"$PKGVERS")" -ge "$(wc -w <<<"$ALLPKGS")" ] || { apt_update; PKGVERS=$(pkg_versions); }
UKEY=$(echo "$PKGVERS" | sha256sum | cut -c1-16)
UDIR=$CACHE/userspace/$UKEY
if [ ! -e "$UDIR/.done" ]; then
	note "fetching guest userspace debs"
	rm -rf "$UDIR"; mkdir -p "$UDIR/deb"
	chmod 777 "$UDIR/deb" 2>/dev/null || true
	# shellcheck disable=SC2086
	apt_download "$UDIR/deb" $ALLPKGS
	for d in "$UDIR"/deb/*.deb; do dpkg -x "$d" "$UDIR/root"; done
	echo "$PKGVERS" | tr ' ' '\n' > "$UDIR/versions"
	rm -rf "$UDIR/deb"
	touch "$UDIR/.done"
fi
UROOT=$UDIR/root
ULIBPATH=$UROOT/usr/lib/x86_64-linux-gnu:$UROOT/lib/x86_64-linux-gnu:$UROOT/usr/lib/x86_64-linux-gnu/libibverbs

# --------------------------------------------------------- static initramfs
GUEST_MODULES=(virtio_pci virtio_net 9pnet_virtio 9p netfs fscache crc32_generic
	crc32_pclmul ib_core ib_uverbs ib_umad rdma_cm rdma_ucm rdma_rxe veth dummy
	sch_netem sch_prio sch_ingress cls_u32 act_gact act_mirred ifb)
# not in every kernel (built in, renamed, or not needed); the tc ones are
# for selftests/faults.sh (netem on RoCE traffic only, both directions)
OPTIONAL_MODULES=(netfs fscache crc32_generic crc32_pclmul dummy sch_netem
	sch_prio sch_ingress cls_u32 act_gact act_mirred ifb)
GUEST_TOOLS=(usr/bin/rdma sbin/ip bin/ip sbin/tc usr/bin/ibv_devices usr/bin/ibv_devinfo
	usr/bin/ibv_rc_pingpong usr/bin/ibv_ud_pingpong usr/bin/ibv_uc_pingpong
	usr/bin/ibv_srq_pingpong usr/bin/rping usr/bin/ucmatose usr/bin/udaddy
	usr/bin/rdma_server usr/bin/rdma_client
	usr/bin/ib_write_bw usr/bin/ib_read_bw usr/bin/ib_send_bw usr/bin/ib_send_lat
	usr/bin/ib_atomic_bw usr/bin/ib_atomic_lat usr/bin/ib_write_lat usr/bin/ib_read_lat)

# copy a binary and its libraries (resolved with the deb libs first) into $1
copy_libs() {
	local dst=$1 lib; shift
	for lib in $(LD_LIBRARY_PATH=$ULIBPATH ldd "$@" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | sort -u); do
		case $lib in
		*/ld-linux-x86-64.so.2) [ -e "$dst/lib64/ld-linux-x86-64.so.2" ] || cp -L "$lib" "$dst/lib64/" ;;
		*) [ -e "$dst/usr/lib/x86_64-linux-gnu/${lib##*/}" ] || cp -L "$lib" "$dst/usr/lib/x86_64-linux-gnu/" ;;
		esac
	done
	if LD_LIBRARY_PATH=$ULIBPATH ldd "$@" 2>/dev/null | grep 'not found'; then
		note "warning: unresolved libraries for $*"
	fi
}

build_static() {
	local out=$1 t m f n
	t=$(mktemp -d /tmp/krdma-initrd.XXXXXX)
	mkdir -p "$t"/{bin,sbin,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,proc,sys,dev,tmp,run,root,mnt,krdma}
	ln -s usr/lib "$t/lib"; ln -s usr/lib64 "$t/lib64"
	# busybox with applet links
	cp /bin/busybox "$t/bin/busybox"
	for f in $(/bin/busybox --list-full); do
		[ -e "$t/$f" ] || [ -L "$t/$f" ] || ln -s /bin/busybox "$t/$f"
	done
	# Debian's busybox-static prefers its own applets (ip, tc, modprobe) to
	# PATH: the shells come from the host instead (dash as /bin/sh, bash)
	rm -f "$t/bin/sh" "$t/bin/bash"
	cp /bin/dash "$t/bin/sh"
	cp /bin/bash "$t/bin/bash"
	copy_libs "$t" /bin/dash /bin/bash
	# kmod from the host (handles .ko.xz)
	for n in modprobe insmod rmmod lsmod depmod modinfo kmod; do
		rm -f "$t"/{bin,sbin,usr/bin,usr/sbin}/$n
		ln -s /usr/bin/kmod "$t/sbin/$n"
	done
	cp /usr/bin/kmod "$t/usr/bin/kmod"
	copy_libs "$t" /usr/bin/kmod
	# libgcc_s is dlopen'ed (pthread_cancel, rping)
	cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$t/usr/lib/x86_64-linux-gnu/"
	# iproute2 + rdma-core tools
	for f in "${GUEST_TOOLS[@]}"; do
		[ -e "$UROOT/$f" ] || { note "warning: no $f in the guest debs"; continue; }
		n=${f##*/}
		rm -f "$t"/{bin,sbin,usr/bin,usr/sbin}/"$n"
		cp -L "$UROOT/$f" "$t/usr/sbin/$n"
		copy_libs "$t" "$UROOT/$f"
	done
	mkdir -p "$t/etc/libibverbs.d" "$t/usr/lib/x86_64-linux-gnu/libibverbs" "$t/etc/iproute2"
	cp "$UROOT/etc/libibverbs.d/rxe.driver" "$t/etc/libibverbs.d/"
	for f in "$UROOT"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so; do
		cp -L "$f" "$t/usr/lib/x86_64-linux-gnu/libibverbs/"
		copy_libs "$t" "$f"
	done
	cp -a "$UROOT"/usr/share/iproute2/. "$t/etc/iproute2/" 2>/dev/null || true
	cp -a "$UROOT"/etc/iproute2/. "$t/etc/iproute2/" 2>/dev/null || true
	[ -d "$UROOT/usr/lib/x86_64-linux-gnu/tc" ] && cp -a "$UROOT/usr/lib/x86_64-linux-gnu/tc" "$t/usr/lib/x86_64-linux-gnu/"
	printf 'root:x:0:0:root:/root:/bin/sh\n' > "$t/etc/passwd"
	printf 'root:x:0:\n' > "$t/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n192.0.2.1 vm1\n192.0.2.2 vm2\n' > "$t/etc/hosts"
	[ -e /etc/protocols ] && cp /etc/protocols "$t/etc/"
	[ -e /etc/services ] && cp /etc/services "$t/etc/"
	# kernel modules and their dependencies
	local mods
	mods=$(for m in "${GUEST_MODULES[@]}"; do
		# (an optional module the kernel lacks fails here: not fatal)
		modprobe --show-depends -d "$KROOT" -S "$REL" "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' || true
	done | sort -u)
	for f in $mods; do
		n=${f#"$KROOT"/}
		n=${n#lib/modules/"$REL"/}
		mkdir -p "$t/usr/lib/modules/$REL/$(dirname "$n")"
		cp -L "$f" "$t/usr/lib/modules/$REL/$n"
	done
	# (a kernel with everything built in has no module to copy)
	mkdir -p "$t/usr/lib/modules/$REL"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		[ -e "$KROOT/lib/modules/$REL/$f" ] && cp -L "$KROOT/lib/modules/$REL/$f" "$t/usr/lib/modules/$REL/"
	done
	depmod -b "$t" "$REL"
	( cd "$t" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) > "$out.tmp"
	# pad to 512 bytes so the per-run archive appended after it is found
	truncate -s "%512" "$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$t"
}

SKEY=$( { echo "$KKEY $UKEY"; sha256sum "$SELF" /bin/busybox /usr/bin/kmod; dpkg-query -W libc6 kmod busybox-static 2>/dev/null; } | sha256sum | cut -c1-16)
STATIC=$CACHE/initramfs/$REL-$SKEY.cpio
if [ ! -e "$STATIC" ]; then
	t1=$SECONDS
	mkdir -p "$CACHE/initramfs"
	rm -f "$CACHE/initramfs/$REL"-*.cpio
	build_static "$STATIC"
	note "static initramfs built in $((SECONDS - t1))s ($(du -h "$STATIC" | cut -f1))"
fi

# ------------------------------------------------------------- per-run part
RUNID=$(date +%Y%m%d-%H%M%S)-$REL-$$
RUNDIR=$REPO/build/vm/$RUNID
mkdir -p "$RUNDIR"
ln -sfn "$RUNID" "$REPO/build/vm/last"
NONCE=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
WORK=$(mktemp -d /tmp/krdma-run.XXXXXX)
PIDS=()
# shellcheck disable=SC2317
cleanup() {
	local p
	for p in "$WORK"/qemu*.pid; do
		[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
	[ -n "${KROOT:-}" ] && case $KROOT in /tmp/krdma-kroot.*) rm -rf "$KROOT" ;; esac
	return 0
}
trap cleanup EXIT

cat > "$WORK/init" <<'EOF'
#!/bin/sh
# generated by selftests/vm/run.sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs shm /dev/shm
exec </dev/console >/dev/console 2>&1
. /krdma/config
echo "$MARK:init"	# the kernel came up (run.sh boots again if not)
ulimit -l unlimited
ulimit -c 0
hostname "vm$KRDMA_VM"
status=125
finish() {
	cat /proc/sys/kernel/tainted > /tmp/tainted
	[ -d "$RUNDIR" ] && dmesg > "$RUNDIR/$DMESG_FILE" 2>/dev/null
	echo "$MARK=$status"
	sync
	poweroff -f
	sleep 10
}
# rxe1 on krdma1: by default the kernel delivers traffic between two local
# addresses through lo, where rxe drops it.  Policy routing sends traffic
# from one veth end's address to the other's out through the veth, and the
# local table is consulted for what arrives on a veth end.  Traffic without a
# source address (unbound sockets, rdma_resolve_addr without a source) still
# takes lo, as it would without rxe1.
setup_rxe1() {
	ip addr add 192.0.2.11/24 dev krdma1 || return 1
	ip -6 addr add 2001:db8::11/64 dev krdma1 nodad || return 1
	for f in all default krdma0 krdma1; do
		echo 1 > /proc/sys/net/ipv4/conf/$f/accept_local
		echo 0 > /proc/sys/net/ipv4/conf/$f/rp_filter
	done
	for v in -4 -6; do
		ip $v rule add pref 10 iif krdma0 lookup local || return 1
		ip $v rule add pref 11 iif krdma1 lookup local || return 1
		ip $v rule add pref 30 lookup local || return 1
		ip $v rule del pref 0 lookup local || return 1
	done
	ip -4 rule add pref 20 from 192.0.2.1 to 192.0.2.11 lookup 100 &&
	ip -4 rule add pref 21 from 192.0.2.11 to 192.0.2.1 lookup 100 &&
	ip -4 route add 192.0.2.11 dev krdma0 table 100 &&
	ip -4 route add 192.0.2.1 dev krdma1 table 100 &&
	ip -6 rule add pref 20 from 2001:db8::1 to 2001:db8::11 lookup 100 &&
	ip -6 rule add pref 21 from 2001:db8::11 to 2001:db8::1 lookup 100 &&
	ip -6 route add 2001:db8::11 dev krdma0 table 100 &&
	ip -6 route add 2001:db8::1 dev krdma1 table 100 || return 1
	rdma link add rxe1 type rxe netdev krdma1 || return 1
	ping -c 1 -W 3 -I 192.0.2.1 192.0.2.11 >/dev/null &&
	ping -c 1 -W 3 -I 2001:db8::1 2001:db8::11 >/dev/null
}
setup() {
	for m in $MODULES; do
		opt=
		[ "$m" = dummy ] && opt=numdummies=0
		case " $OPTIONAL_MODULES " in
		*" $m "*) modprobe -q "$m" $opt 2>/dev/null ;;
		*) modprobe "$m" $opt || echo "vm: modprobe $m failed" ;;
		esac
	done
	mkdir -p "$REPO"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none,access=any krdma "$REPO" ||
		{ echo "vm: cannot mount the repo"; return 1; }
	ip link set lo up
	if [ "$KRDMA_VMS" = 1 ]; then
		ip link add krdma0 type veth peer name krdma1 || return 1
		NIC=krdma0
		ip link set krdma1 up
	else
		NIC=eth0
	fi
	ip addr add "$RXE0_ADDR/24" dev $NIC || return 1
	ip -6 addr add "$RXE0_ADDR6/64" dev $NIC nodad || return 1
	ip link set $NIC up || return 1
	rdma link add rxe0 type rxe netdev $NIC || { echo "vm: rdma link add rxe0 failed"; return 1; }
	if [ "$KRDMA_VMS" = 1 ]; then
		if setup_rxe1; then
			export RXE1_ADDR=192.0.2.11 RXE1_ADDR6=2001:db8::11
		else
			echo "vm: no rxe1 (traffic does not cross krdma0/krdma1)"
			rdma link delete rxe1 2>/dev/null
		fi
	fi
	KRDMA_LOADED=0
	if [ "$INSMOD" = 1 ] && [ "$KO_MODPROBE" = 1 ]; then
		# a module installed as a package installs it: modprobe finds it
		depmod -a && modprobe krdma && KRDMA_LOADED=1
	elif [ "$INSMOD" = 1 ]; then
		if [ -e "$KRDMA_KO" ]; then
			insmod "$KRDMA_KO" && KRDMA_LOADED=1
		else
			echo "vm: $KRDMA_KO does not exist"
		fi
	fi
	export KRDMA_LOADED
	return 0
}
if ! setup; then
	echo "vm: setup failed"
	status=125
	finish
fi
export PATH="/krdma/bin:$REPO/build/bin:$REPO/build/selftests:$PATH"
cd "$REPO" || finish
if [ "$KRDMA_VM" = 2 ]; then
	sh /krdma/cmd.sh &
	cmdpid=$!
	sleep 2
	touch "$RUNDIR/peer-ready"
	wait $cmdpid
	status=$?
else
	if [ "$KRDMA_VMS" = 2 ]; then
		i=0
		while [ ! -e "$RUNDIR/peer-ready" ]; do
			i=$((i + 1)); [ $i -gt 600 ] && { echo "vm: the peer never got ready"; break; }
			sleep 1
		done
		i=0
		until ping -c 1 -W 1 "$PEER_ADDR" >/dev/null 2>&1; do
			i=$((i + 1)); [ $i -gt 30 ] && { echo "vm: no ping from the peer"; break; }
		done
	fi
	sh /krdma/cmd.sh
	status=$?
fi
finish
EOF

# the guest's config and command, quoted by bash's printf %q
mkvm() {	# mkvm N OUT.cpio [CMD...]
	local n=$1 out=$2 d=$WORK/vm$1 self peer self6 peer6
	shift 2
	mkdir -p "$d/krdma"
	cp "$WORK/init" "$d/init"; chmod 755 "$d/init"
	if [ "$n" = 1 ]; then self=192.0.2.1 self6=2001:db8::1 peer=192.0.2.2 peer6=2001:db8::2
	else self=192.0.2.2 self6=2001:db8::2 peer=192.0.2.1 peer6=2001:db8::1; fi
	{
		printf 'MARK=%q\n' "$MARK-$NONCE"
		printf 'REPO=%q\nRUNDIR=%q\n' "$REPO" "$RUNDIR"
		printf 'DMESG_FILE=%q\n' "$([ "$n" = 1 ] && echo dmesg.txt || echo peer-dmesg.txt)"
		printf 'MODULES=%q\n' "${GUEST_MODULES[*]}"
		printf 'OPTIONAL_MODULES=%q\n' "${OPTIONAL_MODULES[*]}"
		printf 'INSMOD=%q\n' "$INSMOD"
		printf 'KO_MODPROBE=%q\n' "$([ -n "$KO_FILE" ] && echo 1 || echo 0)"
		printf 'export KRDMA_VM=%q KRDMA_VMS=%q KRDMA_REPO=%q KRDMA_KO=%q\n' "$n" "$VMS" "$REPO" "$KO"
		printf 'export RXE0_ADDR=%q RXE0_ADDR6=%q\n' "$self" "$self6"
		[ "$VMS" = 2 ] && printf 'export PEER_ADDR=%q PEER_ADDR6=%q\n' "$peer" "$peer6"
	} > "$d/krdma/config"
	if [ "$n" = 1 ]; then
		{ printf '#!/bin/sh\nexec'; printf ' %q' "$@"; printf '\n'; } > "$d/krdma/cmd.sh"
	else
		# no CMD2: stay up until the first guest is done
		printf '#!/bin/sh\n%s\n' "${PEER_CMD:-exec sleep 1000000}" > "$d/krdma/cmd.sh"
	fi
	if [ -n "$KO_FILE" ]; then
		mkdir -p "$d${KO%/*}"
		cp "$KO_FILE" "$d$KO"
	fi
	mkdir -p "$d/krdma/bin"
	[ -z "$BIN_DIR" ] || cp -L "$BIN_DIR"/* "$d/krdma/bin/"
	# host-built programs may need libraries the static part lacks
	mkdir -p "$d/usr/lib/x86_64-linux-gnu"
	local progs=() f
	for f in "$REPO"/build/bin/* "$REPO"/build/selftests/* "$d"/krdma/bin/*; do
		[ -f "$f" ] && [ -x "$f" ] && progs+=("$f")
	done
	if [ ${#progs[@]} -gt 0 ]; then
		local have
		have=$(cpio -it --quiet < "$STATIC" 2>/dev/null | sed -n 's|^usr/lib/x86_64-linux-gnu/||p')
		for f in $(LD_LIBRARY_PATH=$ULIBPATH ldd "${progs[@]}" 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
			grep -qxF "${f##*/}" <<<"$have" || cp -L "$f" "$d/usr/lib/x86_64-linux-gnu/"
		done
	fi
	( cd "$d" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) > "$WORK/vm$n.cpio"
	cat "$STATIC" "$WORK/vm$n.cpio" > "$out"
}

mkvm 1 "$WORK/initrd1" "$@"
[ "$VMS" = 2 ] && mkvm 2 "$WORK/initrd2"
flock -u 9
exec 9>&-
note "ready to boot after $((SECONDS - T0))s ($REL, $ACCEL, logs in $RUNDIR)"

APPEND="console=ttyS0,115200 panic=-1 printk.time=1 loglevel=$LOGLEVEL mitigations=off rdinit=/init${EXTRA_APPEND:+ $EXTRA_APPEND}"
qemu_cmd() {	# qemu_cmd N NETARGS...
	local n=$1; shift
	local cpu=(-accel tcg -cpu "$CPU")
	[ "$ACCEL" = kvm ] && cpu=(-accel kvm -cpu host)
	QEMU=(timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 "${cpu[@]}"
		-m "$MEM" -smp 2 -nodefaults -no-user-config -display none -no-reboot
		-serial stdio -kernel "$BZIMAGE" -initrd "$WORK/initrd$n" -append "$APPEND"
		-virtfs "local,path=$REPO,mount_tag=krdma,security_model=none,id=krdma"
		-device virtio-rng-pci -pidfile "$WORK/qemu$n.pid" "$@")
}

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
	echo 34791
}

LOG=$RUNDIR/console.log
PLOG=$RUNDIR/peer-console.log
if [ "$VMS" = 2 ]; then
	PORT=$(free_port)
	qemu_cmd 1 -netdev "socket,id=n0,listen=127.0.0.1:$PORT" -device virtio-net-pci,netdev=n0,mac=52:54:00:4b:52:01
	Q1=("${QEMU[@]}")
	qemu_cmd 2 -netdev "socket,id=n0,connect=127.0.0.1:$PORT" -device virtio-net-pci,netdev=n0,mac=52:54:00:4b:52:02
	Q2=("${QEMU[@]}")
else
	qemu_cmd 1
	Q1=("${QEMU[@]}")
fi

boot() {
	"${Q1[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$LOG" &
	P1=$!
	PIDS+=("$P1")
	if [ "$VMS" = 2 ]; then
		for _ in $(seq 100); do
			ss -Htln "sport = :$PORT" 2>/dev/null | grep -q . && break
			sleep 0.1
		done
		( "${Q2[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$PLOG" | sed -u 's/^/[peer] /' ) &
		P2=$!
		PIDS+=("$P2")
	fi
	wait "$P1"
	if [ "$VMS" = 2 ]; then
		# the peer powers off when CMD2 ends; give it a little time
		for _ in $(seq "$([ -n "$PEER_CMD" ] && echo 20 || echo 1)"); do
			kill -0 "$P2" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "$P2" 2>/dev/null; then
			note "peer guest still running; stopping it"
			[ -s "$WORK/qemu2.pid" ] && kill "$(cat "$WORK/qemu2.pid")" 2>/dev/null
			sleep 1
		fi
		wait "$P2"
	fi
}

# Did every guest's init start?  A kernel that dies before it did (TCG has
# hit an int3 oops in 6.12's text patching at 3 s of boot, once in some
# fifty boots) ran nothing of ours: that boot is tried once more, if it
# ended quickly.  A crash after init started is never retried: it may be
# ours.
guests_started() {
	grep -aq "$MARK-$NONCE:init" "$LOG" || return 1
	[ "$VMS" = 1 ] || grep -aq "$MARK-$NONCE:init" "$PLOG"
}

tb=$SECONDS
set +e
boot
# (a kernel that hangs rather than dies has had the whole watchdog)
if ! guests_started && [ $((SECONDS - tb)) -lt 120 ]; then
	note "a guest kernel died before its init ran; booting again (first console: ${LOG%.log}-boot1.log)"
	cp "$LOG" "${LOG%.log}-boot1.log"
	[ "$VMS" = 2 ] && cp "$PLOG" "${PLOG%.log}-boot1.log"
	boot
fi
set -e
BOOT_TIME=$((SECONDS - tb))

status=$(sed -n "s/^.*$MARK-$NONCE=\([0-9]*\)\$/\1/p" "$LOG" | tail -n 1)
rc=${status:-124}
[ -n "$status" ] || note "no exit status from the guest (watchdog ${TIMEOUT}s expired or guest crashed)"
if [ "$VMS" = 2 ]; then
	pstatus=$(sed -n "s/^.*$MARK-$NONCE=\([0-9]*\)\$/\1/p" "$PLOG" | tail -n 1)
	note "peer command status: ${pstatus:-none}"
fi

BAD='BUG:|WARNING:|Oops|KASAN|kmemleak|hung_task|refcount_t|Kernel panic|UBSAN|general protection fault|soft lockup|rcu.*stall'
bad=0
# kernel lines only (timestamped), so userspace output cannot trip it; the
# full dmesg the guest saved at the end, and the console (which has what a
# crashed guest could not save)
KPAT="\[ *[0-9]+\.[0-9]+\] .*($BAD)"
# what a debug kernel (kmemleak) says at every boot is not a problem, nor
# is its command line (kmemleak=on), nor kmemleak falling back to a full
# scan when its own bookkeeping allocation fails (fail-nth injects that)
KOK='kmemleak: (Kernel memory leak detector initialized|Automatic memory scanning thread (started|ended)|Cannot allocate a scan area)|[Cc]ommand line: '
for pair in "$RUNDIR/dmesg.txt $LOG" "$RUNDIR/peer-dmesg.txt $PLOG"; do
	shown=0
	for f in $pair; do
		[ -e "$f" ] || continue
		grep -aE "$KPAT" "$f" | grep -avE "$KOK" >/dev/null || continue
		bad=1
		[ $shown = 1 ] && continue
		shown=1
		echo "run.sh: kernel problems in ${f#"$REPO"/}:" >&2
		grep -avE "$KOK" "$f" | grep -aE -A 25 "$KPAT" | head -n 120 >&2
	done
done
if [ $bad = 1 ] && [ "$rc" = 0 ]; then rc=1; fi
if [ -z "$status" ]; then
	echo "run.sh: last kernel messages:" >&2
	grep -aE '^\[ *[0-9]+\.[0-9]+\]' "$LOG" | tail -n 40 >&2 || true
fi
note "exit $rc (guest run ${BOOT_TIME}s, total $((SECONDS - T0))s, log ${LOG#"$REPO"/})"
exit "$rc"
