#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# sign-module.sh KDIR MODULE: sign MODULE with the kernel's sign-file, as
# kbuild signs in-tree modules, when a key is configured:
#
#   SIGN_KEY, SIGN_CERT   a private key (PEM) and its X.509 certificate
#                         (PEM or DER), e.g. a Machine Owner Key enrolled
#                         with mokutil (docs/install.rst, "Signing and
#                         Secure Boot")
#   otherwise DKMS's MOK key, /var/lib/dkms/mok.key and mok.pub, if both
#   exist and SIGN_DKMS_KEY is not "no" (a staged install for elsewhere)
#
# The hash is the kernel's CONFIG_MODULE_SIG_HASH (sha256 if unset).  No key:
# a note, and the module stays unsigned.  Exit 1 if signing fails.
set -eu

kdir=${1:?usage: sign-module.sh KDIR MODULE}
ko=${2:?usage: sign-module.sh KDIR MODULE}
key=${SIGN_KEY:-}
cert=${SIGN_CERT:-}
if [ -z "$key" ] && [ -z "$cert" ] && [ "${SIGN_DKMS_KEY:-yes}" != no ] &&
   [ -r /var/lib/dkms/mok.key ] && [ -r /var/lib/dkms/mok.pub ]; then
	key=/var/lib/dkms/mok.key
	cert=/var/lib/dkms/mok.pub
fi
if [ -z "$key" ] || [ -z "$cert" ]; then
	[ -z "$key$cert" ] || { echo "sign-module.sh: SIGN_KEY and SIGN_CERT go together" >&2; exit 1; }
	echo "krdma: $ko not signed (no key: set SIGN_KEY and SIGN_CERT)"
	exit 0
fi
hash=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"$/\1/p' "$kdir/include/config/auto.conf" 2>/dev/null || true)
sign_file=$kdir/scripts/sign-file
[ -x "$sign_file" ] || { echo "sign-module.sh: no $sign_file" >&2; exit 1; }
"$sign_file" "${hash:-sha256}" "$key" "$cert" "$ko"
echo "krdma: $ko signed (${hash:-sha256}, $cert)"
