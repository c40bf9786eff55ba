#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: krdma and perftest side by side on the same rxe device, in one
# guest (run by "make bench" through selftests/vm/run.sh).  Each pair runs
# interleaved ROUNDS times with identical parameters, back to back in each
# round.  Each round's pair gives a ratio (krdma / perftest): the machine
# drifts from one minute to the next, and a ratio of two figures taken
# seconds apart carries less of that drift than one of two medians.  The
# median of the rounds' ratios, their spread (min, max) and the rounds
# krdma won go to stdout as a table, with the medians of the figures, and
# to $KRDMA_REPO/build/bench.json with every sample.
#
#   ROUNDS (5)  LAT_ROUNDS (11)  ITERS_BW (3000)  ITERS_LAT (5000)
#   ITERS_ATOMIC (20000)  ITERS_RATE (20000)  QPS_BW (the guest's CPUs, at
#   least 2)  OTHER_ROUNDS (5)  CONNS ("1 64 256 1024")
#   BENCH_JSON (build/bench.json)
#
# The SEND latency pairs run LAT_ROUNDS times, each round in the other
# order: a ping-pong on this machine runs in one of two speeds, about 1.8x
# apart, for tens of milliseconds to seconds at a time (for perftest as for
# krdma, see README), so short runs, many, taking turns, give both programs
# the same share of each.
#
# The bandwidth pairs run twice: with one QP each, and with QPS_BW QPs each
# (iterations per QP, as both count them), where krdma shares its QPs out
# among one loop per CPU (KRDMA_BENCH_PER_CPU) and perftest, one thread,
# polls them all from one.
#
# The other transports and modes, OTHER_ROUNDS interleaved pairs each,
# figures without targets: SEND 8 B latency over UD, WRITE 64 KiB bandwidth
# over UC, WRITE 64 KiB both ways at once (-b, both directions summed, as
# both print it); and on siw0 (iWARP), when the guest has it, WRITE and
# READ 64 KiB, 1 QP.
set -u

REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
ADDR=${RXE0_ADDR:-192.0.2.1}
DEV=${BENCH_DEV:-rxe0}
ROUNDS=${ROUNDS:-5}
ITERS_BW=${ITERS_BW:-3000}
LAT_ROUNDS=${LAT_ROUNDS:-11}
ITERS_LAT=${ITERS_LAT:-5000}
ITERS_ATOMIC=${ITERS_ATOMIC:-20000}
ITERS_RATE=${ITERS_RATE:-20000}
OTHER_ROUNDS=${OTHER_ROUNDS:-5}
QPS_BW=${QPS_BW:-$(nproc)}
[ "$QPS_BW" -ge 2 ] 2>/dev/null || QPS_BW=2
LAT_CQ_MOD=100		# perftest's default CQ moderation (DEF_CQ_MOD)
CONNS=${CONNS:-1 64 256 1024}
OUT=${BENCH_JSON:-$REPO/build/bench.json}
TMP=$(mktemp -d /tmp/bench.XXXXXX)
PORT=19000
KRDMACTL=${KRDMACTL:-krdmactl}
# a private copy: a krdmactl rebuilt on the host while this runs (the repo
# is shared over 9p) must not change, or break, the program measured
if cp "$(command -v "$KRDMACTL")" "$TMP/krdmactl" 2>/dev/null; then
	KRDMACTL=$TMP/krdmactl
fi

# perftest's GID: the IPv4-mapped one of $ADDR (RoCE v2)
GID_TAIL=$(echo "$ADDR" | awk -F. '{ printf ":ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
GIDX=
for f in "/sys/class/infiniband/$DEV/ports/1/gids/"*; do
	case $(cat "$f" 2>/dev/null) in *"$GID_TAIL") GIDX=$(basename "$f"); break ;; esac
done

log() { echo "bench: $*" >&2; }
if [ -z "$GIDX" ]; then
	log "no IPv4 GID for $ADDR on $DEV"
	rm -rf "$TMP"
	exit 1
fi

