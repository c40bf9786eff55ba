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
# and userspace debs, extracted, keyed by version, siw.ko built for each
# kernel, and the static initramfs.  KRDMA_SIW=0: no siw.ko, no siw0.
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
#   SIW0_ADDR, SIW0_ADDR6   203.0.113.1, 2001:db8:113::1 (--vms 2: .2 and
#                       ::2 in the peer guest) under siw0, soft-iWARP, on
#                       ksiw0: a veth end (one guest) or the second NIC
#                       (two guests); unset if siw0 could not be set up
#                       ("vm: no siw0")
#   PEER_SIW0_ADDR, PEER_SIW0_ADDR6   (--vms 2) the other guest's
#   KRDMA_NO_SIW        why there is no siw0 ("KRDMA_SIW=0": not wanted)
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
# siw0 has a netdev of its own: rdma_cm picks the device by the netdev of
# the bound address, the first registered when two share one.  siw runs
# over kernel TCP sockets, so siw0 talking to its own address works over lo.
# Debian builds no siw: siw.sh builds siw.ko from the kernel's Debian source
# package, once per kernel, and the static initramfs carries it.
# --vms 2: eth0 (virtio-net, socket netdev on 127.0.0.1) under rxe0 in each,
# and a second wire of the same kind, renamed ksiw0, under siw0.
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
# shellcheck source=selftests/vm/initramfs.sh
. "$VMDIR/initramfs.sh"
# shellcheck source=selftests/vm/siw.sh
. "$VMDIR/siw.sh"
CACHE=${KRDMA_CACHE:-/var/cache/krdma}
MARK=KRDMA-EXIT-STATUS
# (--vms 2) the MAC prefixes of rxe0's netdev and siw0's, :01 and :02 for
# the guests
NIC_MAC=52:54:00:4b:52
SIW_MAC=52:54:00:4b:53

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
# (printf %q writes a newline as $'\n', which the guest's dash cannot read)
for a in "$@"; do
	case $a in *$'\n'*) die "CMD cannot hold a newline" ;; esac
done
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
	# (a kernel of our own has siw built in, or goes without siw0)
	SIW_KO=
else
	kernel_resolve "$KERNEL"
	kernel_fetch_image
	siw_module
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

# --------------------------------- guest userspace and static initramfs
guest_userspace
static_initramfs

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


# the guest's config and command, quoted by bash's printf %q
mkvm() {	# mkvm N OUT.cpio [CMD...]
	local n=$1 out=$2 d=$WORK/vm$1 self peer self6 peer6
	shift 2
	mkdir -p "$d/krdma"
	cp "$VMDIR/guest-init.sh" "$d/init"; chmod 755 "$d/init"
	if [ "$n" = 1 ]; then self=192.0.2.1 self6=2001:db8::1 peer=192.0.2.2 peer6=2001:db8::2
	else self=192.0.2.2 self6=2001:db8::2 peer=192.0.2.1 peer6=2001:db8::1; fi
	{
		printf 'MARK=%q\n' "$MARK-$NONCE"
		printf 'REPO=%q\nRUNDIR=%q\n' "$REPO" "$RUNDIR"
		printf 'DMESG_FILE=%q\n' "$([ "$n" = 1 ] && echo dmesg.txt || echo peer-dmesg.txt)"
		printf 'MODULES=%q\n' "${GUEST_MODULES[*]}"
		printf 'OPTIONAL_MODULES=%q\n' "${OPTIONAL_MODULES[*]}"
		printf 'SIW_MODULES=%q\n' "${SIW_MODULES[*]}"
		printf 'SIW=%q\n' "${KRDMA_SIW:-1}"
		printf 'NIC_MAC=%q SIW_MAC=%q\n' "$NIC_MAC:0$n" "$SIW_MAC:0$n"
		printf 'INSMOD=%q\n' "$INSMOD"
		# (guest uptime: the watchdog counts from qemu's start, a little before)
		printf 'export WATCHDOG_S=%q\n' "$((TIMEOUT >= 300 ? TIMEOUT - 90 : 0))"
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
	# two wires: eth0 (rxe0) and, with its own MAC, siw0's netdev
	PORT=$(free_port)
	SPORT=$(free_port)
	for _ in 1 2 3 4 5; do
		[ "$SPORT" != "$PORT" ] && break
		SPORT=$(free_port)
	done
	qemu_cmd 1 -netdev "socket,id=n0,listen=127.0.0.1:$PORT" -device "virtio-net-pci,netdev=n0,mac=$NIC_MAC:01" \
		-netdev "socket,id=n1,listen=127.0.0.1:$SPORT" -device "virtio-net-pci,netdev=n1,mac=$SIW_MAC:01"
	Q1=("${QEMU[@]}")
	qemu_cmd 2 -netdev "socket,id=n0,connect=127.0.0.1:$PORT" -device "virtio-net-pci,netdev=n0,mac=$NIC_MAC:02" \
		-netdev "socket,id=n1,connect=127.0.0.1:$SPORT" -device "virtio-net-pci,netdev=n1,mac=$SIW_MAC:02"
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
			[ "$(ss -Htln "( sport = :$PORT or sport = :$SPORT )" 2>/dev/null | wc -l)" -ge 2 ] && break
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
# ours, but for the same int3 with no krdma function in its trace (7.2:
# udp6_ehashfn() at a first UDPv6 connect, whose net_get_random_once()
# key was being patched out, a CPU trapping on a breakpoint the patching
# CPU had already taken back; __schedule() while an ftrace instance's
# removal patched it).
guests_started() {
	grep -aq "$MARK-$NONCE:init" "$LOG" || return 1
	[ "$VMS" = 1 ] || grep -aq "$MARK-$NONCE:init" "$PLOG"
}

# int3_not_ours FILE: FILE has an "Oops: int3", and every such report, up
# to its end trace, names no function of krdma's in its call chain (a
# "?" frame is a stale word of the stack, not a caller) and was at a
# function of the kernel's own text (a bare address may be a module's
# freed text, which 7.2 fills with int3s).  A report the panic cut short
# (a second CPU's, when the first CPU's panic stops it) counts only if it
# printed its whole trace before the panic, or trapped where a whole
# report already did; a krdma frame anywhere after it (an NMI backtrace)
# still makes it ours.  Any other oops or BUG makes the crash ours.
int3_not_ours() {
	[ -e "$1" ] || return 1
	awk '
		function judge() {
			if (open && !mine && core && (ended || traced || rip in clean))
				ok++
			if (open && ended && !mine && core)
				clean[rip] = 1
			open = 0
		}
		/\] Oops: int3/ {
			judge(); open = 1; mine = 0; core = 0; traced = 0
			ended = 0; cut = 0; rip = ""; n++; next
		}
		/\] (Oops|BUG|general protection fault)/ { other = 1 }
		open && /\[krdma\]/ && !/\] +\? / { mine = 1 }
		open && !cut && /RIP: 0010:[A-Za-z0-9_.]+\+0x[0-9a-f]+\/0x[0-9a-f]+[ \t]*$/ {
			core = 1; if (rip == "") rip = $NF
		}
		open && !cut && /<\/TASK>/ { traced = 1 }
		open && /Kernel panic - not syncing|NMI backtrace for cpu/ { cut = 1 }
		open && /---\[ end trace/ { ended = !cut; judge() }
		END { judge(); exit !(n && ok == n && !other) }
	' "$1"
}

