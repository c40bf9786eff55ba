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

src=${1:-$(dirname "$0")/..}
release=$(cat "$src/VERSION")
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)
if [ -z "$top" ] || [ "$(cd "$top" && pwd -P)" != "$(cd "$src" && pwd -P)" ]; then
	echo "$release"
	exit 0
fi
base=$(git -C "$src" log -1 --format=%H -- VERSION 2>/dev/null || true)
if [ -z "$base" ]; then
	echo "$release"
	exit 0
fi
n=$(git -C "$src" rev-list --count "$base..HEAD")
if [ "$n" = 0 ]; then
	echo "$release"
else
	echo "$release+git$n.g$(git -C "$src" rev-parse --short=7 HEAD)"
fi
