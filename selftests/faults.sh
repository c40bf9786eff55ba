#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# faults.sh: faults on the wire for the two-VM run.
# tc acts on the RoCE v2 traffic only (UDP destination port 4791, which is
# every RoCE packet, both ways), on $FAULT_DEV (default eth0) of this VM:
# egress through a prio qdisc whose fourth band (no priomap entry uses
# it) has netem, ingress redirected to ifb0 which has the same netem.
#
#   faults.sh netem [-d] NETEM-ARGS...   e.g. netem loss 3%; -d spares the
#                                        CM's MADs (BTH destination QP 1)
#   faults.sh drop-every N OPCODE        egress only: every N-th packet
#                                        whose BTH opcode is OPCODE (act_gact
#                                        "random determ": deterministic)
#   faults.sh clear                      back to no qdisc
#
# two_vm.sh sources it (FAULTS_SOURCED=1) for fault_* and the cases.

FAULT_DEV=${FAULT_DEV:-eth0}
FAULT_IFB=${FAULT_IFB:-ifb0}
# u32 offsets from the IPv4 header (20 bytes, RoCE sets no options)
FAULT_ROCE="match ip protocol 17 0xff match ip dport 4791 0xffff"
FAULT_QP1="match u32 0x00000001 0x00ffffff at 32"	# BTH dest QP

fault_clear() {
	tc qdisc del dev "$FAULT_DEV" root 2>/dev/null
	tc qdisc del dev "$FAULT_DEV" ingress 2>/dev/null
	tc qdisc del dev "$FAULT_IFB" root 2>/dev/null
	ip link set "$FAULT_IFB" down 2>/dev/null
	return 0
}

# fault_netem [-d] NETEM-ARGS...
fault_netem() {
	fn_data=0
	[ "$1" = -d ] && { fn_data=1; shift; }
	fault_clear
	[ -e "/sys/class/net/$FAULT_IFB" ] || modprobe ifb 2>/dev/null
	ip link set "$FAULT_IFB" up || return 1
	tc qdisc add dev "$FAULT_DEV" root handle 1: prio bands 4 || return 1
	tc qdisc add dev "$FAULT_DEV" parent 1:4 handle 40: netem "$@" ||
		return 1
	if [ $fn_data = 1 ]; then
		# shellcheck disable=SC2086
		tc filter add dev "$FAULT_DEV" parent 1: protocol ip prio 1 \
			u32 $FAULT_ROCE $FAULT_QP1 flowid 1:1 || return 1
	fi
	# shellcheck disable=SC2086
	tc filter add dev "$FAULT_DEV" parent 1: protocol ip prio 2 \
		u32 $FAULT_ROCE flowid 1:4 || return 1
	tc qdisc add dev "$FAULT_DEV" handle ffff: ingress || return 1
	if [ $fn_data = 1 ]; then
		# shellcheck disable=SC2086
		tc filter add dev "$FAULT_DEV" parent ffff: protocol ip prio 1 \
			u32 $FAULT_ROCE $FAULT_QP1 action gact ok || return 1
	fi
	# shellcheck disable=SC2086
	tc filter add dev "$FAULT_DEV" parent ffff: protocol ip prio 2 \
		u32 $FAULT_ROCE action mirred egress redirect \
		dev "$FAULT_IFB" || return 1
	tc qdisc add dev "$FAULT_IFB" root netem "$@" || return 1
}

# fault_netem_change NETEM-ARGS...: new parameters for fault_netem's two
# netem qdiscs, in place.  Installing a root qdisc swaps the device's
# queue under packets in flight, which on rxe 6.12 can move a live RC QP
# to the error state (a flush at once, seen with "tc qdisc add ... root"
# during a copy); a change of netem's parameters leaves the qdiscs be.
fault_netem_change() {
	tc qdisc change dev "$FAULT_DEV" parent 1:4 handle 40: netem "$@" ||
		return 1
	tc qdisc change dev "$FAULT_IFB" root netem "$@"
}

# fault_drop_every N OPCODE: egress packets with that BTH opcode (IP
# offset 28), every N-th dropped; the count starts with the filter
fault_drop_every() {
	fault_clear
	tc qdisc add dev "$FAULT_DEV" root handle 1: prio bands 4 || return 1
	# shellcheck disable=SC2086
	tc filter add dev "$FAULT_DEV" parent 1: protocol ip prio 1 \
		u32 $FAULT_ROCE match u8 "$2" 0xff at 28 flowid 1:1 \
		action gact ok random determ drop "$1" || return 1
}

