#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# deb.sh DIST OUT: the Debian packages of the make dist tree DIST in OUT:
# krdma-dkms (the module's source, built by DKMS on install) and krdmactl
# (the tool, its man page, the uAPI header), at the version in DIST's
# VERSION; debian/changelog gets an entry for it if its newest is another.
# lintian must find no error and no warning.  The build dependencies are
# installed if missing (root).
set -eu

dist=${1:?usage: deb.sh DIST OUT}
out=${2:?usage: deb.sh DIST OUT}
version=$(cat "$dist/VERSION")

missing=
for p in build-essential debhelper dh-dkms lintian; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deb.sh: installing$missing" >&2
	apt-get update -qq >/dev/null 2>&1 || true
	# shellcheck disable=SC2086 # a list of packages
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
fi

rm -rf "$out"
mkdir -p "$out/src"
src=$out/src/krdma-$version
cp -a "$dist" "$src"
cd "$src"
if [ "$(dpkg-parsechangelog -S Version)" != "$version" ]; then
	{
		echo "krdma ($version) unstable; urgency=medium"
		echo
		echo "  * Built from the source tree of krdma $version."
		echo
		echo " -- $(dpkg-parsechangelog -S Maintainer)  $(date -R)"
		echo
		cat debian/changelog
	} > debian/changelog.new
	mv debian/changelog.new debian/changelog
fi
# not the variables of a make deb (make exports those of its command line):
# they would reach debian/rules' make
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES BUILD KDIR KRDMA_VERSION PREFIX \
	DOCDIR DESTDIR INSTALL_MOD_DIR W C EXTRA_CFLAGS
dpkg-buildpackage -us -uc -b > "$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	exit 1
}
cd "$out"
mv src/*.deb src/*.changes src/*.buildinfo .
rm -rf src
lintian --fail-on error,warning --tag-display-limit 0 ./*.changes
ls "$out"/*.deb
