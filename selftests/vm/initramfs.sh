# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# initramfs.sh (sourced by run.sh): what the guest boots besides its kernel.
#
#   guest_userspace    bookworm's rdma-core, perftest and iproute2 debs and
#                      their libraries, unpacked once into
#                      $CACHE/userspace/<hash of their versions>: sets UROOT,
#                      ULIBPATH (their library path) and UKEY
#   static_initramfs   the part of the initramfs every run of a kernel
#                      shares (busybox, the host's dash, bash and kmod, the
#                      kernel modules the tests need, the rdma-core tools
#                      with their libraries), built once into
#                      $CACHE/initramfs/<release>-<hash>.cpio: sets STATIC
#
# The caller defines note, die, CACHE, KROOT (the kernel's root:
# lib/modules/REL), REL and KKEY, and SIW_KO (siw.sh; empty: none), which
# goes in as updates/siw.ko with what it depends on.
# GUEST_MODULES and OPTIONAL_MODULES are what the guest's init loads;
# SIW_MODULES what it loads, if it can, before siw.

GUEST_PKGS=(rdma-core ibverbs-utils rdmacm-utils ibverbs-providers libibverbs1
	librdmacm1 libibumad3 perftest iproute2)
# the library closure, minus what comes from the host (libc, libgcc_s)
lib_closure() {
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "${GUEST_PKGS[@]}" 2>/dev/null |
		grep -E '^lib[a-z0-9.+-]+$' | grep -vxE 'libc6|libgcc-s1|libelogind0|libpam.*|libsemanage.*|libdebian-installer.*|libnewt.*|libslang.*|libtextwrap.*|libreadline.*|libaudit.*|libcrypt1' | sort -u
}
pkg_versions() {	# "name=version" for each of $ALLPKGS, one apt-cache call
	# shellcheck disable=SC2086
	apt-cache show --no-all-versions $ALLPKGS 2>/dev/null |
		awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}' | sort -u | tr '\n' ' '
}

guest_userspace() {
	ALLPKGS=$( { printf '%s\n' "${GUEST_PKGS[@]}"; lib_closure; } | sort -u)
	PKGVERS=$(pkg_versions)
	[ "$(wc -w <<<"$PKGVERS")" -ge "$(wc -w <<<"$ALLPKGS")" ] || { apt_update; PKGVERS=$(pkg_versions); }
	UKEY=$(echo "$PKGVERS" | sha256sum | cut -c1-16)
	UDIR=$CACHE/userspace/$UKEY
	if [ ! -e "$UDIR/.done" ]; then
		note "fetching guest userspace debs"
		rm -rf "$UDIR"; mkdir -p "$UDIR/deb"
		chmod 777 "$UDIR/deb" 2>/dev/null || true
		# shellcheck disable=SC2086
		apt_download "$UDIR/deb" $ALLPKGS
		for d in "$UDIR"/deb/*.deb; do dpkg -x "$d" "$UDIR/root"; done
		echo "$PKGVERS" | tr ' ' '\n' > "$UDIR/versions"
		rm -rf "$UDIR/deb"
		touch "$UDIR/.done"
	fi
	UROOT=$UDIR/root
	ULIBPATH=$UROOT/usr/lib/x86_64-linux-gnu:$UROOT/lib/x86_64-linux-gnu:$UROOT/usr/lib/x86_64-linux-gnu/libibverbs
}

GUEST_MODULES=(virtio_pci virtio_net 9pnet_virtio 9p netfs fscache crc32_generic
	crc32_pclmul ib_core ib_uverbs ib_umad rdma_cm rdma_ucm rdma_rxe veth dummy
	sch_netem sch_prio sch_ingress cls_u32 act_gact act_mirred ifb)
# not in every kernel (built in, renamed, or not needed); the tc ones are
# for selftests/faults.sh (netem on RoCE traffic only, both directions)
# shellcheck disable=SC2034 # run.sh hands it to the guest
OPTIONAL_MODULES=(netfs fscache crc32_generic crc32_pclmul dummy sch_netem
	sch_prio sch_ingress cls_u32 act_gact act_mirred ifb)
# siw's CRC32C (MPA's): libcrc32c (before 6.14) and the crypto API find
# the implementation by request_module, which the guest's modules.alias
# answers only when the module is in its tree; none is in every kernel
# shellcheck disable=SC2034 # run.sh hands it to the guest
SIW_MODULES=(crc32c_intel crc32c_generic libcrc32c)
GUEST_TOOLS=(usr/bin/rdma sbin/ip bin/ip sbin/tc usr/bin/ibv_devices usr/bin/ibv_devinfo
	usr/bin/ibv_rc_pingpong usr/bin/ibv_ud_pingpong usr/bin/ibv_uc_pingpong
	usr/bin/ibv_srq_pingpong usr/bin/rping usr/bin/ucmatose usr/bin/udaddy
	usr/bin/rdma_server usr/bin/rdma_client
	usr/bin/ib_write_bw usr/bin/ib_read_bw usr/bin/ib_send_bw usr/bin/ib_send_lat
	usr/bin/ib_atomic_bw usr/bin/ib_atomic_lat usr/bin/ib_write_lat usr/bin/ib_read_lat)

# copy a binary and its libraries (resolved with the deb libs first) into $1
copy_libs() {
	local dst=$1 lib; shift
	for lib in $(LD_LIBRARY_PATH=$ULIBPATH ldd "$@" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | sort -u); do
		case $lib in
		*/ld-linux-x86-64.so.2) [ -e "$dst/lib64/ld-linux-x86-64.so.2" ] || cp -L "$lib" "$dst/lib64/" ;;
		*) [ -e "$dst/usr/lib/x86_64-linux-gnu/${lib##*/}" ] || cp -L "$lib" "$dst/usr/lib/x86_64-linux-gnu/" ;;
		esac
	done
	if LD_LIBRARY_PATH=$ULIBPATH ldd "$@" 2>/dev/null | grep 'not found'; then
		note "warning: unresolved libraries for $*"
	fi
}

