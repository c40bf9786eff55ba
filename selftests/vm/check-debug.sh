#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-debug.sh [RUN.SH-ARGS...]: what `make check-debug` runs.  Builds
# (once; cached) the debug kernel (selftests/vm/debug-kernel.sh: KASAN,
# lockdep, kmemleak, DEBUG_OBJECTS, UBSAN, fault injection), boots it with
# panic_on_warn=1 and kmemleak on, runs the selftest suite
# (selftests/run_tests.sh) in it, then scans kmemleak and fails on any
# suspected leak, a failed test, or a kernel warning (which panics the
# guest: run.sh then reports no status).  Ends with the build and run
# times, siw0's "siw0: N passed, N failed, N skipped" line and the sum of
# both runs' "N passed, N failed, N skipped".
#
# The suite runs as in `make check` (the debug kernel runs rxe traffic ~50x
# slower, but the tests move little data), the fuzzer for
# KRDMA_CHECK_FUZZ_DURATION seconds (default 60); then the iWARP subset on
# siw0 (run_tests.sh --dev siw0 --iwarp); a guest without siw0 fails.
#
# Env: KRDMA_CHECK_DEBUG_PANIC=0 boots without panic_on_warn, so that one
# report does not end the run (the run still fails on it; for surveying),
# KRDMA_CHECK_DEBUG_TIMEOUT (the VM watchdog, default 2700 s),
# KRDMA_CHECK_DEBUG_TESTS (programs to run, default all and then siw0's;
# when set, no siw0 run), MEM (default 2048),
# plus what run.sh and debug-kernel.sh read.  Extra arguments go to run.sh.
#
# check-debug.sh --fuzz SECS [RUN.SH-ARGS...]: what `make fuzz` runs: the
# fuzzer (build/selftests/krdma_fuzz) for SECS seconds in a VM, on the debug
# kernel if it is built (then with the kmemleak scan), else on Debian 6.1.
#
# Inside the guest (run.sh runs this script again): check-debug.sh --guest
# [CMD...] runs CMD (default: the suite) between kmemleak's clear and scan.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
# pci=noacpi: the KASAN/lockdep-instrumented ACPI interpreter under TCG runs
# QEMU's _PRT loop into AE_AML_LOOP_TIMEOUT (30 s per device, and then no
# INTx routing); the BIOS' PIRQ table routes them instead.
DEBUG_APPEND="kmemleak=on dummy.numdummies=0 pci=noacpi"
[ "${KRDMA_CHECK_DEBUG_PANIC:-1}" = 0 ] || DEBUG_APPEND="panic_on_warn=1 $DEBUG_APPEND"
VMDIR=$(dirname "$SELF")
REPO=$(cd "$VMDIR/../.." && pwd)

