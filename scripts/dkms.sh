#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dkms.sh install DIST: put the make dist tree DIST in /usr/src/krdma-VERSION
#   and have DKMS build and install krdma for every kernel whose headers are
#   installed (/lib/modules/RELEASE/build); AUTOINSTALL then rebuilds it for
#   each kernel installed later.  A krdma of the same version already in
#   DKMS is replaced.
# dkms.sh uninstall VERSION: remove krdma VERSION from DKMS and /usr/src.
#
# Needs root; installs dkms if missing.
set -eu
# not the variables of a make dkms-install (make exports those of its
# command line): DKMS's own make must not see them
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES KDIR KRDMA_VERSION W C EXTRA_CFLAGS

what=${1:?usage: dkms.sh install DIST | uninstall VERSION}
if ! command -v dkms >/dev/null; then
	echo "dkms.sh: installing dkms" >&2
	apt-get update -qq >/dev/null 2>&1 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dkms >/dev/null
fi

remove() {
	if dkms status -m krdma -v "$1" 2>/dev/null | grep -q .; then
		dkms remove -m krdma -v "$1" --all
	fi
	rm -rf "/usr/src/krdma-$1"
}

case $what in
install)
	dist=${2:?usage: dkms.sh install DIST}
	version=$(cat "$dist/VERSION")
	remove "$version"
	mkdir -p "/usr/src/krdma-$version"
	# what a module build needs, as the krdma-dkms package ships it
	mkdir -p "/usr/src/krdma-$version/scripts"
	(cd "$dist" && cp -a Makefile Kbuild VERSION dkms.conf module probes uapi \
		"/usr/src/krdma-$version/" &&
	 cp -a scripts/version.sh scripts/kernel-probe.sh scripts/sign-module.sh \
		"/usr/src/krdma-$version/scripts/")
	dkms add -m krdma -v "$version"
	n=0 failed=0
	for b in /lib/modules/*/build; do
		[ -e "$b/Makefile" ] || continue
		rel=$(basename "$(dirname "$b")")
		n=$((n + 1))
		# 77: a kernel dkms.conf excludes; any other failure: the next
		# kernel still gets its build
		rc=0
		dkms install -m krdma -v "$version" -k "$rel" || rc=$?
		case $rc in
		0) ;;
		77) echo "dkms.sh: $rel: not a kernel krdma builds on, skipped" ;;
		*) echo "dkms.sh: $rel: dkms install failed ($rc)" >&2; failed=1 ;;
		esac
	done
	[ $n -gt 0 ] || echo "dkms.sh: no kernel headers installed: krdma $version is added, built for none yet"
	exit $failed
	;;
uninstall)
	remove "${2:?usage: dkms.sh uninstall VERSION}"
	;;
*)
	echo "usage: dkms.sh install DIST | uninstall VERSION" >&2
	exit 2
	;;
esac
