#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lint.sh [SERIES...]: what `make lint` runs after checkpatch.  The module
# built with W=1 and sparse (C=2) against each kernel of the matrix
# (kernels.sh; the headers installed, or the suite's build root made, as
# make check does); any warning or error fails.  sparse is installed on
# the host if missing.  Then the selftests built in a kernel tree's
# kselftest runner (kselftest-tree.sh).
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
note() { echo "lint.sh: $*" >&2; }
die() { note "$*"; exit 1; }
# shellcheck source=selftests/vm/kernels.sh
. "$VMDIR/kernels.sh"

apt_install sparse
BUILD=$KRDMA_REPO/build/lint
log=$KRDMA_REPO/build/lint.log
status=0
# shellcheck disable=SC2048,SC2086 # a list of series
for series in ${*:-$KRDMA_MATRIX}; do
	KDIR=
	kernel_resolve "$series"
	extra=()
	root=
	[ -z "$CHROOT_SUITE" ] || root=$("$VMDIR/chroot.sh" "$CHROOT_SUITE" path)
	common=$root${KDIR%-amd64}-common
	# Kernels whose kbuild validates sparse with scripts/checker-valid.sh
	# skip sparse when it is missing, and Debian's headers do not ship it:
	# the same validation here (sparse must take __typeof_unqual__), then
	# sparse forced on
	if grep -qs checker-valid.sh "$common/Makefile" &&
	   [ ! -e "$common/scripts/checker-valid.sh" ]; then
		printf 'static inline int u(const int *q)\n{\n\t__typeof_unqual__(*q) v = *q;\n\treturn v;\n}\n' \
			> "$KRDMA_REPO/build/checker-valid.c"
		if kernel_run sparse build/checker-valid.c 2>&1 | grep error; then
			note "$series: sparse too old for this kernel"
			status=1
			continue
		fi
		extra=(KBUILD_CHECKSRC=2)
	fi
	rm -rf "$BUILD"
	if ! kernel_make --no-print-directory BUILD="$BUILD" W=1 C=2 "${extra[@]}" module > "$log" 2>&1; then
		cat "$log"
		status=1
		continue
	fi
	if grep -E 'warning:|error:' "$log"; then
		status=1
		continue
	fi
	grep -q '  CHECK ' "$log" || { note "$series: sparse did not run"; status=1; continue; }
	echo "lint: $(kernel_series "$REL") ($REL): W=1 and sparse clean"
done
rm -rf "$BUILD"
"$VMDIR/kselftest-tree.sh" || status=1
exit $status
