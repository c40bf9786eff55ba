#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# linux-source.sh DIR: unpack from Debian's linux-source-6.1 tarball the few
# files krdma takes from the kernel itself (kselftest_harness.h and
# kselftest.h for the selftests, checkpatch.pl and its data files,
# kernel-doc and its Sphinx extension) into DIR,
# installing the package if it is missing.  Idempotent and cheap once done.
set -euo pipefail

dest=${1:?usage: linux-source.sh DIR}
stamp=$dest/.unpacked-3
[ -e "$stamp" ] && exit 0

tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$tarball" ]; then
	echo "linux-source.sh: installing linux-source-6.1" >&2
	[ "$(id -u)" = 0 ] || { echo "linux-source.sh: need root to apt-get install linux-source-6.1" >&2; exit 1; }
	apt-get update -qq >/dev/null 2>&1 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-source-6.1 >/dev/null
	tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
fi

top=$(basename "$tarball"); top=${top%.tar.*}
members=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/kernel-doc
	Documentation/sphinx/kerneldoc.py
	Documentation/sphinx/kernellog.py
	scripts/spelling.txt
	scripts/const_structs.checkpatch
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xf "$tarball" -C "$tmp" "${members[@]/#/$top/}"
mkdir -p "$dest"
cp -a "$tmp/$top/." "$dest/"
touch "$stamp"