if [ "${FAULTS_SOURCED:-}" != 1 ]; then
	case ${1:-} in
	netem) shift; fault_netem "$@" ;;
	drop-every) shift; fault_drop_every "$@" ;;
	clear) fault_clear ;;
	*) echo "usage: faults.sh netem [-d] ARGS... | drop-every N OPCODE | clear" >&2
	   exit 2 ;;
	esac
	exit
fi

# ---- the cases (two_vm.sh's check() runs them; output shows as comments)

# the peer's servers (two_vm_peer.sh)
F_RC=$PEER_ADDR:18602	# rc,ud: copies, writes, UD streams; --save
# shellcheck disable=SC2034 # two_vm.sh, which sources this, uses it
F_UC=$PEER_ADDR:18603	# uc streams
F_RO=$PEER_ADDR:18604	# reads: never written, its pattern stays

# f_rc_under NETEM-ARGS...: RC copy (SHA-256 checked by the server), write
# (pattern checked by the server), read (checked here) and send (CRC-32)
# under the impairment, both ways
f_rc_under() {
	fault_netem "$@" || { echo "tc netem $* failed"; fault_clear; return 1; }
	echo "netem $* on UDP 4791, both ways"
	fr=0
	krdmactl copy -T 60 /tmp/krdma-fault.bin "$F_RC" || fr=1
	krdmactl write -T 60 -s 65536 -o 0 "$F_RC" || fr=1
	krdmactl read -T 60 -s 65536 -o 4096 "$F_RO" || fr=1
	krdmactl send -T 60 -s 4096 "$F_RC" || fr=1
	tc -s qdisc show dev "$FAULT_DEV" | grep -A2 netem
	tc -s qdisc show dev "$FAULT_IFB" | grep -A2 netem
	fault_clear
	return $fr
}

# 100% loss of the data packets: the RC op fails with RETRY_EXC_ERR (the
# tool names it and the bound), exits 1, long before its own -T.  The
# connection asks for retry_cnt 3 (--retry, KRDMA_CONN_CM_TIMERS): krdma's
# default 7 is what kernel ULPs use, and rxe takes it as "retry forever"
# (rxe_comp.c only counts down a retry_cnt other than 7).
f_total_loss() {
	fault_netem -d loss 100% || { fault_clear; return 1; }
	t0=$(date +%s)
	# --retry 3: krdma's default 7 means "forever" to rxe (uapi/krdma.h)
	out=$(krdmactl write --retry 3 -T 60 -s 65536 "$F_RC" 2>&1)
	rc=$?
	t1=$(date +%s)
	fault_clear
	echo "$out"
	echo "exit $rc after $((t1 - t0)) s (-T 60)"
	[ $rc = 1 ] || { echo "want exit 1"; return 1; }
	echo "$out" | grep -q 'RETRY_EXC_ERR' ||
		{ echo "no RETRY_EXC_ERR reported"; return 1; }
	echo "$out" | grep -q "bound: (retry_cnt" ||
		{ echo "no bound printed"; return 1; }
	[ $((t1 - t0)) -lt 60 ] || { echo "the tool's own timeout, not the QP's"; return 1; }
}

# f_stream_loss T OPCODE SERVER: a stream of 100 with every 10th data
# packet dropped (deterministic): exactly seqs 9, 19, ... 99 are lost, the
# tool says so and fails; without the filter all 100 arrive
f_stream_loss() {
	out=$(krdmactl -j send -t "$1" -n 100 -s 64 -T 30 "$3" 2>&1)
	rc=$?
	echo "$out"
	[ $rc = 0 ] || { echo "clean stream: exit $rc, want 0"; return 1; }
	echo "$out" | grep -q '"lost":0,' ||
		{ echo "clean stream: no \"lost 0\""; return 1; }
	fault_drop_every 10 "$2" || { fault_clear; return 1; }
	out=$(krdmactl -j send -t "$1" -n 100 -s 64 -T 30 "$3" 2>&1)
	rc=$?
	tc -s filter show dev "$FAULT_DEV" parent 1: | grep -i 'sent\|drop' | head -4
	fault_clear
	echo "$out"
	[ $rc = 1 ] || { echo "lossy stream: exit $rc, want 1"; return 1; }
	echo "$out" | grep -q '"lost":10,' ||
		{ echo "lossy stream: not exactly 10 lost"; return 1; }
	echo "$out" | grep -q '"received":90,' ||
		{ echo "lossy stream: not exactly 90 received"; return 1; }
	echo "$out" | grep -q 'lost 10 of 100: 9 19 29 39 49 59 69 79 89 99"' ||
		{ echo "lossy stream: not the seqs dropped"; return 1; }
}

