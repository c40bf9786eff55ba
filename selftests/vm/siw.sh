# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# siw.sh (sourced by run.sh, after kernels.sh and kernel_fetch_image): the
# soft-iWARP driver for the guest's siw0.  Debian builds no siw (RDMA_SIW
# is not set in its configs), but the driver is self-contained
# (drivers/infiniband/sw/siw) and builds out of tree against the kernel's
# headers from the Debian source package of the image's own version.
#
#   siw_module    siw.ko for the resolved kernel, built once and cached in
#                 $CACHE/siw/<ABI>_<source version>/siw.ko: sets SIW_KO
#                 (empty when there is none: the guest then goes without
#                 siw0, and the rest runs as before)
#
# The source comes from linux-source-<series> of the image's version: from
# /usr/src when that version is installed there, else downloaded (the
# host's apt, or the suite's build root, chroot.sh) and only the siw
# directory unpacked from it; the deb is not kept.  A suite other than the
# host's builds it in its build root, with the compiler its kernel was
# built with, as krdma.ko is.  A build that failed is remembered (with its
# log) so that every run does not pay for the download again; so is a
# source package the suite does not have.
#
# The caller defines note, die, CACHE, and has run kernel_resolve and
# kernel_fetch_image (ABI, REL, KDIR, CHROOT_SUITE, KKDIR), with the cache
# lock held.  KRDMA_SIW=0 skips it (SIW_KO empty).

# bump when what siw_module produces changes
SIW_RECIPE=1

# siw_source OUT SERIES VERSION: unpack the siw directory of
# linux-source-SERIES VERSION into OUT (OUT/drivers/infiniband/sw/siw)
siw_source() {
	local out=$1 series=$2 version=$3 pkg=linux-source-$2 tarball deb dl top
	tarball=$(compgen -G "/usr/src/$pkg.tar.*" | head -n 1 || true)
	top=$pkg
	if [ -n "$tarball" ] && [ "$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)" = "$version" ]; then
		tar -xf "$tarball" -C "$out" "$top/drivers/infiniband/sw/siw" || return 1
	else
		dl=$(mktemp -d /tmp/krdma-siwdl.XXXXXX)
		chmod 777 "$dl"
		if [ -n "$CHROOT_SUITE" ]; then
			"$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" download "$dl" "$pkg=$version" ||
				{ rm -rf "$dl"; return 1; }
		elif ! ( cd "$dl" && apt-get download -q "$pkg=$version" >/dev/null 2>&1 ); then
			apt_update
			( cd "$dl" && apt-get download -q "$pkg=$version" >/dev/null ) ||
				{ rm -rf "$dl"; return 1; }
		fi
		deb=$(ls "$dl"/*.deb)
		# the deb holds usr/src/linux-source-SERIES.tar.xz: stream it,
		# keeping only the driver
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xOf - --wildcards "./usr/src/$pkg.tar.*" |
			tar -xJf - -C "$out" "$top/drivers/infiniband/sw/siw"
		local rc=$?
		rm -rf "$dl"
		[ $rc = 0 ] || return 1
	fi
	mv "$out/$top/drivers" "$out/drivers" && rmdir "$out/$top"
}

# siw_make SRC: build SRC/drivers/infiniband/sw/siw against KDIR, where
# the kernel builds (SRC is in the build root when there is one)
siw_make() {
	local m=$1/drivers/infiniband/sw/siw
	if [ -n "$CHROOT_SUITE" ]; then
		"$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" run \
			make -C "$KDIR" M="${m#"$SIW_ROOT"}" CONFIG_RDMA_SIW=m modules || return 1
	else
		make -C "$KDIR" M="$m" CONFIG_RDMA_SIW=m modules || return 1
	fi
	[ -e "$m/siw.ko" ]
}

siw_module() {
	# shellcheck disable=SC2034 # run.sh's
	SIW_KO=
	[ "${KRDMA_SIW:-1}" != 0 ] || return 0
	local series version d src t1=$SECONDS
	series=$(kernel_series "$REL")
	# the image's version: KKDIR is $CACHE/kernel/<ABI>_<version>
	version=${KKDIR##*/"${ABI}"_}
	d=$CACHE/siw/${ABI}_$version
	if [ -e "$d/.done" ]; then
		# shellcheck disable=SC2034
		SIW_KO=$d/siw.ko
		return 0
	fi
	if [ -e "$d/.failed" ] && [ "$(cat "$d/.failed")" = "$SIW_RECIPE" ]; then
		note "no siw.ko for $REL (failed before: $d/build.log)"
		return 0
	fi
	rm -rf "$d"; mkdir -p "$d"
	if [ -n "$CHROOT_SUITE" ]; then
		# built in the build root, as the repository's owner
		SIW_ROOT=$("$KRDMA_VMDIR/chroot.sh" "$CHROOT_SUITE" path)
		src=$(mktemp -d "$SIW_ROOT/tmp/krdma-siw.XXXXXX")
		chown "$(stat -c %u:%g "$KRDMA_REPO")" "$src"
	else
		SIW_ROOT=
		src=$(mktemp -d /tmp/krdma-siw.XXXXXX)
	fi
	note "building siw.ko for $REL from linux-source-$series $version"
	if ! siw_source "$src" "$series" "$version" > "$d/build.log" 2>&1; then
		# (no such source, or offline: try again next time)
		note "no siw.ko for $REL: cannot get linux-source-$series $version (see $d/build.log)"
		rm -rf "$src"
		return 0
	fi
	if ! siw_make "$src" >> "$d/build.log" 2>&1; then
		note "no siw.ko for $REL: its build failed (see $d/build.log)"
		echo "$SIW_RECIPE" > "$d/.failed"
		rm -rf "$src"
		return 0
	fi
	# the guest needs no debug info, and the initramfs is copied every boot
	strip --strip-debug -o "$d/siw.ko" "$src/drivers/infiniband/sw/siw/siw.ko"
	rm -rf "$src"
	touch "$d/.done"
	# shellcheck disable=SC2034
	SIW_KO=$d/siw.ko
	note "siw.ko for $REL built in $((SECONDS - t1))s"
}