emulator_crash() {
	int3_not_ours "$LOG" || { [ "$VMS" = 2 ] && int3_not_ours "$PLOG"; }
}

tb=$SECONDS
set +e
boot
# (a kernel that hangs rather than dies has had the whole watchdog)
if ! guests_started && [ $((SECONDS - tb)) -lt 120 ]; then
	again="a guest kernel died before its init ran"
elif emulator_crash; then
	again="a guest kernel died of an int3 in text patching, not in krdma; what the run printed above does not count"
else
	again=
fi
if [ -n "$again" ]; then
	note "$again; booting again (first console: ${LOG%.log}-boot1.log)"
	cp "$LOG" "${LOG%.log}-boot1.log"
	[ "$VMS" = 2 ] && cp "$PLOG" "${PLOG%.log}-boot1.log"
	rm -f "$RUNDIR/dmesg.txt" "$RUNDIR/peer-dmesg.txt" "$RUNDIR/peer-ready"
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
# lockdep's report of siw's sk_callback_lock, a kernel bug
# (docs/known-problems.rst), is not krdma's: known when every such report
# of the log names siw's callback and the socket lock within 200 lines
SIW_LOCKDEP='WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected'
siw_lockdep_only() {	# siw_lockdep_only FILE
	awk -v w="$SIW_LOCKDEP" '
		index($0, w) { n = NR; reports++ }
		n && NR <= n + 200 && /siw_cm_llp_(data_ready|state_change)/ { s[n] = 1 }
		n && NR <= n + 200 && /\(clock-AF_INET\)/ { c[n] = 1 }
		END { for (k in s) if (c[k]) known++; exit !(reports && known == reports) }
	' "$1"
}
for pair in "$RUNDIR/dmesg.txt $LOG" "$RUNDIR/peer-dmesg.txt $PLOG"; do
	shown=0
	for f in $pair; do
		[ -e "$f" ] || continue
		kok=$KOK
		if siw_lockdep_only "$f"; then
			kok="$KOK|$SIW_LOCKDEP"
		fi
		grep -aE "$KPAT" "$f" | grep -avE "$kok" >/dev/null || continue
		bad=1
		[ $shown = 1 ] && continue
		shown=1
		echo "run.sh: kernel problems in ${f#"$REPO"/}:" >&2
		grep -avE "$kok" "$f" | grep -aE -A 25 "$KPAT" | head -n 120 >&2
	done
done
if [ $bad = 1 ] && [ "$rc" = 0 ]; then rc=1; fi
if [ -z "$status" ]; then
	echo "run.sh: last kernel messages:" >&2
	grep -aE '^\[ *[0-9]+\.[0-9]+\]' "$LOG" | tail -n 40 >&2 || true
fi
note "exit $rc (guest run ${BOOT_TIME}s, total $((SECONDS - T0))s, log ${LOG#"$REPO"/})"
exit "$rc"
