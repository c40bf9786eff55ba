#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh: what `make check` runs.  The selftests in a VM on each kernel
# of the matrix (kernels.sh: 5.10, 6.1, 6.12 and sid's newest), on each of
# the bed's two drivers: soft-RoCE rxe0 and soft-iWARP siw0 (built by
# siw.sh for the kernel); then one summary line per kernel, one per driver,
# and the total of the "N passed, N failed, N skipped" lines the runs end
# with.
#
# What runs where, to fit CI's 90 minutes on a cold 2-core machine: on rxe,
# the whole suite (selftests/run_tests.sh) and the two-VM transfers
# (selftests/two_vm.sh against two_vm_peer.sh) on the oldest and the newest
# kernel, the kernels most unlike the one krdma was written on; the smoke
# subset (run_tests.sh --smoke) on the kernels between, whose whole suite
# make check-debug runs on a 6.1 debug kernel.  On siw0, on every kernel,
# the iWARP subset (run_tests.sh --dev siw0 --iwarp); a guest without
# siw0 fails the run.
#
# Env: KRDMA_CHECK_KERNELS (default: the matrix), KRDMA_CHECK_FULL (the
# kernels of the whole suite and of two VMs, default "5.10 sid"; "all" for
# every kernel), KRDMA_CHECK_TESTS (the in-guest runner of a whole suite,
# default $REPO/selftests/run_tests.sh), KRDMA_CHECK_NO_TWO_VM (no two-VM
# runs), KRDMA_CHECK_NO_SIW (no siw0 runs of the suite) or KRDMA_SIW=0 (no
# siw0 at all: the two-VM siw0 cases skip), plus what run.sh reads
# (KRDMA_CACHE, KRDMA_VM_TIMEOUT; MEM, 2048 here).  Extra arguments go to
# run.sh.  A VM run that fails (kernel warning, watchdog, non-zero status,
# no summary) counts at least one failure and makes check.sh exit non-zero.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
REPO=$(cd "$VMDIR/../.." && pwd)
# shellcheck source=selftests/vm/kernels.sh
. "$VMDIR/kernels.sh"
KERNELS=${KRDMA_CHECK_KERNELS:-$KRDMA_MATRIX}
FULL=${KRDMA_CHECK_FULL:-5.10 sid}
TESTS=${KRDMA_CHECK_TESTS:-$REPO/selftests/run_tests.sh}
# room for a 1 GiB buffer of huge pages (krdma_ubuf's huge_pages)
export MEM=${MEM:-2048}

out=$(mktemp /tmp/krdma-check.XXXXXX)
trap 'rm -f "$out"' EXIT

tp=0 tf=0 ts=0 bad=0
results=()
kernel_lines=()
# per driver: "passed failed skipped"
rxe_sum='' siw_sum=''
# what each failed run said of its failures, printed before the results:
# a CI log's tail must name what failed
failures=()

# add_sum "P F S" P F S: the sums
add_sum() {
	local a b c
	read -r a b c <<<"${1:-0 0 0}"
	echo "$((a + $2)) $((b + $3)) $((c + $4))"
}

