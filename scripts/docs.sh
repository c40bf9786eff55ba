#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# docs.sh BUILD: docs/*.rst as HTML in BUILD/docs/html, the uAPI page
# rendered from uapi/krdma.h by the kernel's kernel-doc Sphinx extension
# (from BUILD/linux-source); installs Sphinx if it is missing.
# Any Sphinx or kernel-doc warning fails.
set -eu

build=${1:?usage: docs.sh BUILD}
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$build/docs/html

if ! command -v sphinx-build >/dev/null; then
	echo "docs.sh: installing python3-sphinx" >&2
	[ "$(id -u)" = 0 ] || { echo "docs.sh: need root to apt-get install python3-sphinx" >&2; exit 1; }
	apt-get update -qq >/dev/null 2>&1 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-sphinx >/dev/null
fi
"$repo/selftests/vm/linux-source.sh" "$build/linux-source"

rm -rf "$out"
LINUX_SOURCE=$build/linux-source KRDMA_VERSION=$("$repo/scripts/version.sh") \
	sphinx-build -q -W --keep-going -b html -d "$build/docs/doctrees" "$repo/docs" "$out"
echo "docs: $out/index.html"