build_static() {
	local out=$1 t m f n
	t=$(mktemp -d /tmp/krdma-initrd.XXXXXX)
	mkdir -p "$t"/{bin,sbin,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,proc,sys,dev,tmp,run,root,mnt,krdma}
	ln -s usr/lib "$t/lib"; ln -s usr/lib64 "$t/lib64"
	# busybox with applet links
	cp /bin/busybox "$t/bin/busybox"
	for f in $(/bin/busybox --list-full); do
		[ -e "$t/$f" ] || [ -L "$t/$f" ] || ln -s /bin/busybox "$t/$f"
	done
	# Debian's busybox-static prefers its own applets (ip, tc, modprobe) to
	# PATH: the shells come from the host instead (dash as /bin/sh, bash)
	rm -f "$t/bin/sh" "$t/bin/bash"
	cp /bin/dash "$t/bin/sh"
	cp /bin/bash "$t/bin/bash"
	copy_libs "$t" /bin/dash /bin/bash
	# kmod from the host (handles .ko.xz)
	for n in modprobe insmod rmmod lsmod depmod modinfo kmod; do
		rm -f "$t"/{bin,sbin,usr/bin,usr/sbin}/$n
		ln -s /usr/bin/kmod "$t/sbin/$n"
	done
	cp /usr/bin/kmod "$t/usr/bin/kmod"
	copy_libs "$t" /usr/bin/kmod
	# libgcc_s is dlopen'ed (pthread_cancel, rping)
	cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$t/usr/lib/x86_64-linux-gnu/"
	# iproute2 + rdma-core tools
	for f in "${GUEST_TOOLS[@]}"; do
		[ -e "$UROOT/$f" ] || { note "warning: no $f in the guest debs"; continue; }
		n=${f##*/}
		rm -f "$t"/{bin,sbin,usr/bin,usr/sbin}/"$n"
		cp -L "$UROOT/$f" "$t/usr/sbin/$n"
		copy_libs "$t" "$UROOT/$f"
	done
	mkdir -p "$t/etc/libibverbs.d" "$t/usr/lib/x86_64-linux-gnu/libibverbs" "$t/etc/iproute2"
	# the providers of rxe0 and siw0 (without one, rdma_cm's tools find
	# no device for the address: "rdma_bind_addr: No such device")
	cp "$UROOT/etc/libibverbs.d/rxe.driver" "$UROOT/etc/libibverbs.d/siw.driver" "$t/etc/libibverbs.d/"
	for f in "$UROOT"/usr/lib/x86_64-linux-gnu/libibverbs/lib{rxe,siw}-*.so; do
		cp -L "$f" "$t/usr/lib/x86_64-linux-gnu/libibverbs/"
		copy_libs "$t" "$f"
	done
	cp -a "$UROOT"/usr/share/iproute2/. "$t/etc/iproute2/" 2>/dev/null || true
	cp -a "$UROOT"/etc/iproute2/. "$t/etc/iproute2/" 2>/dev/null || true
	[ -d "$UROOT/usr/lib/x86_64-linux-gnu/tc" ] && cp -a "$UROOT/usr/lib/x86_64-linux-gnu/tc" "$t/usr/lib/x86_64-linux-gnu/"
	printf 'root:x:0:0:root:/root:/bin/sh\n' > "$t/etc/passwd"
	printf 'root:x:0:\n' > "$t/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n192.0.2.1 vm1\n192.0.2.2 vm2\n' > "$t/etc/hosts"
	[ -e /etc/protocols ] && cp /etc/protocols "$t/etc/"
	[ -e /etc/services ] && cp /etc/services "$t/etc/"
	# kernel modules and their dependencies
	local mods want=("${GUEST_MODULES[@]}")
	if [ -n "${SIW_KO:-}" ]; then
		mkdir -p "$t/usr/lib/modules/$REL/updates"
		cp "$SIW_KO" "$t/usr/lib/modules/$REL/updates/siw.ko"
		want+=("${SIW_MODULES[@]}")
		mapfile -t -O ${#want[@]} want < <(modinfo -F depends "$SIW_KO" | tr ',' '\n' | grep .)
	fi
	mods=$(for m in "${want[@]}"; do
		# (an optional module the kernel lacks fails here: not fatal)
		modprobe --show-depends -d "$KROOT" -S "$REL" "$m" 2>/dev/null | awk '$1=="insmod"{print $2}' || true
	done | sort -u)
	for f in $mods; do
		n=${f#"$KROOT"/}
		n=${n#lib/modules/"$REL"/}
		mkdir -p "$t/usr/lib/modules/$REL/$(dirname "$n")"
		cp -L "$f" "$t/usr/lib/modules/$REL/$n"
	done
	# (a kernel with everything built in has no module to copy)
	mkdir -p "$t/usr/lib/modules/$REL"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		[ -e "$KROOT/lib/modules/$REL/$f" ] && cp -L "$KROOT/lib/modules/$REL/$f" "$t/usr/lib/modules/$REL/"
	done
	depmod -b "$t" "$REL"
	( cd "$t" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) > "$out.tmp"
	# pad to 512 bytes so the per-run archive appended after it is found
	truncate -s "%512" "$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$t"
}

static_initramfs() {
	SKEY=$( { echo "$KKEY $UKEY"; sha256sum "${BASH_SOURCE[0]}" /bin/busybox /usr/bin/kmod ${SIW_KO:+"$SIW_KO"}; dpkg-query -W libc6 kmod busybox-static 2>/dev/null; } | sha256sum | cut -c1-16)
	STATIC=$CACHE/initramfs/$REL-$SKEY.cpio
	if [ ! -e "$STATIC" ]; then
		t1=$SECONDS
		mkdir -p "$CACHE/initramfs"
		rm -f "$CACHE/initramfs/$REL"-*.cpio
		build_static "$STATIC"
		note "static initramfs built in $((SECONDS - t1))s ($(du -h "$STATIC" | cut -f1))"
	fi
}
