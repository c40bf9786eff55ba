#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-trace.sh: where krdma's and perftest's time goes on rxe, and how
# close each comes to what rxe's own cost allows (run by "make
# bench-trace" through selftests/vm/run.sh).
#
# First a SEND 8 B ping-pong, krdma's kernel loop, its --via-ioctl client
# and ib_send_lat alike.  kprobes on rxe_post_send()
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
# The "send 8 B" line: krdma / perftest latency (lower is better), and
# the rxe-bound ratio: krdma's deliveries alone over perftest's round
# trip, what a loop that reacted in no time would reach.
#
# Then where a bandwidth run's CPU time goes, with no probe set:
# cpu_samples (selftests/cpu_samples.c) samples every CPU's kernel stack
# while ib_write_bw / ib_read_bw and krdmactl bench, interleaved, move
# 64 KiB WRITEs, 64 KiB READs and 64 B WRITEs over one QP, and charges
# each sample to rdma_rxe, its CQ polls, krdma, user space, the rest of
# the kernel, irq work or idle.  Runs of ITERS less runs of ITERS/4 leave
# the messages alone.  Per program and figure: the time per message,
# each class's CPU time per message, and rxe's and idle CPU time over the
# time data moved.  The rxe-bound ratio (higher is better) is perftest's
# time per message over rxe's CPU time per message under krdma: what a
# loop reaches whose messages cost rxe's time alone, one after another.
#
#   ROUNDS (3)  PINGS (3000)  ITERS_BW (3000)  ITERS_RATE (20000)
set -u

REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
ADDR=${RXE0_ADDR:-192.0.2.1}
DEV=${BENCH_DEV:-rxe0}
ROUNDS=${ROUNDS:-3}
PINGS=${PINGS:-3000}
ITERS_BW=${ITERS_BW:-3000}
ITERS_RATE=${ITERS_RATE:-20000}
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

command -v cpu_samples > /dev/null || die "cpu_samples not built"
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

# the two QPs of a ways file with the most ways: the ping-pong's sides
sides() {
	awk '{ print $1 }' "$1" | sort | uniq -c | sort -rn | head -n 2 |
		awk '{ print $2 }'
}

# both sides' medians of $2 ("reaction" or "delivery") in trace $1,
# added; "-" unless there are two sides with such ways
both() {
	local qp

	for qp in $(sides "$1.ways"); do
		side_median "$1.ways" "$qp" "$2"
		echo
	done | awk '$1 ~ /^[0-9.]+$/ { s += $1; n++ }
		END { if (n == 2) print s; else print "-" }'
}

# per side: "react R deliver D |" of one trace, busiest two QPs
summary() {
	local f=$1 qp line=""

	ways "$f" > "$f.ways"
	for qp in $(sides "$f.ways"); do
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
: > "$OUT/lat.txt"
for r in $(seq "$ROUNDS"); do
	for p in perftest krdma via; do
		printf '%-8s round %d: t_typical %s |%s\n' "$p" "$r" \
			"$(typical "$OUT/$p$r.out")" "$(summary "$OUT/$p$r.txt")"
	done
	# krdma's round trip were its reactions free: its deliveries alone
	echo "$(typical "$OUT/krdma$r.out") $(typical "$OUT/perftest$r.out")" \
	     "$(both "$OUT/krdma$r.txt" delivery)" \
	     "$(both "$OUT/perftest$r.txt" reaction)" \
	     "$(both "$OUT/perftest$r.txt" delivery)" >> "$OUT/lat.txt"
done
awk '
function med(s,   n, i, j, t, a) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n ? a[int((n + 1) / 2)] : 0
}
# t_typical is "inf" when perftest could not time its CPU clock
NF == 5 && $1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 {
	ratio = ratio " " $1 / $2
}
NF == 5 && $3 $4 $5 !~ /-/ && $4 + $5 > 0 { floor = floor " " $3 / ($4 + $5) }
END {
	if (floor != "")
		printf "send 8 B: krdma / perftest latency %s (traced); " \
		       "rxe-bound %.2f (krdma'"'"'s deliveries over perftest'"'"'s " \
		       "round trip)\n", ratio == "" ? "-" : sprintf("%.2f", med(ratio)),
		       med(floor)
}' "$OUT/lat.txt"

