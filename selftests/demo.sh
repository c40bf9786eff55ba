#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What `make demo` runs in the VM (krdma.ko loaded, rxe0 on krdma0): the
# kernel's view of the RDMA links and krdmactl's, then a verified transfer
# over rxe0 through kernel verbs: krdmactl pingpong serving, rdma-core's
# ibv_rc_pingpong (userspace verbs) as the client, both checking content.
# Fails if krdmactl does not list rxe0 or the transfer fails.

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

gidx=$(grep -l '0000:0000:0000:0000:0000:ffff:' \
	/sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | head -n 1)
gidx=${gidx##*/}
echo
echo "\$ krdmactl pingpong -g ${gidx:-1} -s 65536 -n 200 -c &"
echo "\$ ibv_rc_pingpong -d rxe0 -g ${gidx:-1} -s 65536 -n 200 -c $RXE0_ADDR"
krdmactl pingpong -g "${gidx:-1}" -s 65536 -n 200 -c &
server=$!
sleep 1
ibv_rc_pingpong -d rxe0 -g "${gidx:-1}" -s 65536 -n 200 -c "$RXE0_ADDR" ||
	rc=1
wait $server || rc=1
if [ $rc = 0 ]; then
	echo "demo: 200 x 64 KiB each way over rxe0, content checked: OK"
else
	echo "demo: transfer FAILED" >&2
fi
exit $rc
