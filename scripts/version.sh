#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# version.sh [SRCDIR]: krdma's version, the one that modinfo, krdmactl -V,
# dkms.conf and the packages show.  VERSION holds the release; in a git
# work tree of krdma, a build N commits past the commit that set it is
# RELEASE+gitN.gHASH (a Debian version that sorts after the release and
# grows with every commit).  A source tree without git (a DKMS copy, a
# tarball) has the whole version in VERSION: make dist writes it there.
set -eu

src=$(cd "${1:-$(dirname "$0")/..}" && pwd -P)
release=$(cat "$src/VERSION")
if [ ! -e "$src/.git" ]; then
	echo "$release"
	exit 0
fi
# (a tree another user owns, built as root, is still this tree)
git() { command git -c safe.directory="$src" -C "$src" "$@"; }
if ! top=$(git rev-parse --show-toplevel 2>/dev/null) ||
   [ "$(cd "$top" && pwd -P)" != "$src" ]; then
	echo "version.sh: $src/.git is not a git work tree git can read" >&2
	exit 1
fi
base=$(git log -1 --format=%H -- VERSION)
n=$(git rev-list --count "${base:+$base..}HEAD")
if [ -n "$base" ] && [ "$n" = 0 ]; then
	echo "$release"
else
	echo "$release+git$n.g$(git rev-parse --short=7 HEAD)"
fi