# the data line after a perftest/krdmactl table header: field N
field() {	# field FILE N
	awk -v n="$2" '/#bytes/ { hdr = 1; next }
		hdr && $1 ~ /^[0-9]+$/ { print $n; exit }' "$1"
}

median() {	# median values...
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "null" }'
}

ratio() {	# ratio A B
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else printf "%.3f\n", a / b }'
}

# perftest() runs in a command substitution, a subshell: the last port
# taken is kept in a file, so that each pair has a port of its own
next_port() {
	PORT=$(($(cat "$TMP/port" 2>/dev/null || echo "$PORT") + 1))
	echo "$PORT" > "$TMP/port"
}

# the CQ moderation perftest chose (it prints it): krdma gets the same
cqmod() {	# cqmod FILE
	awk '/CQ Moderation/ { print $NF; exit }' "$1" | grep -E '^[0-9]+$' ||
		echo 1
}

# perftest's device options (PT_DEV) and the server's address (PT_ADDR)
PT_DEV=(-d "$DEV" -x "$GIDX")
PT_ADDR=$ADDR
# perftest: server in the background, client here; prints the client's output file
perftest() {	# perftest NAME TOOL ARGS...
	local tool=$2 out=$TMP/$1.$RANDOM
	shift 2
	next_port
	timeout 120 "$tool" "${PT_DEV[@]}" -p "$PORT" "$@" > "$out.srv" 2>&1 &
	local spid=$!
	sleep 1
	timeout 120 "$tool" "${PT_DEV[@]}" -p "$PORT" "$@" "$PT_ADDR" > "$out" 2>&1
	wait "$spid"
	echo "$out"
}

krdma() {	# krdma NAME ARGS...
	local out=$TMP/$1.$RANDOM
	shift
	timeout 120 "$KRDMACTL" bench "$@" > "$out" 2>&1
	echo "$out"
}

"$KRDMACTL" bench -T 60 > "$TMP/server.log" 2>&1 &
SERVER=$!
sleep 1

declare -A V	# every figure of a key, in round order
declare -A LAST	# the key's figure of this round ("": none)
declare -A R	# a pair's ratios, one a round both figures came
# a figure of 0, none or not a number is a failed run (perftest printed
# 0.00 BW for one -q 2 round once, and "inf" for every latency of a round
# whose estimate of the CPU clock failed: "Correlation coefficient r^2:
# 0.23 < 0.9"): left out of the median and of bench.json, and said so
add() {
	if [[ ${2:-} =~ ^[0-9]+(\.[0-9]+)?$ ]] &&
	   awk -v v="$2" 'BEGIN { exit !(v + 0 > 0) }'; then
		V[$1]="${V[$1]:-} $2"
		LAST[$1]=$2
	else
		LAST[$1]=
		log "$1: no figure in round ${r:-?} ('${2:-}'): left out"
	fi
}

# this round's ratio of a pair: pair NAME KEY_KRDMA KEY_OTHER
pair() {
	[ -n "${LAST[$2]:-}" ] && [ -n "${LAST[$3]:-}" ] || return 0
	R[$1]="${R[$1]:-} $(ratio "${LAST[$2]}" "${LAST[$3]}")"
}

# guest memcpy: the ceiling, as rxe copies every byte
for r in $(seq "$ROUNDS"); do
	o=$(krdma memcpy memcpy -s 65536)
	add memcpy "$(awk '/memcpy/ { print $(NF-1) }' "$o")"
done

