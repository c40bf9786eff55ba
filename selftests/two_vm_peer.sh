#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The servers the second VM runs for two_vm.sh (run.sh --vms 2 --peer-cmd):
# krdmactl serve, krdmactl pingpong (rc, ud), ibv_rc_pingpong, the
# krdma_xvm control server (the transfer matrix), the servers of the
# fault cases (faults.sh, krdma_faults) and, on siw0, krdmactl serve and
# both rping servers, each on its own port.
# The VM is stopped when the first VM's tests end.

KRDMA_REPO=${KRDMA_REPO:-$(cd "$(dirname "$0")/.." && pwd)}

gidx=$(grep -l '0000:0000:0000:0000:0000:ffff:' \
	/sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | head -n 1)
gidx=${gidx##*/}
mkdir -p /tmp/krdma-save

# The servers on rxe0 listen on its address: a wildcard listen is one on
# siw0 as well, and a UD one there takes the RC one's TCP port
# (docs/known-problems.rst)
krdmactl serve -a "$RXE0_ADDR" -p 18600 --size 262144 --save /tmp/krdma-save \
	-T 600 &
krdmactl pingpong -p 18610 -n 200 -c -T 600 &
krdmactl pingpong -t ud -p 18611 -s 1024 -n 200 -T 600 &
ibv_rc_pingpong -d rxe0 -g "${gidx:-1}" -p 18612 -n 200 -c &
"$KRDMA_REPO/build/selftests/krdma_xvm" --serve --port 18620 --timeout 900 &
# faults (selftests/faults.sh): copies and UD streams, UC streams, reads
# of a buffer nobody writes, and the RNR/retry server of krdma_faults
mkdir -p /tmp/krdma-fsave
krdmactl serve -t rc,ud -a "$RXE0_ADDR" -p 18602 --size 262144 \
	--save /tmp/krdma-fsave -T 600 &
krdmactl serve -t uc -a "$RXE0_ADDR" -p 18603 --size 65536 -T 600 &
krdmactl serve -a "$RXE0_ADDR" -p 18604 --size 262144 -T 600 &
"$KRDMA_REPO/build/selftests/krdma_faults" --serve --port 18630 &
# over siw0 (iWARP, the second wire): a krdmactl server, rdma-core's rping
# server and krdmactl's
if [ -n "${SIW0_ADDR:-}" ]; then
	mkdir -p /tmp/krdma-siwsave
	krdmactl serve -a "$SIW0_ADDR" -p 18650 --size 262144 \
		--save /tmp/krdma-siwsave -T 600 &
	rping -s -a "$SIW0_ADDR" -p 18651 -S 64 -C 10 -V &
	krdmactl rping -s -a "$SIW0_ADDR" -p 18652 -S 64 -C 10 -V -T 600 &
fi
wait
