#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# guest-init.sh: /init of the test VM (selftests/vm/run.sh puts it in the
# initramfs).  It mounts what a system needs, loads the modules, mounts the
# repository over 9p, brings up rxe0 (and rxe1 on the other end of a veth
# pair, one guest) or eth0's rxe0 (two guests), loads krdma, runs the
# command of /krdma/cmd.sh and powers off, printing the exit status for
# run.sh after the marker it was given.  /krdma/config, written by run.sh,
# sets MARK, REPO, RUNDIR, DMESG_FILE, MODULES, OPTIONAL_MODULES,
# SIW_MODULES, SIW (0: no siw0), NIC_MAC and SIW_MAC (two guests: rxe0's
# NIC and siw0's), INSMOD, KO_MODPROBE and the exported WATCHDOG_S (the
# uptime at which to report a command that has not ended, 0 for never),
# KRDMA_*, RXE0_ADDR*, PEER_ADDR*.
# shellcheck disable=SC1091 # written by run.sh, in the guest
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
# shellcheck disable=SC3045 # the guest's /bin/sh is dash, which has them
ulimit -l unlimited
# shellcheck disable=SC3045
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
# Before run.sh's watchdog ends the guest, say what the command is stuck
# in: the kernel stack of every thread running or waiting uninterruptibly
# (threads too: a test's stuck call may be in a thread of its own), and
# every CPU's backtrace on the console.
guest_watchdog() {
	sleep "$1"
	echo "vm: watchdog: up $1 s, the command has not ended; threads running or blocked:"
	for t in /proc/[0-9]*/task/[0-9]*; do
		s=$(sed -n 's/^State:[[:space:]]*\([RD]\).*/\1/p' "$t/status" 2>/dev/null)
		[ -n "$s" ] || continue
		echo "vm: watchdog: thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)) $s"
		sed 's/^/vm: watchdog:   /' "$t/stack" 2>/dev/null | head -n 16
	done
	echo 1 > /proc/sys/kernel/sysrq
	echo 8 > /proc/sys/kernel/printk
	echo l > /proc/sysrq-trigger
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
# siw0 (soft-iWARP) on a netdev of its own, ksiw0 (one guest: a veth end;
# two: the second NIC): rdma_cm picks the device by the netdev of the bound
# address, and of two devices on one netdev the first registered.  siw
# runs over kernel TCP sockets, so its traffic to its own address goes over
# lo and works (unlike rxe's).  A guest without siw0 runs everything else
# as before: it only says why.
# (198.51.100.0/24 is the tests' address of no host: not that one.)
setup_siw0() {
	[ "$SIW" != 0 ] || { SIW_WHY="KRDMA_SIW=0"; return 1; }
	for m in $SIW_MODULES; do
		modprobe -q "$m" 2>/dev/null
	done
	err=$(modprobe siw 2>&1) || { SIW_WHY="modprobe siw: ${err:-failed}"; return 1; }
	if [ "$KRDMA_VMS" = 1 ]; then
		# a veth end: siw wants an Ethernet netdev with carrier, and a
		# dummy's unknown speed has ib_core warn at every port query
		{ ip link add ksiw0 type veth peer name ksiw1 &&
		  ip link set ksiw1 up; } || { SIW_WHY="cannot add ksiw0"; return 1; }
	elif [ ! -e /sys/class/net/ksiw0 ]; then
		SIW_WHY="no NIC with MAC $SIW_MAC"
		return 1
	fi
	if ! { ip addr add "203.0.113.$KRDMA_VM/24" dev ksiw0 &&
	       ip -6 addr add "2001:db8:113::$KRDMA_VM/64" dev ksiw0 nodad &&
	       ip link set ksiw0 up; }; then
		SIW_WHY="cannot set up ksiw0"
		return 1
	fi
	err=$(rdma link add siw0 type siw netdev ksiw0 2>&1) ||
		{ SIW_WHY="rdma link add siw0: ${err:-failed}"; return 1; }
}
# name_nic MAC NAME: the NIC with MAC (run.sh's) is NAME, whatever the
# order the two were found in
name_nic() {
	for mac_file in /sys/class/net/*/address; do
		[ "$(cat "$mac_file")" = "$1" ] || continue
		nic=${mac_file%/address}
		nic=${nic##*/}
		[ "$nic" = "$2" ] || ip link set "$nic" name "$2"
		return
	done
	return 1
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
		# rxe0's NIC is eth0 (faults.sh's), siw0's ksiw0
		name_nic "$SIW_MAC" ksiw0
		name_nic "$NIC_MAC" eth0 || { echo "vm: no NIC with MAC $NIC_MAC"; return 1; }
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
	if setup_siw0; then
		export SIW0_ADDR="203.0.113.$KRDMA_VM" SIW0_ADDR6="2001:db8:113::$KRDMA_VM"
		p=$((3 - KRDMA_VM))
		[ "$KRDMA_VMS" = 2 ] &&
			export PEER_SIW0_ADDR="203.0.113.$p" PEER_SIW0_ADDR6="2001:db8:113::$p"
	else
		echo "vm: no siw0 ($SIW_WHY)"
		export KRDMA_NO_SIW="$SIW_WHY"
		rdma link delete siw0 2>/dev/null
	fi
	KRDMA_LOADED=0
	# the node opened to all, as an administrator may: the tests'
	# unprivileged user (uid 65534) opens it too (there is no udev here)
	if [ "$INSMOD" = 1 ] && [ "$KO_MODPROBE" = 1 ]; then
		# a module installed as a package installs it: modprobe finds it
		depmod -a && modprobe krdma dev_mode=0666 && KRDMA_LOADED=1
	elif [ "$INSMOD" = 1 ]; then
		if [ -e "$KRDMA_KO" ]; then
			insmod "$KRDMA_KO" dev_mode=0666 && KRDMA_LOADED=1
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
[ "${WATCHDOG_S:-0}" -gt 0 ] && guest_watchdog "$WATCHDOG_S" &
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