# --- where a bandwidth run's CPU time goes ---

SAMPLE=(cpu_samples -t 12 -m rdma_rxe -m krdma -f rxe_poll_cq --)
BW_FIELDS="rdma_rxe rxe_poll_cq krdma user kernel irq idle"

# a table's figure N (perftest's and krdmactl's tables alike)
field() {
	awk -v n="$2" '/#bytes/ { h = 1; next }
		h && $1 ~ /^[0-9]+$/ { print $n; exit }' "$1"
}

# "MPPS LOST CLASS_S..." (BW_FIELDS' order) of a sampled run's output,
# nothing for a run that failed
sampled() {
	awk -v mpps="$(field "$1" 5)" -v want="$BW_FIELDS" '
	/^cpu_samples: wall/ && mpps ~ /^[0-9.]+$/ && mpps > 0 {
		for (i = 2; i < NF; i++) v[$i] = $(i + 1)
		line = mpps " " v["lost"]
		n = split(want, w, " ")
		for (i = 1; i <= n; i++) line = line " " v[w[i]]
		print line
	}' "$1"
}

# one sampled run's line in bw.txt: bw_line ROUND NAME PROGRAM ITERS OUT
bw_line() {
	local line

	line=$(sampled "$5")
	if [ -z "$line" ]; then
		echo "bench-trace: $3 $2 -n $4 in round $1 failed: left out" >&2
		return
	fi
	[ "$(echo "$line" | awk '{ print $2 }')" = 0 ] ||
		echo "bench-trace: $3 $2 -n $4 in round $1 lost samples" >&2
	echo "$1 $2 $3 $4 $line" >> "$OUT/bw.txt"
}

# perftest's TOOL with ARGS, then krdmactl bench OP with what perftest
# used (its CQ moderation, its outstanding reads), each sampled:
# bw_run ROUND NAME ITERS TOOL "ARGS" OP
bw_run() {
	local r=$1 name=$2 n=$3 tool=$4 args=$5 op=$6 o cqmod rd

	PORT=$((PORT + 1))
	o=$OUT/bw-pt-$name-$n-$r.out
	# shellcheck disable=SC2086 # the argument list
	timeout 120 "$tool" -d "$DEV" -x "$GIDX" -p $PORT $args -n "$n" \
		-F > "$OUT/bw-pt-server.out" 2>&1 &
	sleep 1
	# shellcheck disable=SC2086
	timeout 120 "${SAMPLE[@]}" "$tool" -d "$DEV" -x "$GIDX" -p $PORT \
		$args -n "$n" -F "$ADDR" > "$o" 2>&1
	wait $!
	bw_line "$r" "$name" perftest "$n" "$o"
	cqmod=$(awk '/CQ Moderation/ { print $NF; exit }' "$o")
	rd=$(awk '/Outstand reads/ { print $NF; exit }' "$o")
	o=$OUT/bw-k-$name-$n-$r.out
	# shellcheck disable=SC2086
	timeout 120 "${SAMPLE[@]}" krdmactl bench "$op" "$ADDR" -p 18531 \
		$args -n "$n" ${cqmod:+-Q "$cqmod"} ${rd:+-t "$rd"} > "$o" 2>&1
	bw_line "$r" "$name" krdma "$n" "$o"
}

# a figure's round: a quarter of ITERS and ITERS, whose difference is
# the messages alone (connecting, registering and exiting cancel out)
bw_round() {
	bw_run "$1" "$2" $(($3 / 4)) "$4" "$5" "$6"
	bw_run "$1" "$2" "$3" "$4" "$5" "$6"
}