# One round of a pair: perftest's TOOL with PT_ARGS, then krdmactl bench
# OP with K_ARGS and what perftest printed it used: its CQ moderation as
# -Q, and its outstanding reads as -t where it has them (READ, atomics).
# Figure N of the table line; the round's ratio as NAME.
# krdma connects to K_ADDR (default $ADDR).
#   round_pair NAME N TOOL "PT_ARGS" OP "K_ARGS" [K_ADDR]
round_pair() {
	local name=$1 n=$2 tool=$3 pt_args=$4 op=$5 k_args=$6 k_addr=${7:-$ADDR} o rd
	# shellcheck disable=SC2086 # the argument lists
	o=$(perftest "$name" "$tool" $pt_args -F)
	add "pt_$name" "$(field "$o" "$n")"; cp "$o" "$TMP/last.pt_$name"
	rd=$(awk '/Outstand reads/ { print $NF; exit }' "$o")
	# shellcheck disable=SC2086
	o=$(krdma "$name" $op "$k_addr" $k_args ${rd:+-t "$rd"} -Q "$(cqmod "$o")")
	add "k_$name" "$(field "$o" "$n")"; cp "$o" "$TMP/last.k_$name"
	pair "$name" "k_$name" "pt_$name"
}

for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	round_pair write 4 ib_write_bw "-s 65536 -n $ITERS_BW -t 128" \
		write "-s 65536 -n $ITERS_BW -t 128"
	round_pair read 4 ib_read_bw "-s 65536 -n $ITERS_BW" \
		read "-s 65536 -n $ITERS_BW"
	round_pair write_q 4 ib_write_bw "-s 65536 -n $ITERS_BW -t 128 -q $QPS_BW" \
		write "-s 65536 -n $ITERS_BW -t 128 -q $QPS_BW"
	round_pair read_q 4 ib_read_bw "-s 65536 -n $ITERS_BW -q $QPS_BW" \
		read "-s 65536 -n $ITERS_BW -q $QPS_BW"
	# small messages: the message rate, where a kernel loop should gain
	round_pair rate 5 ib_write_bw "-s 64 -n $ITERS_RATE -t 128" \
		write "-s 64 -n $ITERS_RATE -t 128"
	round_pair atomic 5 ib_atomic_bw "-n $ITERS_ATOMIC" \
		fadd "-n $ITERS_ATOMIC"
done

pt_lat() {
	local o
	o=$(perftest send_lat ib_send_lat -s 8 -n "$ITERS_LAT" -F)
	add pt_lat "$(field "$o" 5)"; cp "$o" "$TMP/last.pt_lat"
	# what perftest used: its inline size (0 on rxe, which it does not
	# trust with inline data), and its CQ moderation, 100 by default,
	# which ib_send_lat does not print: it signals one ping in 100
	inl=$(awk -F: '/Max inline data/ { gsub(/[^0-9]/, "", $2); print $2; exit }' "$o")
}

k_lat() {
	local o
	o=$(krdma send_lat send "$ADDR" --lat -s 8 -n "$ITERS_LAT" \
		-I "${inl:-0}" -Q "$LAT_CQ_MOD")
	add k_lat "$(field "$o" 5)"; cp "$o" "$TMP/last.k_lat"
	o=$(krdma via send "$ADDR" --lat -s 8 -n "$ITERS_LAT" \
		-I "${inl:-0}" -Q "$LAT_CQ_MOD" --via-ioctl)
	add k_via "$(field "$o" 5)"; cp "$o" "$TMP/last.k_via"
}

inl=
for r in $(seq "$LAT_ROUNDS"); do
	log "latency round $r/$LAT_ROUNDS"
	if [ $((r % 2)) = 1 ]; then
		pt_lat; k_lat
	else
		k_lat; pt_lat
	fi
	pair lat k_lat pt_lat
	pair via k_via k_lat
done

