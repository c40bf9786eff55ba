#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run_tests.sh [--dev DEV] [--smoke | --iwarp | PROG...]: run the krdma
# selftests (inside the test VM, as root, krdma.ko loaded, rxe0 present)
# and print one TAP stream:
#
#   TAP version 13 / 1..N / each program's output as "# " lines /
#   "ok N selftests: krdma: PROG" (or "not ok", or "# SKIP") after a
#   "# PROG: N s" line with its time,
#
# --dev DEV (or $KRDMA_TEST_DEV) runs them on the device DEV (siw0) instead
# of rxe0, at $KRDMA_TEST_ADDR and $KRDMA_TEST_ADDR6, else at the addresses
# the test bed exports for it ($SIW0_ADDR, $SIW0_ADDR6 for siw0).  A test
# that needs what DEV lacks skips, saying so; programs that only make sense
# on rxe (they add and delete rxe devices or unload the module) are skipped
# with the reason printed.  Each program's line and the totals then carry
# "[DEV]", the last line "DEV: P passed, F failed, S skipped" before the
# plain one, so that a summary can count per driver.
#
# --smoke runs the named subset that make check runs on the kernels between
# the oldest and the newest, and make check-packages on the packaged module:
# the ioctl contract, discovery, transfers of every transport and operation,
# rdma_cm, krdmactl, and unload/reload.
#
# --iwarp runs the programs that make check and make check-debug run on an
# iWARP device (--dev siw0): the ioctl contract, discovery, buffers (kernel
# and user), transfers, posts, invalidation, destruction, QP states,
# rdma_cm, krdmactl, rping's interop, sessions, tracing, races, the
# in-kernel benchmark, what iWARP refuses and (on the debug kernel) the
# fail-nth sweep (what it lacks skips, saying so).
#
# then the test cases of all programs summed from their "# Totals:" lines
# as a last line "P passed, F failed, S skipped".  Exit 1 if anything failed.
# POSIX sh and busybox applets only.

here=$(cd "$(dirname "$0")" && pwd)
KRDMA_REPO=${KRDMA_REPO:-$(cd "$here/.." && pwd)}
export KRDMA_REPO
PATH=$KRDMA_REPO/build/selftests:$KRDMA_REPO/build/bin:$PATH
export PATH

# krdma_lifecycle unloads and reloads the module: always last.  krdma_fuzz
# just before it: it deletes and re-adds devices, and whatever else in the
# kernel it may still break (docs/known-problems.rst: it found one rdma_cm
# and rxe bug that killed rxe0's CM for good) should not fail later tests
# for nothing of their own.
smoke="krdma_uapi krdma_devices krdma_transfer krdma_cm krdma_cli krdma_lifecycle"
iwarp="krdma_uapi krdma_devices krdma_netns krdma_transfer krdma_buffers
	krdma_qp krdma_ah krdma_post krdma_destroy krdma_cm krdma_cli
	krdma_rping krdma_ubuf krdma_srq krdma_iwarp krdma_inval krdma_trace
	krdma_sessions krdma_contract krdma_races krdma_bench krdma_failnth"
if [ "${1:-}" = --dev ]; then
	[ -n "${2:-}" ] || { echo "run_tests.sh: --dev needs a device" >&2; exit 2; }
	KRDMA_TEST_DEV=$2
	shift 2
fi
dev=${KRDMA_TEST_DEV:-}
if [ -n "$dev" ]; then
	export KRDMA_TEST_DEV="$dev"
	# the bed's $SIW0_ADDR for siw0, as $RXE0_ADDR for rxe0
	var=$(echo "$dev" | tr 'a-z' 'A-Z' | tr -c 'A-Z0-9\n' _)_ADDR
	if [ -z "${KRDMA_TEST_ADDR:-}" ]; then
		KRDMA_TEST_ADDR=$(eval "echo \"\${$var:-}\"")
		[ -n "$KRDMA_TEST_ADDR" ] && export KRDMA_TEST_ADDR
	fi
	if [ -z "${KRDMA_TEST_ADDR6:-}" ]; then
		KRDMA_TEST_ADDR6=$(eval "echo \"\${${var}6:-}\"")
		[ -n "$KRDMA_TEST_ADDR6" ] && export KRDMA_TEST_ADDR6
	fi
	label=" [$dev]"
else
	label=
fi
case ${1:-} in
--smoke)
	shift
	# shellcheck disable=SC2086 # a list of programs
	set -- $smoke ;;
--iwarp)
	shift
	[ -n "$dev" ] || { echo "run_tests.sh: --iwarp needs --dev DEV first" >&2; exit 2; }
	# shellcheck disable=SC2086 # a list of programs
	set -- $iwarp ;;
