#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest-tree.sh: the selftests dropped into a kernel tree's kselftest
# runner build and install there (make lint runs it).  From Debian's
# linux-source-6.1 tarball (installed if missing), the runner's part of a
# tree in build/kselftest-tree; selftests/ copied to
# tools/testing/selftests/krdma with uapi/krdma.h beside it; then
# make -C tools/testing/selftests TARGETS=krdma, and the list its
# run_tests and install take (lib.mk's emit_tests) must name every test
# in run order.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
REPO=$(cd "$VMDIR/../.." && pwd)
DIR=$REPO/build/kselftest-tree

note() { echo "kselftest-tree.sh: $*" >&2; }

tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$tarball" ]; then
	"$VMDIR/linux-source.sh" "$REPO/build/linux-source"
	tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
fi
top=$(basename "$tarball")
top=${top%.tar.*}
rm -rf "$DIR"
mkdir -p "$DIR"
# the runner's files: the selftests directory's own and kselftest/
members=$(tar -tf "$tarball" |
	grep -E "^$top/tools/testing/selftests/(kselftest/)?[^/]+\$|^$top/scripts/subarch.include\$")
# shellcheck disable=SC2086 # a list of members
tar -xf "$tarball" -C "$DIR" $members
tree=$DIR/$top
st=$tree/tools/testing/selftests
mkdir -p "$st/krdma"
cp "$REPO"/selftests/*.c "$REPO"/selftests/*.h "$REPO"/selftests/Makefile \
	"$REPO"/selftests/settings "$REPO"/selftests/config "$st/krdma/"
cp "$REPO/uapi/krdma.h" "$st/krdma/"
make -s -C "$st" TARGETS=krdma > "$DIR/build.log" 2>&1 ||
	{ cat "$DIR/build.log"; note "make TARGETS=krdma failed"; exit 1; }
if grep -E 'warning:|error:' "$DIR/build.log"; then
	note "the build warned"
	exit 1
fi
# what run_tests and an install's kselftest-list.txt take: lib.mk's list
have=$(make -s --no-print-directory -C "$st/krdma" emit_tests COLLECTION=krdma)
want=$(make -s --no-print-directory -C "$REPO/selftests" -f - print-progs <<<'include Makefile
print-progs:
	@echo $(TEST_GEN_PROGS)' | tr ' ' '\n' | sed 's/^/krdma:/')
if [ "$have" != "$want" ]; then
	note "the runner's list is not the tests in run order:"
	diff <(echo "$want") <(echo "$have") >&2 || true
	exit 1
fi
for p in $(sed 's/^krdma://' <<<"$have"); do
	[ -x "$st/krdma/$p" ] || { note "no $p built"; exit 1; }
done
echo "kselftest-tree: $(wc -l <<<"$have") tests build in a kernel tree's kselftests and are run in order ($top)"
