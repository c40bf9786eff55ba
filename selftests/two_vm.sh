#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Transfers between two VMs joined by qemu socket netdevs, rxe0 on each
# over the first, siw0 over the second:
# run.sh --vms 2 --peer-cmd selftests/two_vm_peer.sh -- selftests/two_vm.sh
# Prints TAP and ends with "siw0: N passed, N failed, N skipped" (the cases
# over siw0) and "N passed, N failed, N skipped" (all).

KRDMA_REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
PATH=$KRDMA_REPO/build/bin:$PATH
export PATH

pass=0 fail=0 skip=0 n=0
gidx=$(grep -l '0000:0000:0000:0000:0000:ffff:' \
	/sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | head -n 1)
gidx=${gidx##*/}

# The run's time: every case ends within what is left of it, so the run
# prints its summary (and names what overran) a minute before the guest's
# watchdog (WATCHDOG_S, uptime) reports it stuck and run.sh ends it.
T_START=$(date +%s)
up=$(cut -d. -f1 /proc/uptime)
wd=${WATCHDOG_S:-0}
[ "$wd" -gt 0 ] || wd=100000
BUDGET=${TWO_VM_BUDGET:-$((wd - up - 60))}
CASE_MAX=${TWO_VM_CASE_MAX:-240}	# krdma_faults: TWO_VM_FAULTS_MAX, 300

# time_left SECS: SECS, or what is left of the budget if that is less
time_left() {
	left=$((BUDGET - ($(date +%s) - T_START)))
	if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# capped CMD...: CMD (a program or a function of faults.sh) ended after
# at most case_max seconds (CASE_MAX unless a caller says) or the time
# left; 124 then, and no fault left on the wire.  CMD runs in a session of
# its own whose whole process group is killed: a function's programs too
# (busybox's timeout signals only the one process it started).
case_max=$CASE_MAX
capped() {
	secs=$(time_left "$case_max")
	[ "$secs" -gt 0 ] || { echo "no time left of the run's ${BUDGET} s"; return 124; }
	flag=/tmp/krdma-capped.$$
	rm -f "$flag"
	# shellcheck disable=SC2016 # expanded by the inner sh
	setsid /bin/sh -c 'FAULTS_SOURCED=1 . "$0"; "$@"' \
		"$KRDMA_REPO/selftests/faults.sh" "$@" &
	cpid=$!
	# (the timer's output is not the caller's pipe: it may outlive CMD)
	setsid /bin/sh -c 'sleep "$1"; touch "$2"; kill -TERM -"$3"; sleep 10;
		      kill -KILL -"$3"' capped "$secs" "$flag" "$cpid" \
		>/dev/null 2>&1 &
	tpid=$!
	wait "$cpid" && cc=0 || cc=$?
	# the timer by its pid (it may not have made its group yet), then its
	# sleep by its group; and what CMD left behind, which would hold the
	# caller's pipe open
	kill -KILL "$tpid" 2>/dev/null
	kill -KILL -"$tpid" 2>/dev/null
	wait "$tpid" 2>/dev/null
	kill -KILL -"$cpid" 2>/dev/null
	[ -e "$flag" ] || return $cc
	rm -f "$flag"
	echo "timed out after $secs s"
	fault_clear
	return 124
}

# check NAME CMD...: one TAP line; the peer's servers may still be starting
check() {
	name=$1
	shift
	n=$((n + 1))
	tries=0
	while :; do
		out=$(capped "$@" 2>&1) && rc=0 || rc=$?
		tries=$((tries + 1))
		# (a case that ran out of time is not tried again)
		if [ $rc != 0 ] && [ $rc != 124 ] && [ $tries -lt 3 ] &&
		   echo "$out" | grep -qi 'refused\|unreachable'; then
			sleep 2
			continue
		fi
		break
	done
	echo "$out" | sed 's/^/# /'
	if [ $rc = 0 ]; then
		echo "ok $n $name"
		pass=$((pass + 1))
	else
		echo "not ok $n $name # exit $rc"
		fail=$((fail + 1))
	fi
}

# skip NAME WHY: one TAP line, a test this kernel cannot run
skip() {
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
	skip=$((skip + 1))
}

# Does this kernel's rxe have the defects of 5.10's (krdma_test.h,
# kt_rxe_defect())?
rxe_before_6_1() {
	rel=$(uname -r)
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%.*}
	[ -e /sys/module/rdma_rxe ] &&
		{ [ "$major" -lt 6 ] || { [ "$major" = 6 ] && [ "$minor" -lt 1 ]; }; }
}

# xvm: the transfer matrix (build/selftests/krdma_xvm) against the peer's
# krdma_xvm --serve.  One TAP line; its test cases count in the summary
# one by one (from its "# Totals:" line), and a crash or a timeout without
# failed cases counts as one failure.
xvm() {
	n=$((n + 1))
	exe=$KRDMA_REPO/build/selftests/krdma_xvm
	log=/tmp/krdma-xvm.$$.log
	if [ ! -x "$exe" ]; then
		echo "not ok $n krdma_xvm # not built (make selftests)"
		fail=$((fail + 1))
		return
	fi
	t0=$(date +%s)
	secs=$(time_left "$XVM_TIMEOUT")
	if [ "$secs" -le 0 ]; then
		echo "not ok $n krdma_xvm # no time left of the run's ${BUDGET} s"
		fail=$((fail + 1))
		return
	fi
	{ XVM_PORT=18620 timeout -k 10 "$secs" "$exe" 2>&1
	  echo $? >"$log.rc"; } | tee "$log" | sed 's/^/# /'
	rc=$(cat "$log.rc" 2>/dev/null)
	rc=${rc:-1}
	x_pass=0 x_fail=0 x_skip=0
	totals=$(grep '^# Totals: pass:' "$log" | tail -n 1)
	if [ -n "$totals" ]; then
		# shellcheck disable=SC2046 # six numbers, split on purpose
		set -- $(echo "$totals" | sed 's/.*pass:\([0-9]*\) fail:\([0-9]*\) xfail:\([0-9]*\) xpass:\([0-9]*\) skip:\([0-9]*\) error:\([0-9]*\).*/\1 \2 \3 \4 \5 \6/')
		if [ $# -eq 6 ]; then
			x_pass=$(($1 + $3)) x_fail=$(($2 + $4 + $6)) x_skip=$5
		else
			totals=
		fi
	fi
	if [ -z "$totals" ] || { [ "$rc" != 0 ] && [ "$x_fail" = 0 ]; }; then
		x_fail=$((x_fail + 1))
	fi
	pass=$((pass + x_pass)) fail=$((fail + x_fail)) skip=$((skip + x_skip))
	echo "# krdma_xvm: exit $rc, $x_pass passed, $x_fail failed, $x_skip skipped in $(($(date +%s) - t0)) s"
	if [ "$x_fail" = 0 ]; then
		echo "ok $n krdma_xvm"
	else
		echo "not ok $n krdma_xvm # exit $rc"
	fi
	rm -f "$log" "$log.rc"
}
XVM_TIMEOUT=${XVM_TIMEOUT:-420}

# faults: run a selftest program that needs the peer (krdma_faults), one
# TAP line per program as for krdma_xvm but simpler
prog() {
	name=$1
	shift
	exe=$KRDMA_REPO/build/selftests/$name
	if [ ! -x "$exe" ]; then
		n=$((n + 1))
		echo "not ok $n $name # not built (make selftests)"
		fail=$((fail + 1))
		return
	fi
	case_max=${TWO_VM_FAULTS_MAX:-300}
	check "$name" "$exe" "$@"
	case_max=$CASE_MAX
}

FAULTS_SOURCED=1
. "$KRDMA_REPO/selftests/faults.sh"

echo "TAP version 13"
echo "1..25"
check ping ping -c 2 -W 5 "$PEER_ADDR"

# The server's buffer starts filled with its pattern: read it before the
# write and the copy overwrite it.
check read_64k krdmactl read -T 60 -s 65536 -o 65536 "$PEER_ADDR:18600"
check write_64k krdmactl write -T 60 -s 65536 "$PEER_ADDR:18600"
# (a resent atomic can panic the answering host on 5.10's rxe:
# KT_RXE_ATOMIC_RESEND in krdma_test.h)
if rxe_before_6_1; then
	skip atomic_fadd "rxe of Linux $(uname -r) resends a sent skb for a resent atomic (panics)"
else
	check atomic_fadd krdmactl atomic fadd -T 60 --add 7 -o 131072 \
		"$PEER_ADDR:18600"
fi
# A file four times the server's buffer, digest checked by the receiver.
head -c 1048576 /dev/urandom > /tmp/krdma-copy.bin
check copy_1mib krdmactl copy -T 60 /tmp/krdma-copy.bin "$PEER_ADDR:18600"
check pingpong_rc krdmactl pingpong -p 18610 -n 200 -c -T 60 "$PEER_ADDR"
check pingpong_ud krdmactl pingpong -t ud -p 18611 -s 1024 -n 200 -T 60 \
	"$PEER_ADDR"
check pingpong_rc_ibv_server krdmactl pingpong -p 18612 -n 200 -c -T 60 \
	"$PEER_ADDR"

# iWARP across the second wire (siw0 on each side): transfers, a copy and
# rping's interop, both roles.  The server's pattern is read first.  Their
# counts make a "siw0: ..." line of their own, for make check's per-driver
# sums.
p0=$pass f0=$fail s0=$skip
if [ -n "${PEER_SIW0_ADDR:-}" ]; then
	check siw_read_64k krdmactl read -T 60 -s 65536 -o 65536 \
		"$PEER_SIW0_ADDR:18650"
	check siw_write_64k krdmactl write -T 60 -s 65536 "$PEER_SIW0_ADDR:18650"
	check siw_copy_1mib krdmactl copy -T 60 /tmp/krdma-copy.bin \
		"$PEER_SIW0_ADDR:18650"
	check siw_rping_rping_server krdmactl rping -a "$PEER_SIW0_ADDR" \
		-p 18651 -S 64 -C 10 -V -T 60
	check siw_rping_krdmactl_server timeout -k 5 60 rping -c \
		-a "$PEER_SIW0_ADDR" -p 18652 -S 64 -C 10 -V
elif [ "${KRDMA_NO_SIW:-}" = KRDMA_SIW=0 ]; then
	for t in read_64k write_64k copy_1mib rping_rping_server \
		 rping_krdmactl_server; do
		skip "siw_$t" "no siw0 (KRDMA_SIW=0)"
	done
else
	for t in read_64k write_64k copy_1mib rping_rping_server \
		 rping_krdmactl_server; do
		n=$((n + 1))
		why=${KRDMA_NO_SIW:-no PEER_SIW0_ADDR from the bed}
		echo "not ok $n siw_$t # no siw0 ($why)"
		fail=$((fail + 1))
	done
fi
siw_line="siw0: $((pass - p0)) passed, $((fail - f0)) failed, $((skip - s0)) skipped"

xvm

# Faults on the wire (selftests/faults.sh): netem on the RoCE traffic only,
# both ways.  Each case removes its qdiscs.
head -c 1048576 /dev/urandom > /tmp/krdma-fault.bin
check rc_netem_loss f_rc_under loss 3%
check rc_netem_delay_reorder f_rc_under delay 10ms reorder 25% 50%
check rc_netem_duplicate f_rc_under duplicate 5%
check rc_netem_corrupt f_rc_under corrupt 3%
check rc_netem_mixed f_rc_under loss 1% duplicate 1% corrupt 1% delay 2ms 1ms
prog krdma_faults
check rc_total_loss_retry_exc f_total_loss
# SEND_ONLY_WITH_IMMEDIATE: 0x65 on UD, 0x25 on UC
check ud_stream_exact_loss f_stream_loss ud 0x65 "$F_RC"
check uc_stream_exact_loss f_stream_loss uc 0x25 "$F_UC"
check copy_link_flap_resume f_flap
check accept_rtu_lost f_rtu_lost
fault_clear

echo "$siw_line"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
