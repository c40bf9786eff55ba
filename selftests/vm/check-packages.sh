#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-packages.sh: what `make check-packages` runs: krdma installed the
# ways its users install it, on this host (as root), each way checked and
# taken out again.  TAP, then "N passed, N failed, N skipped".
#
#   deb            make deb: krdma-dkms and krdmactl, lintian clean
#   dkms-source    make dkms-install: DKMS builds krdma for every kernel with
#                  headers here, the udev rule and the krdma group are
#                  there; make dkms-uninstall takes it out
#   deb-install    the packages installed: DKMS builds and installs krdma
#                  for every kernel with headers, at the one version that
#                  modinfo, krdmactl -V and the packages show; the udev
#                  rule and the krdma group are there
#   dkms-signed    the DKMS-built module carries DKMS's signature (its MOK
#                  key, made on first use), when the kernel signs modules
#   autoinstall    a kernel installed later (its headers' postinst hook)
#                  gets krdma built and installed
#   make-install   make install into a staged copy of the kernel's module
#                  tree, signed with a generated key (modinfo shows the
#                  signer), depmod run (modprobe finds rdma_cm and ib_core
#                  as krdma's dependencies), the udev rule staged; make
#                  uninstall takes it out
#   vm             the DKMS-built module and the packaged krdmactl in a VM:
#                  modprobe krdma, then the smoke subset of the selftests
#   purge          the packages purged: nothing of krdma left in DKMS,
#                  nor its udev rule
#
# Env: KRDMA_PACKAGES_KERNEL (the kernel series of the VM and of the staged
# install, default 6.1; its headers are installed if missing), plus what
# run.sh reads.
set -euo pipefail

VMDIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
note() { echo "check-packages.sh: $*" >&2; }
die() { note "$*"; exit 1; }
# shellcheck source=selftests/vm/kernels.sh
. "$VMDIR/kernels.sh"
REPO=$KRDMA_REPO
[ "$(id -u)" = 0 ] || die "needs root (it installs packages and modules)"