: > "$OUT/bw.txt"
krdmactl bench -p 18531 -T $((ROUNDS * 300)) > "$OUT/bw-server.out" 2>&1 &
SERVER=$!
sleep 1
for r in $(seq "$ROUNDS"); do
	bw_round "$r" write "$ITERS_BW" ib_write_bw "-s 65536 -t 128" write
	bw_round "$r" read "$ITERS_BW" ib_read_bw "-s 65536" read
	bw_round "$r" rate "$ITERS_RATE" ib_write_bw "-s 64 -t 128" write
done
kill $SERVER 2>/dev/null
wait $SERVER 2>/dev/null

echo
echo "one QP, medians of $ROUNDS rounds.  us/msg: the program's time per"
echo "message (its message rate); then the CPU time per message (both ends,"
echo "all CPUs; runs of ITERS less runs of ITERS/4) of rxe, of its CQ polls"
echo "from the kernel, of krdma, user space, the rest of the kernel and"
echo "softirq/irq work that is none of theirs; then rxe's and idle CPU time"
echo "over the time data moved"
awk '
function med(k,   n, i, j, t, a) {
	n = split(vals[k], a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n ? a[int((n + 1) / 2)] : 0
}
function put(k, v) { vals[k] = vals[k] " " v }
# round name program iters mpps lost rxe poll krdma user kernel irq idle
NF == 13 {
	k = $1 " " $2 " " $3
	if (!(k in small) || $4 < small_n[k]) {
		if (k in small && !(k in big)) { big[k] = small[k]; big_n[k] = small_n[k] }
		small[k] = $0; small_n[k] = $4
	} else {
		big[k] = $0; big_n[k] = $4
	}
	if (!(k in keyed)) { keys[++nk] = k; keyed[k] = 1 }
}
END {
	for (ki = 1; ki <= nk; ki++) {
		k = keys[ki]
		if (!(k in big))
			continue
		split(small[k], a, " "); split(big[k], b, " ")
		d = b[4] - a[4]
		if (d <= 0 || b[5] <= 0)
			continue
		key = b[2] " " b[3]; us = 1 / b[5]
		if (!(key in seen)) { order[++n] = key; seen[key] = 1 }
		put(key " us", us)
		for (i = 7; i <= 13; i++) put(key " " i, (b[i] - a[i]) * 1e6 / d)
		put(key " cpus", (b[7] - a[7]) * 1e6 / d / us)
		put(key " idle", (b[13] - a[13]) * 1e6 / d / us)
		t[b[1] " " key] = us; rxe[b[1] " " key] = (b[7] - a[7]) * 1e6 / d
	}
	printf "%-15s %8s %8s %7s %7s %7s %7s %7s %5s %5s\n", "figure program",
	       "us/msg", "rxe", "poll", "krdma", "user", "kernel", "irq",
	       "rxe", "idle"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "%-15s %8.2f %8.2f %7.2f %7.2f %7.2f %7.2f %7.2f %5.2f %5.2f\n",
		       k, med(k " us"), med(k " 7"), med(k " 8"), med(k " 9"),
		       med(k " 10"), med(k " 11"), med(k " 12"), med(k " cpus"),
		       med(k " idle")
	}
	# per round: krdma / perftest, and perftest over rxe alone under krdma
	for (ki = 1; ki <= nk; ki++) {
		split(keys[ki], f, " ")
		rk = keys[ki]; pk = f[1] " " f[2] " perftest"
		if (f[3] != "krdma" || !(rk in t) || !(pk in t) ||
		    t[rk] <= 0 || rxe[rk] <= 0)
			continue
		put(f[2] " ratio", t[pk] / t[rk])
		put(f[2] " bound", t[pk] / rxe[rk])
		if (!(f[2] in named)) { names[++m] = f[2]; named[f[2]] = 1 }
	}
	for (i = 1; i <= m; i++)
		printf "%s: krdma / perftest rate %.2f; rxe-bound %.2f (perftest%s\n",
		       names[i], med(names[i] " ratio"), med(names[i] " bound"),
		       "'"'"'s time per message over rxe'"'"'s CPU time per message under krdma)"
}' "$OUT/bw.txt"