# the other transports: a krdma server of each (UD has rdma_cm's UDP port
# space; UC shares the TCP one with RC, and needs a port of its own)
"$KRDMACTL" bench -c ud -p 18518 -T 60 > "$TMP/server_ud.log" 2>&1 &
SERVER_UD=$!
"$KRDMACTL" bench -c uc -p 18519 -T 60 > "$TMP/server_uc.log" 2>&1 &
SERVER_UC=$!
sleep 1
ud_inl=
ud_lat() {
	local o
	if [ "$1" = pt ]; then
		o=$(perftest ud_lat ib_send_lat -c UD -s 8 -n "$ITERS_LAT" -F)
		ud_inl=$(awk -F: '/Max inline data/ { gsub(/[^0-9]/, "", $2); print $2; exit }' "$o")
	else
		o=$(krdma ud_lat send "$ADDR" -c ud -p 18518 --lat -s 8 \
			-n "$ITERS_LAT" -I "${ud_inl:-0}" -Q "$LAT_CQ_MOD")
	fi
	add "$1_ud_lat" "$(field "$o" 5)"; cp "$o" "$TMP/last.$1_ud_lat"
}
for r in $(seq "$OTHER_ROUNDS"); do
	log "other transports round $r/$OTHER_ROUNDS"
	if [ $((r % 2)) = 1 ]; then
		ud_lat pt; ud_lat k
	else
		ud_lat k; ud_lat pt
	fi
	pair ud_lat k_ud_lat pt_ud_lat
	o=$(perftest uc_write ib_write_bw -c UC -s 65536 -n "$ITERS_BW" -t 128 -F)
	add pt_uc_write "$(field "$o" 4)"; cp "$o" "$TMP/last.pt_uc_write"
	o=$(krdma uc_write write "$ADDR" -c uc -p 18519 -s 65536 \
		-n "$ITERS_BW" -t 128 -Q "$(cqmod "$o")")
	add k_uc_write "$(field "$o" 4)"; cp "$o" "$TMP/last.k_uc_write"
	pair uc_write k_uc_write pt_uc_write
	round_pair bidir 4 ib_write_bw "-b -s 65536 -n $ITERS_BW -t 128" \
		write "-b -s 65536 -n $ITERS_BW -t 128"
done
kill "$SERVER_UD" "$SERVER_UC" 2>/dev/null
wait "$SERVER_UD" "$SERVER_UC" 2>/dev/null

# iWARP: siw0 (soft-iWARP, on a netdev of its own), perftest over rdma_cm
# (-R, as iWARP connects), krdma against a server on siw0; WRITE, READ and
# SEND (which both programs run with credits there: iWARP has no RNR
# retry).  The same pairs as rxe's, interleaved.
IW_DEV=${IW_DEV:-siw0}
if [ -n "${SIW0_ADDR:-}" ]; then
	"$KRDMACTL" bench -d "$IW_DEV" -p 18520 -T 60 > "$TMP/server_iw.log" 2>&1 &
	SERVER_IW=$!
	sleep 1
	PT_DEV=(-d "$IW_DEV" -R)
	PT_ADDR=$SIW0_ADDR
	for r in $(seq "$OTHER_ROUNDS"); do
		log "iWARP round $r/$OTHER_ROUNDS"
		round_pair iw_write 4 ib_write_bw "-s 65536 -n $ITERS_BW -t 128" \
			write "-s 65536 -n $ITERS_BW -t 128 -d $IW_DEV -p 18520" "$SIW0_ADDR"
		round_pair iw_read 4 ib_read_bw "-s 65536 -n $ITERS_BW" \
			read "-s 65536 -n $ITERS_BW -d $IW_DEV -p 18520" "$SIW0_ADDR"
		round_pair iw_send 4 ib_send_bw "-s 65536 -n $ITERS_BW -t 128" \
			send "-s 65536 -n $ITERS_BW -t 128 -d $IW_DEV -p 18520" "$SIW0_ADDR"
	done
	PT_DEV=(-d "$DEV" -x "$GIDX")
	PT_ADDR=$ADDR
	kill "$SERVER_IW" 2>/dev/null
	wait "$SERVER_IW" 2>/dev/null
else
	log "no siw0: no iWARP figures"
fi

# connection setup scale
CONN_JSON=
for n in $CONNS; do
	o=$(krdma conns -j --conns "$n" "$ADDR" -T 60)
	CONN_JSON="$CONN_JSON${CONN_JSON:+, }$(tr -d '\n' < "$o")"
	log "conns $n: $(tr -d '\n' < "$o")"
done

kill "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null