# run_one DRIVER LABEL RUN.SH-ARGS...: one VM run whose CMD ends with a
# summary line; adds it to the totals, to the kernel's (kp, kf, ks) and to
# DRIVER's (but the cases of a "siw0: P passed, F failed, S skipped" line
# before it: to siw's, and the kernel's ksiw), and sets REL from what
# run.sh booted
run_one() {
	local driver=$1 label=$2 line rc p f s sp sf ss siw_line why
	shift 2
	echo "=== check: $label ==="
	set +e
	"$VMDIR/run.sh" "$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	set -e
	line=$(tr -d '\r' < "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n 1 || true)
	if [ -n "$line" ]; then
		read -r p _ f _ s _ <<<"$line"
	else
		p=0 f=0 s=0
	fi
	REL=$(sed -nE 's/^run\.sh: ready to boot after [0-9]+s \(([^,]+),.*/\1/p' "$out" | tail -n 1)
	why=
	[ "$rc" = 0 ] || why="run.sh exit $rc"
	[ -n "$line" ] || why="${why:+$why, }no summary line"
	if [ -n "$why" ]; then
		bad=1
		[ "$f" -gt 0 ] || f=1
	fi
	tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
	# a whole run on rxe0 may have cases on siw0 too, in a "siw0: ..."
	# line before its summary
	sp=0 sf=0 ss=0 siw_line=
	if [ "$driver" = siw ]; then
		sp=$p sf=$f ss=$s siw_line=1
	elif [ -n "$line" ]; then
		siw_line=$(tr -d '\r' < "$out" | grep -E '^siw0: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n 1 || true)
		[ -z "$siw_line" ] || read -r _ sp _ sf _ ss _ <<<"$siw_line"
	fi
	if [ "$driver" = rxe ]; then
		kp=$((kp + p - sp)) kf=$((kf + f - sf)) ks=$((ks + s - ss))
		rxe_sum=$(add_sum "$rxe_sum" $((p - sp)) $((f - sf)) $((s - ss)))
	fi
	if [ -n "$siw_line" ]; then
		ksiw=$(add_sum "$ksiw" "$sp" "$sf" "$ss")
		siw_sum=$(add_sum "$siw_sum" "$sp" "$sf" "$ss")
	fi
	results+=("$label${REL:+ ($REL)}: $p passed, $f failed, $s skipped${why:+ ($why)}")
	[ "$f" = 0 ] || failures+=("$label: $(failed_cases)")
}

# failed_cases: from $out, a failed run's failing TAP lines (a program's
# own, at the top level or as nested cases), what run.sh said of the kernel
# log and the problems it found there, and the watchdog's list of stuck
# threads with the top of each stack (either guest's)
failed_cases() {
	echo
	tr -d '\r' < "$out" |
		grep -aE '^(\[peer\] )?(# )*not ok |^run\.sh: (kernel problems|no exit status)|^(\[peer\] )?vm: watchdog: (up|thread|  )|^(\[peer\] )?\[ *[0-9]+\.[0-9]+\] .*(BUG:|WARNING:|Oops|KASAN|hung_task|blocked for more|refcount_t|Kernel panic|UBSAN|general protection|soft lockup|rcu.*stall)' |
		grep -avE 'watchdog:   .*(do_syscall_64|entry_SYSCALL|x64_sys_call|__x64_sys)' |
		head -n 60 | sed 's/^/  /' || true
}

for k in $KERNELS; do
	kp=0 kf=0 ks=0 REL='' ksiw=''
	case " $FULL " in
	*" $k "*|" all ") full=1 ;;
	*) full=0 ;;
	esac
	if [ $full = 1 ]; then
		run_one rxe "kernel $k" --kernel "$k" "$@" -- "$TESTS"
	else
		run_one rxe "kernel $k, smoke" --kernel "$k" "$@" -- "$REPO/selftests/run_tests.sh" --smoke
	fi
	series=$k
	[ -z "$REL" ] || series=$(kernel_series "$REL")
	# the same build, two guests: transfers across a (qemu) wire
	if [ $full = 1 ] && [ -z "${KRDMA_CHECK_NO_TWO_VM:-}" ]; then
		run_one rxe "kernel $k, two VMs" --kernel "$k" --no-build --vms 2 \
			--peer-cmd "$REPO/selftests/two_vm_peer.sh" "$@" \
			-- "$REPO/selftests/two_vm.sh"
	fi
	# the same build on siw0: no summary line (a failure) without it
	if [ -z "${KRDMA_CHECK_NO_SIW:-}" ] && [ "${KRDMA_SIW:-1}" != 0 ]; then
		# shellcheck disable=SC2016 # the guest's $SIW0_ADDR
		run_one siw "kernel $k, siw0" --kernel "$k" --no-build "$@" \
			-- sh -c '[ -n "${SIW0_ADDR:-}" ] || { echo "check: no siw0"; exit 1; }; exec "$0" "$@"' \
			"$REPO/selftests/run_tests.sh" --dev siw0 --iwarp
	fi
	if [ -n "$ksiw" ]; then
		read -r sp sf ss <<<"$ksiw"
		ksiw="$sp passed, $sf failed, $ss skipped"
	fi
	kernel_lines+=("$series: $kp passed, $kf failed, $ks skipped on rxe$([ $full = 1 ] || echo " (smoke)")${ksiw:+; $ksiw on siw}")
done

if [ ${#failures[@]} -gt 0 ]; then
	echo "=== check: failures ==="
	for r in "${failures[@]}"; do echo "$r"; done
fi
echo "=== check: results ==="
for r in "${results[@]}"; do echo "$r"; done
for r in "${kernel_lines[@]}"; do echo "$r"; done
for d in rxe siw; do
	case $d in rxe) sum=$rxe_sum ;; siw) sum=$siw_sum ;; esac
	[ -n "$sum" ] || continue
	read -r p f s <<<"$sum"
	echo "$d: $p passed, $f failed, $s skipped"
done
echo "$tp passed, $tf failed, $ts skipped"
[ "$bad" = 0 ] && [ "$tf" = 0 ]
