#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dist.sh SRC VERSION DEST: the source of krdma VERSION in DEST, and
# DEST.tar.gz beside it: git's files (tracked, and new ones not ignored)
# or, without git, the tree but build/; VERSION holds the whole version
# and dkms.conf is written from dkms.conf.in, so that DEST builds and
# installs the same version without git (DKMS, the packages).
set -eu

src=${1:?usage: dist.sh SRC VERSION DEST}
version=${2:?}
dest=${3:?}

rm -rf "$dest"
mkdir -p "$dest"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		(cd "$src" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
		(cd "$src" && cpio -p0dm --quiet "$dest")
else
	(cd "$src" && find . -path ./build -prune -o -print0 | cpio -p0dm --quiet "$dest")
fi
echo "$version" > "$dest/VERSION"
sed "s/@VERSION@/$version/" "$src/dkms.conf.in" > "$dest/dkms.conf"
tar -C "$(dirname "$dest")" --owner=0 --group=0 --sort=name \
	-czf "$dest.tar.gz" "$(basename "$dest")"
echo "krdma: $dest.tar.gz"
