#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What `make demo` runs in the VM (krdma.ko loaded, rxe0 on krdma0): the
# kernel's view of the RDMA links and krdmactl's.  Fails if krdmactl does
# not list rxe0.

KRDMA_REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
PATH=$KRDMA_REPO/build/bin:$PATH
export PATH
rc=0

echo "\$ rdma link show"
rdma link show || rc=1
echo
echo "\$ krdmactl version"
krdmactl version || rc=1
echo
echo "\$ krdmactl devices"
out=$(krdmactl devices) || rc=1
printf '%s\n' "$out"
if ! printf '%s\n' "$out" | grep -qw rxe0; then
	echo "demo: krdmactl devices does not list rxe0" >&2
	exit 1
fi
exit $rc