# f_rtu_lost: every RTU this VM sends dropped (the CM's MAD class 7,
# attribute 0x0014: the active side's last handshake message, and its
# resends when the server's CM sends its reply again).  The client is
# connected once the reply came; the server never sees the RTU, and takes
# the client's first request as the end of the handshake (serve, and the
# module tells its CM, as on IB's COMM_EST), so the write and the 64 MiB
# copy succeed and the CM stops resending its reply.  An accept that
# waited for ESTABLISHED would stall the server, and the clients fail at
# their -T.
f_rtu_lost() {
	fault_clear
	tc qdisc add dev "$FAULT_DEV" root handle 1: prio bands 4 || return 1
	# the MAD after IPv4 20 + UDP 8 + BTH 12 + DETH 8: class at 49,
	# attribute at 64
	# shellcheck disable=SC2086
	tc filter add dev "$FAULT_DEV" parent 1: protocol ip prio 1 \
		u32 $FAULT_ROCE $FAULT_QP1 match u8 0x07 0xff at 49 \
		match u16 0x0014 0xffff at 64 flowid 1:1 action drop ||
		{ echo "tc filter failed"; fault_clear; return 1; }
	echo "RTUs (CM MAD attribute 0x0014) dropped on egress"
	fr=0
	head -c 67108864 /dev/urandom > /tmp/krdma-rtu.bin
	krdmactl write -T 30 -s 65536 -o 0 "$F_RC" || fr=1
	t0=$(date +%s)
	krdmactl copy -T 30 /tmp/krdma-rtu.bin "$F_RC" || fr=1
	secs=$(($(date +%s) - t0))
	drops=$(tc -s filter show dev "$FAULT_DEV" parent 1: |
		sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -n 1)
	fault_clear
	rm -f /tmp/krdma-rtu.bin
	echo "RTUs dropped: ${drops:-none counted} (two connections; the copy took $secs s)"
	[ "${drops:-0}" -ge 2 ] ||
		{ echo "want one RTU per connection dropped"; fr=1; }
	# The server's CM learns from the module that the handshake is over
	# (COMM_EST, at the first request) and stops resending its reply
	# (every ~5 s), which drew a resent RTU each time: two more at most.
	[ "${drops:-0}" -le 4 ] ||
		{ echo "the server's CM went on resending its reply"; fr=1; }
	[ "$secs" -ge 15 ] ||
		echo "(the copy was shorter than two resends: the last check proves little)"
	return $fr
}

# A link flap (every RoCE packet dropped, both ways, CM included) of
# FLAP_SECS, longer than the copy's -T (on rxe an rdma_cm RC QP retries
# forever, see f_total_loss, so the tool's -T is the retry budget), in the
# middle of a copy: the copy connects again, resumes where the server
# stands and the server's SHA-256 check passes
f_flap() {
	log=/tmp/krdma-flap.$$
	head -c 33554432 /dev/urandom > /tmp/krdma-flap.bin
	# the qdiscs go in before the copy; the flap changes netem's loss
	fault_netem loss 0% || { echo "tc netem failed"; fault_clear; return 1; }
	krdmactl -j copy --progress --reconnect 5 -T 4 /tmp/krdma-flap.bin \
		"$F_RC" > "$log" 2>&1 &
	pid=$!
	i=0
	until grep -q 'chunk 7 done' "$log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 600 ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	grep -q 'chunk 7 done' "$log" || {
		echo "the copy never reached chunk 7"; cat "$log"
		fault_clear; wait $pid; rm -f "$log"; return 1; }
	fault_netem_change loss 100% || { fault_clear; kill $pid; return 1; }
	echo "link down (netem loss 100% on UDP 4791) for ${FLAP_SECS:-7} s"
	sleep "${FLAP_SECS:-7}"
	fault_netem_change loss 0% || fault_clear
	echo "link up"
	wait $pid
	rc=$?
	fault_clear
	grep -v 'chunk .* done' "$log"
	echo "copy: exit $rc"
	fr=0
	[ $rc = 0 ] || fr=1
	grep -q '"result":"GOOD"' "$log" || { echo "no GOOD from the server"; fr=1; }
	grep -Eq '"reconnects":[1-9]' "$log" || { echo "no reconnect"; fr=1; }
	grep -Eq '"resumed_at":[1-9]' "$log" ||
		{ echo "not resumed (started over)"; fr=1; }
	rm -f "$log" /tmp/krdma-flap.bin
	return $fr
}