KERNEL=${KRDMA_PACKAGES_KERNEL:-6.1}
apt_install dkms openssl kmod man-db
KDIR=
kernel_resolve "$KERNEL"
[ -z "$CHROOT_SUITE" ] || die "$KERNEL: DKMS on this host builds for its own suite's kernels only"
VERSION=$("$REPO/scripts/version.sh")
DEB=$REPO/build/deb
WORKDIR=$REPO/build/packages
rm -rf "$WORKDIR"
mkdir -p "$WORKDIR"
TMP=$(mktemp -d /tmp/krdma-packages.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

n=0 pass=0 fail=0 skip=0
# step NAME FUNC: one TAP line; FUNC's output as "# " lines
step() {
	local name=$1 rc
	n=$((n + 1))
	set +e
	( set -e; "$2" ) > "$TMP/step.log" 2>&1
	rc=$?
	set -e
	sed 's/^/# /' "$TMP/step.log"
	if [ $rc = 0 ]; then
		echo "ok $n $name"
		pass=$((pass + 1))
	else
		echo "not ok $n $name"
		fail=$((fail + 1))
	fi
}

# kernels whose headers are installed: DKMS builds for each
header_kernels() {
	local b
	for b in /lib/modules/*/build; do
		[ -e "$b/Makefile" ] && basename "$(dirname "$b")"
	done
}

# expect_dkms STATE: krdma VERSION is STATE (installed, or absent) for
# every kernel with headers
expect_dkms() {
	local rel st
	for rel in $(header_kernels); do
		st=$(dkms status -m krdma -v "$VERSION" -k "$rel" 2>/dev/null)
		echo "dkms status ($rel): ${st:-none}"
		case $1 in
		installed) grep -q ': installed' <<<"$st" ;;
		absent) [ -z "$st" ] ;;
		esac
	done
}

dkms_module() {	# the module DKMS installed for release $1
	find "/lib/modules/$1/updates/dkms" -name 'krdma.ko*' | head -n 1
}

# (any state dpkg knows them in, a half-installed one too)
remove_packages() {
	local p present=()
	for p in krdma-dkms krdmactl; do
		dpkg-query -W "$p" >/dev/null 2>&1 && present+=("$p")
	done
	[ ${#present[@]} = 0 ] ||
		dpkg --purge --force-remove-reinstreq "${present[@]}" >/dev/null
}

# CMD fails (a "! CMD" would not stop a step under set -e)
fails() {
	! "$@"
}

# whether 60-krdma.rules, the one of this tree, is where udev reads rules
udev_rule_installed() {
	local d
	for d in /lib/udev /usr/lib/udev; do
		[ -e "$d/rules.d/60-krdma.rules" ] || continue
		echo "$d/rules.d/60-krdma.rules"
		cmp "$d/rules.d/60-krdma.rules" "$REPO/udev/60-krdma.rules"
		return
	done
	return 1
}

t_deb() {
	make -C "$REPO" --no-print-directory deb
	ls "$DEB/krdma-dkms_${VERSION}_all.deb" "$DEB/krdmactl_${VERSION}_amd64.deb"
}

t_dkms_source() {
	remove_packages
	make -C "$REPO" --no-print-directory dkms-install
	expect_dkms installed
	udev_rule_installed
	getent group krdma
	make -C "$REPO" --no-print-directory dkms-uninstall
	expect_dkms absent
	[ ! -e "/usr/src/krdma-$VERSION" ]
	fails udev_rule_installed
}

t_deb_install() {
	local rel ko v
	remove_packages
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		"$DEB/krdma-dkms_${VERSION}_all.deb" "$DEB/krdmactl_${VERSION}_amd64.deb"
	expect_dkms installed
	for rel in $(header_kernels); do
		ko=$(dkms_module "$rel")
		v=$(modinfo -F version "$ko")
		echo "$ko: version $v"
		[ "$v" = "$VERSION" ]
	done
	krdmactl -V
	krdmactl -V | grep -qF "krdmactl $VERSION "
	test -e /usr/share/man/man8/krdmactl.8.gz
	test -e /usr/include/krdma/krdma.h
	# /dev/krdma's group, and the rule that gives it the node
	getent group krdma
	udev_rule_installed
}

# The completions bash offers for the words "$@", the last being the one
# completed, from the installed krdmactl's completion: one a line, and
# whatever it printed on stderr (nothing, in a user's terminal).
complete_words() {
	bash --norc --noprofile -c '
		. /usr/share/bash-completion/completions/krdmactl
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		_krdmactl krdmactl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' bash "$@" 2>&1
}

# COMPLETIONS WORDS...: bash offers exactly COMPLETIONS (space-separated)
completes() {
	local want=$1 got
	shift
	got=$(complete_words "$@" | tr '\n' ' ')
	echo "krdmactl completion of '$*': $got"
	[ "$got" = "$want " ]
}

# the package's man page renders without a groff warning, and bash
# completes commands, options and values from the installed krdmactl
t_man_completion() {
	local warn
	warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z /usr/share/man/man8/krdmactl.8.gz 2>&1 >/dev/null)
	[ -z "$warn" ] || { echo "$warn"; return 1; }
	man -l /usr/share/man/man8/krdmactl.8.gz | grep -q 'krdmactl bench'
	completes "bench" krdmactl be
	completes "send serve sessions" krdmactl help se
	completes "--report_gbits" krdmactl bench --report_g
	completes "--report-histogram --report-unsorted" krdmactl bench --report-
	completes "send send_imm write write_imm read fadd cswap" krdmactl bench ""
	completes "send send_imm write write_imm read fadd cswap" krdmactl bench -j ""
	# [fe80::1]:18516, as bash splits it at its colons
	completes "uc ud" krdmactl send '[fe80' : : '1]' : 18516 -t u
	completes "--one-cpu --output= --once" krdmactl bench write host -s 64 --o
	completes "bandwidth latency" krdmactl bench --output = ""
	completes "uc ud" krdmactl serve -t u
	completes "" krdmactl bench -s ""
	completes "-j --json --pretty -V --version -h --help" krdmactl -
}

t_dkms_signed() {
	local ko signer cn
	ko=$(dkms_module "$REL")
	if ! grep -q '^CONFIG_MODULE_SIG=y' "$KDIR/.config"; then
		echo "$REL does not sign modules"
		return 0
	fi
	signer=$(modinfo -F signer "$ko")
	cn=$(openssl x509 -noout -subject -nameopt RFC2253 -inform DER -in /var/lib/dkms/mok.pub 2>/dev/null ||
		openssl x509 -noout -subject -nameopt RFC2253 -in /var/lib/dkms/mok.pub)
	echo "$ko: signer '$signer'; /var/lib/dkms/mok.pub: $cn"
	[ -n "$signer" ]
	[ "$cn" = "subject=CN=$signer" ]
}

t_autoinstall() {
	local rel
	# the newest kernel with headers stands for one installed later
	rel=$(header_kernels | sort -V | tail -n 1)
	dkms remove -m krdma -v "$VERSION" -k "$rel"
	[ -z "$(dkms_module "$rel")" ]
	/etc/kernel/postinst.d/dkms "$rel"
	dkms status -m krdma -v "$VERSION" -k "$rel" | grep ': installed'
	test -n "$(dkms_module "$rel")"
}

t_make_install() {
	local root=$TMP/root signer
	exec 9>"$CACHE/.lock"
	flock 9
	kernel_fetch_image
	flock -u 9
	# the kernel's module tree, linked (depmod renames what it writes)
	mkdir -p "$root/lib/modules"
	cp -al "$KKDIR/root/lib/modules/$REL" "$root/lib/modules/"
	openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -batch -outform PEM \
		-subj "/CN=krdma selftest signing key/" \
		-keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
	make -C "$REPO" --no-print-directory install DESTDIR="$root" PREFIX=/usr \
		KDIR="$KDIR" SIGN_KEY="$TMP/key.pem" SIGN_CERT="$TMP/cert.pem"
	signer=$(modinfo -F signer "$root/lib/modules/$REL/extra/krdma.ko")
	echo "signer: $signer"
	[ "$signer" = "krdma selftest signing key" ]
	[ "$(modinfo -F version "$root/lib/modules/$REL/extra/krdma.ko")" = "$VERSION" ]
	modprobe -d "$root" -S "$REL" --show-depends krdma | tee "$TMP/deps"
	grep -q '/rdma_cm\.ko' "$TMP/deps"
	grep -q '/ib_core\.ko' "$TMP/deps"
	test -x "$root/usr/sbin/krdmactl"
	test -e "$root/usr/share/man/man8/krdmactl.8"
	test -e "$root/usr/share/bash-completion/completions/krdmactl"
	find "$root" -path '*/udev/rules.d/60-krdma.rules' | grep .
	make -C "$REPO" --no-print-directory uninstall DESTDIR="$root" PREFIX=/usr KDIR="$KDIR"
	[ ! -e "$root/lib/modules/$REL/extra/krdma.ko" ]
	[ ! -e "$root/usr/sbin/krdmactl" ]
	[ ! -e "$root/usr/share/bash-completion/completions/krdmactl" ]
	[ -z "$(find "$root" -path '*/udev/rules.d/60-krdma.rules')" ]
	fails modprobe -d "$root" -S "$REL" --show-depends krdma 2>/dev/null
}

t_vm() {
	local ko
	ko=$(dkms_module "$REL")
	mkdir -p "$WORKDIR/bin"
	cp "$ko" "$WORKDIR/"
	cp /usr/sbin/krdmactl "$WORKDIR/bin/"
	# (one line: run.sh quotes the command for the guest's dash)
	"$VMDIR/run.sh" --kernel "$KERNEL" --ko "$WORKDIR/${ko##*/}" --bin "$WORKDIR/bin" \
		-- sh -c 'modprobe --show-depends krdma && echo "loaded: $(cat /sys/module/krdma/version), $(command -v krdmactl): $(krdmactl -V)" && [ "$(cat /sys/module/krdma/version)" = "$1" ] && [ "$(command -v krdmactl)" = /krdma/bin/krdmactl ] && exec "$2" --smoke' \
		sh "$VERSION" "$REPO/selftests/run_tests.sh" | tee "$TMP/vm.log"
}

t_purge() {
	remove_packages
	expect_dkms absent
	[ ! -e "/usr/src/krdma-$VERSION" ]
	fails command -v krdmactl
	fails udev_rule_installed
}

echo "TAP version 13"
step deb t_deb
step dkms-source t_dkms_source
step deb-install t_deb_install
step man-completion t_man_completion
step dkms-signed t_dkms_signed
step autoinstall t_autoinstall
step make-install t_make_install
step vm t_vm
step purge t_purge
echo "1..$n"
# the VM's selftests count case by case
line=$(tr -d '\r' < "$TMP/vm.log" 2>/dev/null | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n 1 || true)
if [ -n "$line" ]; then
	read -r p _ f _ s _ <<<"$line"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