esac
# the order of the Makefile's TEST_GEN_PROGS, as the kernel's runner has it
all=$(awk '/^TEST_GEN_PROGS :=/ { f = 1; sub(/^TEST_GEN_PROGS :=/, "") }
	f { c = /\\$/; sub(/\\$/, ""); printf "%s ", $0; if (!c) exit }' "$here/Makefile")
progs=${*:-$all}

timeout_s=$(sed -n 's/^timeout=\([0-9][0-9]*\)$/\1/p' "$here/settings" 2>/dev/null)
timeout_s=${timeout_s:-600}

tmp=${TMPDIR:-/tmp}/krdma-selftests.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
for p in $progs; do n=$((n + 1)); done

# Why program $1 does not run on the device $dev (nothing: it runs).
dev_skip() {
	[ -n "$dev" ] && [ "$dev" != rxe0 ] || return 0
	case $1 in
	krdma_lifecycle)
		echo "unloads krdma.ko and adds and deletes rxe devices" ;;
	krdma_removal)
		echo "removes rxe devices of its own under the tests" ;;
	krdma_interop)
		echo "its peers, rdma-core's ibv_*_pingpong, connect QPs by hand on rxe0" ;;
	esac
}

echo "TAP version 13"
echo "1..$n"

passed=0 failed=0 skipped=0 i=0 anyfail=0
for p in $progs; do
	i=$((i + 1))
	log=$tmp/$p.log
	: >"$log"
	echo "# selftests: krdma: $p"
	if [ -x "$KRDMA_REPO/build/selftests/$p" ]; then
		exe=$KRDMA_REPO/build/selftests/$p
	else
		exe=$(command -v "$p" 2>/dev/null)
	fi
	if [ -z "$exe" ] || [ ! -x "$exe" ]; then
		echo "# $p: not found (make selftests)"
		echo "not ok $i selftests: krdma: $p$label # not found"
		failed=$((failed + 1)) anyfail=1
		continue
	fi
	why=$(dev_skip "$p")
	if [ -n "$why" ]; then
		echo "# $p: skipped on $dev: $why"
		echo "ok $i selftests: krdma: $p$label # SKIP $why"
		skipped=$((skipped + 1))
		continue
	fi
	# Stream the output while keeping it for the Totals line.
	t0=$(date +%s)
	{ timeout "$timeout_s" "$exe" 2>&1; echo $? >"$tmp/rc"; } |
		tee "$log" | sed 's/^/# /'
	echo "# $p: $(($(date +%s) - t0)) s"
	rc=$(cat "$tmp/rc" 2>/dev/null)
	rc=${rc:-1}

	totals=$(grep '^# Totals: pass:' "$log" | tail -n 1)
	if [ -n "$totals" ]; then
		# shellcheck disable=SC2046 # six numbers, split on purpose
		set -- $(echo "$totals" | sed 's/.*pass:\([0-9]*\) fail:\([0-9]*\) xfail:\([0-9]*\) xpass:\([0-9]*\) skip:\([0-9]*\) error:\([0-9]*\).*/\1 \2 \3 \4 \5 \6/')
		if [ $# -eq 6 ]; then
			p_pass=$(($1 + $3)) p_fail=$(($2 + $4 + $6)) p_skip=$5
		else
			totals=
		fi
	fi
	if [ -z "$totals" ]; then
		# No Totals: a skipped or a dead program counts as one case.
		if [ "$rc" = 4 ]; then
			p_pass=0 p_fail=0 p_skip=1
		else
			p_pass=0 p_fail=1 p_skip=0
		fi
	elif [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$p_fail" = 0 ]; then
		# It printed Totals and failed after all (or timed out).
		p_fail=1
	fi
	passed=$((passed + p_pass))
	failed=$((failed + p_fail))
	skipped=$((skipped + p_skip))

	case $rc in
	0)
		if [ "$p_fail" != 0 ]; then
			echo "not ok $i selftests: krdma: $p$label # exit=0 with failed cases"
			anyfail=1
		elif [ "$p_pass" = 0 ] && [ "$p_skip" != 0 ]; then
			echo "ok $i selftests: krdma: $p$label # SKIP"
		else
			echo "ok $i selftests: krdma: $p$label"
		fi ;;
	4)
		echo "ok $i selftests: krdma: $p$label # SKIP" ;;
	124|137|143)
		echo "not ok $i selftests: krdma: $p$label # TIMEOUT ${timeout_s} seconds"
		anyfail=1 ;;
	*)
		echo "not ok $i selftests: krdma: $p$label # exit=$rc"
		anyfail=1 ;;
	esac
done

[ -z "$dev" ] || echo "$dev: $passed passed, $failed failed, $skipped skipped"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ "$anyfail" = 0 ]