declare -A M	# the medians of the figures
for k in memcpy pt_write k_write pt_read k_read pt_write_q k_write_q \
	 pt_read_q k_read_q pt_rate k_rate pt_lat k_lat k_via pt_atomic \
	 k_atomic pt_ud_lat k_ud_lat pt_uc_write k_uc_write pt_bidir k_bidir \
	 pt_iw_write k_iw_write pt_iw_read k_iw_read pt_iw_send k_iw_send; do
	M[$k]=$(median ${V[$k]:-})
done

# a pair's ratios: their median, min, max, and the rounds krdma won (a
# ratio above 1, or below it where less is better: LOWER)
declare -A RM RMIN RMAX RWON RN
LOWER=" lat ud_lat via "
for k in write read write_q read_q rate atomic lat via ud_lat uc_write \
	 bidir iw_write iw_read iw_send; do
	RM[$k]=$(median ${R[$k]:-})
	set -- ${R[$k]:-}
	RN[$k]=$#
	if [ $# = 0 ]; then
		RMIN[$k]=null RMAX[$k]=null RWON[$k]=0
		continue
	fi
	RMIN[$k]=$(printf '%s\n' "$@" | sort -g | head -n 1)
	RMAX[$k]=$(printf '%s\n' "$@" | sort -g | tail -n 1)
	if [[ $LOWER == *" $k "* ]]; then
		RWON[$k]=$(printf '%s\n' "$@" | awk '$1 < 1 { n++ } END { print n + 0 }')
	else
		RWON[$k]=$(printf '%s\n' "$@" | awk '$1 > 1 { n++ } END { print n + 0 }')
	fi
done

row() {	# row LABEL PAIR KRDMA OTHER TARGET
	printf '%-30s %10s %10s %7s %-15s %-6s %s\n' "$1" "$3" "$4" "${RM[$2]}" \
		"[${RMIN[$2]}, ${RMAX[$2]}]" "${RWON[$2]}/${RN[$2]}" "$5"
}

printf '\n%-30s %10s %10s %7s %-15s %-6s %s\n' "figure (median of rounds)" krdma perftest ratio "[min, max]" won target
printf '%s\n' "(a ratio a round, krdma / perftest, back to back; ratio: their median; won: rounds krdma did better)"
printf '%-30s\n' "(of $ROUNDS rounds)"
row "WRITE 64K BW, 1 QP [MB/s]" write "${M[k_write]}" "${M[pt_write]}" ">= 1.0"
row "READ 64K BW, 1 QP [MB/s]" read "${M[k_read]}" "${M[pt_read]}" ">= 1.25"
row "WRITE 64K BW, $QPS_BW QPs [MB/s]" write_q "${M[k_write_q]}" "${M[pt_write_q]}" ">= 1.5"
row "READ 64K BW, $QPS_BW QPs [MB/s]" read_q "${M[k_read_q]}" "${M[pt_read_q]}" "-"
row "WRITE 64B rate, 1 QP [Mpps]" rate "${M[k_rate]}" "${M[pt_rate]}" ">= 1.5"
row "atomic rate [Mpps]" atomic "${M[k_atomic]}" "${M[pt_atomic]}" ">= 1.2"
printf '%-30s\n' "(of $LAT_ROUNDS rounds)"
row "SEND 8B lat p50 [us]" lat "${M[k_lat]}" "${M[pt_lat]}" "<= 0.7"
row "via-ioctl lat p50 [us]" via "${M[k_via]}" "${M[k_lat]}" "<= 1.2 (vs in-kernel)"
printf '%-30s %10s\n' "guest memcpy 64K [MB/s]" "${M[memcpy]}"
printf '%-30s\n' "(other transports: of $OTHER_ROUNDS rounds)"
row "UD SEND 8B lat p50 [us]" ud_lat "${M[k_ud_lat]}" "${M[pt_ud_lat]}" "-"
row "UC WRITE 64K BW [MB/s]" uc_write "${M[k_uc_write]}" "${M[pt_uc_write]}" "-"
row "WRITE 64K -b BW, both [MB/s]" bidir "${M[k_bidir]}" "${M[pt_bidir]}" "-"
printf '%-30s\n' "(iWARP, $IW_DEV: of $OTHER_ROUNDS rounds)"
row "WRITE 64K BW, 1 QP [MB/s]" iw_write "${M[k_iw_write]}" "${M[pt_iw_write]}" "-"
row "READ 64K BW, 1 QP [MB/s]" iw_read "${M[k_iw_read]}" "${M[pt_iw_read]}" "-"
row "SEND 64K BW, 1 QP [MB/s]" iw_send "${M[k_iw_send]}" "${M[pt_iw_send]}" "-"
echo "raw: $(for k in "${!V[@]}"; do printf '%s=[%s] ' "$k" "${V[$k]# }"; done)"

arr() { printf '[%s]' "$(echo $1 | sed 's/ /, /g')"; }
# a pair's figures in bench.json: NAME PAIR
spread() {
	printf '"%s": {"median": %s, "min": %s, "max": %s, "won": %s, "rounds": %s, "each": %s}' \
		"$1" "${RM[$2]}" "${RMIN[$2]}" "${RMAX[$2]}" "${RWON[$2]}" "${RN[$2]}" "$(arr "${R[$2]:-}")"
}
cat > "$OUT.tmp" <<EOF
{
  "kernel": "$(uname -r)",
  "device": "$DEV", "iwarp_device": "$([ -n "${SIW0_ADDR:-}" ] && echo "$IW_DEV")",
  "rounds": $ROUNDS, "lat_rounds": $LAT_ROUNDS, "other_rounds": $OTHER_ROUNDS,
  "params": {"bw_size": 65536, "bw_iters": $ITERS_BW, "tx_depth": 128,
             "bw_qps_multi": $QPS_BW, "rate_size": 64, "rate_iters": $ITERS_RATE,
             "lat_size": 8, "lat_iters": $ITERS_LAT, "lat_cq_mod": $LAT_CQ_MOD,
             "atomic_iters": $ITERS_ATOMIC},
  "ratios": {"write_bw_64k": ${RM[write]}, "read_bw_64k": ${RM[read]},
             "write_bw_64k_multi_qp": ${RM[write_q]}, "read_bw_64k_multi_qp": ${RM[read_q]},
             "write_rate_64b": ${RM[rate]},
             "send_lat_8b_p50": ${RM[lat]}, "atomic_rate": ${RM[atomic]},
             "via_ioctl_lat": ${RM[via]},
             "ud_send_lat_8b_p50": ${RM[ud_lat]}, "uc_write_bw_64k": ${RM[uc_write]},
             "write_bw_64k_bidir": ${RM[bidir]},
             "iwarp_write_bw_64k": ${RM[iw_write]}, "iwarp_read_bw_64k": ${RM[iw_read]},
             "iwarp_send_bw_64k": ${RM[iw_send]}},
  "round_ratios": {$(spread write_bw_64k write), $(spread read_bw_64k read),
                   $(spread write_bw_64k_multi_qp write_q), $(spread read_bw_64k_multi_qp read_q),
                   $(spread write_rate_64b rate),
                   $(spread send_lat_8b_p50 lat), $(spread atomic_rate atomic),
                   $(spread via_ioctl_lat via),
                   $(spread ud_send_lat_8b_p50 ud_lat), $(spread uc_write_bw_64k uc_write),
                   $(spread write_bw_64k_bidir bidir),
                   $(spread iwarp_write_bw_64k iw_write), $(spread iwarp_read_bw_64k iw_read),
                   $(spread iwarp_send_bw_64k iw_send)},
  "krdma": {"write_bw_64k_mbps": ${M[k_write]}, "read_bw_64k_mbps": ${M[k_read]},
            "write_bw_64k_multi_qp_mbps": ${M[k_write_q]}, "read_bw_64k_multi_qp_mbps": ${M[k_read_q]},
            "write_rate_64b_mpps": ${M[k_rate]},
            "send_lat_8b_p50_us": ${M[k_lat]}, "atomic_rate_mpps": ${M[k_atomic]},
            "via_ioctl_lat_8b_p50_us": ${M[k_via]},
            "ud_send_lat_8b_p50_us": ${M[k_ud_lat]}, "uc_write_bw_64k_mbps": ${M[k_uc_write]},
            "write_bw_64k_bidir_mbps": ${M[k_bidir]},
            "iwarp_write_bw_64k_mbps": ${M[k_iw_write]}, "iwarp_read_bw_64k_mbps": ${M[k_iw_read]},
            "iwarp_send_bw_64k_mbps": ${M[k_iw_send]}},
  "perftest": {"write_bw_64k_mbps": ${M[pt_write]}, "read_bw_64k_mbps": ${M[pt_read]},
               "write_bw_64k_multi_qp_mbps": ${M[pt_write_q]}, "read_bw_64k_multi_qp_mbps": ${M[pt_read_q]},
               "write_rate_64b_mpps": ${M[pt_rate]},
               "send_lat_8b_p50_us": ${M[pt_lat]}, "atomic_rate_mpps": ${M[pt_atomic]},
               "ud_send_lat_8b_p50_us": ${M[pt_ud_lat]}, "uc_write_bw_64k_mbps": ${M[pt_uc_write]},
               "write_bw_64k_bidir_mbps": ${M[pt_bidir]},
               "iwarp_write_bw_64k_mbps": ${M[pt_iw_write]}, "iwarp_read_bw_64k_mbps": ${M[pt_iw_read]},
               "iwarp_send_bw_64k_mbps": ${M[pt_iw_send]}},
  "memcpy_64k_mbps": ${M[memcpy]},
  "samples": {"k_write": $(arr "${V[k_write]:-}"), "pt_write": $(arr "${V[pt_write]:-}"),
              "k_read": $(arr "${V[k_read]:-}"), "pt_read": $(arr "${V[pt_read]:-}"),
              "k_write_q": $(arr "${V[k_write_q]:-}"), "pt_write_q": $(arr "${V[pt_write_q]:-}"),
              "k_read_q": $(arr "${V[k_read_q]:-}"), "pt_read_q": $(arr "${V[pt_read_q]:-}"),
              "k_rate": $(arr "${V[k_rate]:-}"), "pt_rate": $(arr "${V[pt_rate]:-}"),
              "k_lat": $(arr "${V[k_lat]:-}"), "pt_lat": $(arr "${V[pt_lat]:-}"),
              "k_via": $(arr "${V[k_via]:-}"),
              "k_atomic": $(arr "${V[k_atomic]:-}"), "pt_atomic": $(arr "${V[pt_atomic]:-}"),
              "k_ud_lat": $(arr "${V[k_ud_lat]:-}"), "pt_ud_lat": $(arr "${V[pt_ud_lat]:-}"),
              "k_uc_write": $(arr "${V[k_uc_write]:-}"), "pt_uc_write": $(arr "${V[pt_uc_write]:-}"),
              "k_bidir": $(arr "${V[k_bidir]:-}"), "pt_bidir": $(arr "${V[pt_bidir]:-}"),
              "k_iw_write": $(arr "${V[k_iw_write]:-}"), "pt_iw_write": $(arr "${V[pt_iw_write]:-}"),
              "k_iw_read": $(arr "${V[k_iw_read]:-}"), "pt_iw_read": $(arr "${V[pt_iw_read]:-}"),
              "k_iw_send": $(arr "${V[k_iw_send]:-}"), "pt_iw_send": $(arr "${V[pt_iw_send]:-}")},
  "conns": [$CONN_JSON]
}
EOF
mv "$OUT.tmp" "$OUT"
echo "bench: wrote ${OUT#"$REPO"/}"
for f in "$TMP"/last.*; do echo "=== ${f##*/last.}"; cat "$f"; done > "${OUT%.json}.log"
rm -rf "$TMP"
[ "${RM[write]}" != null ] && [ "${RM[read]}" != null ] && [ "${RM[rate]}" != null ] &&
	[ "${RM[lat]}" != null ] && [ "${RM[atomic]}" != null ]
