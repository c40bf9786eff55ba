#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh: what `make check` runs.  Every selftest (selftests/run_tests.sh)
# in an rxe VM on each Debian kernel series, then the sum of the
# "N passed, N failed, N skipped" lines the runs end with.
#
# Each kernel also gets a run on two VMs (selftests/two_vm.sh against the
# servers of two_vm_peer.sh) unless KRDMA_CHECK_NO_TWO_VM is set.
#
# Env: KRDMA_CHECK_KERNELS (default "6.1 6.12"), KRDMA_CHECK_TESTS (the
# in-guest runner, default $REPO/selftests/run_tests.sh), plus what run.sh
# reads (KRDMA_CACHE, KRDMA_VM_TIMEOUT, MEM).  Extra arguments go to run.sh.
# A VM run that fails (kernel warning, watchdog, non-zero status, no summary)
# counts at least one failure and makes check.sh exit non-zero.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
REPO=$(cd "$VMDIR/../.." && pwd)
KERNELS=${KRDMA_CHECK_KERNELS:-6.1 6.12}
TESTS=${KRDMA_CHECK_TESTS:-$REPO/selftests/run_tests.sh}

out=$(mktemp /tmp/krdma-check.XXXXXX)
trap 'rm -f "$out"' EXIT

tp=0 tf=0 ts=0 bad=0
results=()

# run_one LABEL RUN.SH-ARGS...: one VM run whose CMD ends with a summary line
run_one() {
	local label=$1 line rc p f s why
	shift
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
	why=
	[ "$rc" = 0 ] || why="run.sh exit $rc"
	[ -n "$line" ] || why="${why:+$why, }no summary line"
	if [ -n "$why" ]; then
		bad=1
		[ "$f" -gt 0 ] || f=1
	fi
	tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
	results+=("$label: $p passed, $f failed, $s skipped${why:+ ($why)}")
}

for k in $KERNELS; do
	run_one "kernel $k" --kernel "$k" "$@" -- "$TESTS"
	# the same build, two guests: transfers across a (qemu) wire
	[ -n "${KRDMA_CHECK_NO_TWO_VM:-}" ] ||
		run_one "kernel $k, two VMs" --kernel "$k" --no-build --vms 2 \
			--peer-cmd "$REPO/selftests/two_vm_peer.sh" "$@" \
			-- "$REPO/selftests/two_vm.sh"
done

echo "=== check: results ==="
for r in "${results[@]}"; do echo "$r"; done
echo "$tp passed, $tf failed, $ts skipped"
[ "$bad" = 0 ] && [ "$tf" = 0 ]
