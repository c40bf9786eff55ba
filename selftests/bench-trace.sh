#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-trace.sh: where a SEND 8 B ping-pong's time goes, krdma's kernel
# loop, its --via-ioctl client and ib_send_lat alike (run by "make
# bench-trace" through selftests/vm/run.sh).  kprobes on rxe_post_send()
# and rxe_cq_post() (a receive's CQE: ib_wc opcode IB_WC_RECV) stamp each
# post and each delivered message with the TSC; every way of a round trip
# is then
#
#   reaction  a receive's CQE -> the next post (the side that got it)
#   delivery  a post -> the receive's CQE at the other end (rxe's work)
#
# and the table gives, per program and round, each side's medians in us.
# The probes cost each way some microseconds, the same for every program;
# compare programs within one run.  Raw traces stay in build/trace/.
#
#   ROUNDS (3)  PINGS (3000)
set -u

REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
ADDR=${RXE0_ADDR:-192.0.2.1}
DEV=${BENCH_DEV:-rxe0}
ROUNDS=${ROUNDS:-3}
PINGS=${PINGS:-3000}
OUT=$REPO/build/trace
T=/sys/kernel/tracing
IB_WC_RECV=128
PORT=19600

die() { echo "bench-trace: $*" >&2; exit 1; }

# this script's probes only, left behind by no run, whatever ends it
unprobe() {
	[ -d $T/events/krdma_trace ] || return 0
	echo 0 > $T/events/krdma_trace/enable
	echo '-:krdma_trace/post' >> $T/kprobe_events
	echo '-:krdma_trace/cqe' >> $T/kprobe_events
}

[ -d $T/events ] || mount -t tracefs nodev $T || die "no tracefs"
unprobe 2>/dev/null
trap 'unprobe 2>/dev/null' EXIT
echo 0 > $T/tracing_on
echo 16384 > $T/buffer_size_kb
echo 'p:krdma_trace/post rxe_post_send qp=%di' >> $T/kprobe_events ||
	die "cannot probe rxe_post_send (rdma_rxe loaded?)"
echo "p:krdma_trace/cqe rxe_cq_post cq=%di op=+12(%si):u32" >> \
	$T/kprobe_events || die "cannot probe rxe_cq_post"
echo "op == $IB_WC_RECV" > $T/events/krdma_trace/cqe/filter
echo x86-tsc > $T/trace_clock || die "no x86-tsc trace clock"
MHZ=$(dmesg | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | head -n1)
[ -n "$MHZ" ] || die "TSC frequency not found in dmesg"
echo 1 > $T/events/krdma_trace/enable
mkdir -p "$OUT"

# perftest's GID: the IPv4-mapped one of $ADDR (RoCE v2)
GID_TAIL=$(echo "$ADDR" | awk -F. '{ printf ":ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
GIDX=
for f in "/sys/class/infiniband/$DEV/ports/1/gids/"*; do
	case $(cat "$f") in *"$GID_TAIL") GIDX=$(basename "$f"); break ;; esac
done
[ -n "$GIDX" ] || die "no IPv4 GID for $ADDR on $DEV"

# one traced run of "$@" into $OUT/$name.txt
traced() {
	local name=$1

	shift
	echo > $T/trace
	echo 1 > $T/tracing_on
	"$@" > "$OUT/$name.out" 2>&1
	echo 0 > $T/tracing_on
	cat $T/trace > "$OUT/$name.txt"
}

# "side reaction|delivery us" for every way of every round trip; the
# side is the QP that posted (a QP's CQ is not named by its post)
ways() {
	awk -v mhz="$MHZ" '
	/ (post|cqe): / {
		for (i = 1; i <= NF; i++)
			if ($i ~ /^[0-9]+:$/) { ts = substr($i, 1, length($i) - 1) / mhz; break }
		what = $0 ~ / post: / ? "post" : "cqe"
		if (what == "post") {
			qp = $NF; sub(/^qp=/, "", qp)
			if (last == "cqe") print qp, "reaction", ts - last_ts
			post_qp = qp
		} else if (last == "post") {
			print post_qp, "delivery", ts - last_ts
		}
		last = what; last_ts = ts
	}' "$1"
}

median() {
	sort -n | awk '{ v[NR] = $1 }
		END { if (NR) printf "%.2f", v[int((NR + 1) / 2)]; else printf "-" }'
}

# the median of side $2's $3 ("reaction" or "delivery") in ways file $1
side_median() {
	awk -v q="$2" -v k="$3" '$1 == q && $2 == k { print $3 }' "$1" | median
}

# per side: "react R deliver D |" of one trace, busiest two QPs
summary() {
	local f=$1 qp line=""

	ways "$f" > "$f.ways"
	for qp in $(awk '{ print $1 }' "$f.ways" | sort | uniq -c | sort -rn |
		    head -n 2 | awk '{ print $2 }'); do
		line="$line  react $(side_median "$f.ways" "$qp" reaction)"
		line="$line deliver $(side_median "$f.ways" "$qp" delivery) |"
	done
	echo "$line"
}

krdmactl bench -p 18530 -T $((ROUNDS * 120)) > "$OUT/server.out" 2>&1 &
SERVER=$!
sleep 1
for r in $(seq "$ROUNDS"); do
	PORT=$((PORT + 1))
	timeout 120 ib_send_lat -d "$DEV" -x "$GIDX" -p $PORT -s 8 \
		-n "$PINGS" -F > "$OUT/pt-server$r.out" 2>&1 &
	sleep 1
	traced "perftest$r" timeout 120 ib_send_lat -d "$DEV" -x "$GIDX" \
		-p $PORT -s 8 -n "$PINGS" -F "$ADDR"
	wait $!
	traced "krdma$r" timeout 120 krdmactl bench send "$ADDR" -p 18530 \
		--lat -s 8 -n "$PINGS" -I 0 -Q 100
	traced "via$r" timeout 120 krdmactl bench send "$ADDR" -p 18530 \
		--lat -s 8 -n "$PINGS" -I 0 -Q 100 --via-ioctl
done
kill $SERVER 2>/dev/null
wait $SERVER 2>/dev/null
unprobe

# the t_typical a latency table printed
typical() {
	awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print $5; exit }' "$1"
}

echo "medians in us, TSC at $MHZ MHz: the program's t_typical (traced), then"
echo "for each side of the ping-pong its reaction and its messages' delivery"
for r in $(seq "$ROUNDS"); do
	for p in perftest krdma via; do
		printf '%-8s round %d: t_typical %s |%s\n' "$p" "$r" \
			"$(typical "$OUT/$p$r.out")" "$(summary "$OUT/$p$r.txt")"
	done
done