if [ "${1:-}" = --guest ]; then
	set +e
	KL=/sys/kernel/debug/kmemleak
	mountpoint -q /sys/kernel/debug 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
	if [ -w "$KL" ]; then
		# what boot allocated is not ours to judge
		echo clear > "$KL"
	else
		echo "check-debug: no $KL (not a kmemleak kernel?)"
	fi
	export KRDMA_FUZZ_DURATION=${KRDMA_FUZZ_DURATION:-60}
	t0=$(date +%s)
	shift
	if [ $# -gt 0 ]; then
		"$@"
		rc=$?
	else
		# shellcheck disable=SC2086
		"$REPO/selftests/run_tests.sh" ${KRDMA_CHECK_DEBUG_TESTS:-}
		rc=$?
		# then the iWARP subset on siw0 (built in): one more summary
		# line, the "siw0: ..." one before it
		if [ -n "${KRDMA_CHECK_DEBUG_TESTS:-}" ] ||
		   [ "${KRDMA_NO_SIW:-}" = KRDMA_SIW=0 ]; then
			:
		elif [ -n "${SIW0_ADDR:-}" ]; then
			"$REPO/selftests/run_tests.sh" --dev siw0 --iwarp || rc=1
		else
			echo "check-debug: no siw0 (${KRDMA_NO_SIW:-})"
			echo "siw0: 0 passed, 1 failed, 0 skipped"
			echo "0 passed, 1 failed, 0 skipped"
			rc=1
		fi
	fi
	echo "check-debug: ${*:-suite} took $(($(date +%s) - t0))s"
	if [ -w "$KL" ]; then
		# objects younger than 5 s are not reported; two scans, as
		# Documentation/dev-tools/kmemleak.rst suggests
		sleep 6
		echo scan > "$KL"
		sleep 1
		echo scan > "$KL"
		cat "$KL" > /tmp/kmemleak.txt
		n=$(grep -c '^unreferenced object' /tmp/kmemleak.txt)
		if [ "$n" != 0 ]; then
			echo "check-debug: kmemleak: $n suspected leaks:"
			head -n 400 /tmp/kmemleak.txt
			[ $rc = 0 ] && rc=1
		else
			echo "check-debug: kmemleak: no leaks"
		fi
	fi
	exit $rc
fi

if [ "${1:-}" = --fuzz ]; then
	secs=${2:?usage: check-debug.sh --fuzz SECS [RUN.SH-ARGS...]}
	shift 2
	FUZZ=(env KRDMA_FUZZ_DURATION="$secs" "$REPO/build/selftests/krdma_fuzz")
	if vars=$("$VMDIR/debug-kernel.sh" --cached); then
		eval "$vars"
		echo "check-debug: fuzzing ${secs}s on the debug kernel"
		exec env MEM="${MEM:-2048}" "$VMDIR/run.sh" --kernel "$DEBUG_BZIMAGE" \
			--modules "$DEBUG_MODULES" --kdir "$DEBUG_KDIR" \
			--timeout $((secs + 900)) \
			--append "$DEBUG_APPEND" "$@" \
			-- "$SELF" --guest "${FUZZ[@]}"
	fi
	echo "check-debug: no debug kernel built (make check-debug builds it): fuzzing ${secs}s on Debian 6.1"
	exec "$VMDIR/run.sh" --kernel 6.1 --timeout $((secs + 600)) "$@" -- "${FUZZ[@]}"
fi

t0=$SECONDS
vars=$("$VMDIR/debug-kernel.sh")
eval "$vars"
tbuild=$((SECONDS - t0))
echo "check-debug: debug kernel ready after ${tbuild}s: $DEBUG_BZIMAGE"

out=$(mktemp /tmp/krdma-check-debug.XXXXXX)
trap 'rm -f "$out"' EXIT
t1=$SECONDS
set +e
MEM=${MEM:-2048} "$VMDIR/run.sh" --kernel "$DEBUG_BZIMAGE" --modules "$DEBUG_MODULES" \
	--kdir "$DEBUG_KDIR" --timeout "${KRDMA_CHECK_DEBUG_TIMEOUT:-2700}" \
	--append "$DEBUG_APPEND" "$@" \
	-- env KRDMA_FUZZ_DURATION="${KRDMA_CHECK_FUZZ_DURATION:-60}" \
	KRDMA_CHECK_DEBUG_TESTS="${KRDMA_CHECK_DEBUG_TESTS:-}" "$SELF" --guest \
	2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
trun=$((SECONDS - t1))
# the suite's summary line and siw0's; their sum is the run's
lines=$(tr -d '\r' < "$out" | grep -E '^(siw0: )?[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' || true)
echo "=== check-debug: results ==="
echo "kernel build ${tbuild}s (0 if cached), VM run ${trun}s, total $((SECONDS - t0))s"
[ "$rc" = 0 ] || echo "check-debug: run.sh exit $rc"
# (two of them unless KRDMA_CHECK_DEBUG_TESTS or KRDMA_SIW=0)
want=2
[ -z "${KRDMA_CHECK_DEBUG_TESTS:-}" ] && [ "${KRDMA_SIW:-1}" != 0 ] || want=1
echo "$lines" | grep '^siw0: ' || true
n=$(echo "$lines" | grep -c '^[0-9]' || true)
line=$(echo "$lines" | awk -v want=$want '/^[0-9]/ { p += $1; f += $3; s += $5; n++ }
	END { if (n < want) f++; printf "%d passed, %d failed, %d skipped\n", p, f, s }')
if [ "$n" -lt $want ]; then
	echo "check-debug: $want summary lines expected, $n found"
	[ "$rc" != 0 ] || rc=1
fi
echo "$line"
exit "$rc"
