# SPDX-License-Identifier: GPL-2.0
#
# make                module + krdmactl (against KDIR, see below)
# make KDIR=DIR       against any configured kernel tree or headers
# make install        the module (signed if a key is set, depmod), its udev
#                     rule (/dev/krdma for the krdma group), krdmactl, its
#                     man page and bash completion, the uAPI header;
#                     make uninstall
# make dist           build/dist/krdma-VERSION.tar.gz and its tree (DKMS-ready)
# make dkms-install   the source into /usr/src, DKMS builds it for every
#                     kernel with headers; make dkms-uninstall
# make deb            build/deb/: krdma-dkms and krdmactl packages, lintian
# make check          every selftest in rxe VMs on each kernel of the matrix
# make check-debug    every selftest on a debug kernel (KASAN, lockdep, kmemleak)
# make check-packages the packages built, installed, and the DKMS module in a VM
# make fuzz [DURATION=SECS]  the ioctl fuzzer in a VM (debug kernel if built)
# make demo           a VM with rxe0: krdmactl devices
# make lint           W=1 + sparse on every kernel of the matrix, checkpatch,
#                     the docs
# make docs           build/docs/html: docs/*.rst, the uAPI page from uapi/krdma.h
# make version        the version every build is stamped with
# make checkpatch | sparse | clean

SRC := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
# (from make's command line only: an environment variable of so common a
# name, or one a make above exported, must not move the build)
ifneq ($(origin BUILD),command line)
BUILD := $(SRC)/build
endif
PREFIX ?= /usr/local
DOCDIR ?= $(PREFIX)/share/doc/krdma
# udev's rules go where this system's udev reads them (/lib/udev on
# Debian 12, /usr/lib/udev on 13)
UDEVDIR ?= $(or $(shell pkg-config --variable=udevdir udev 2>/dev/null),/lib/udev)
CC ?= cc
# (a build without git, such as the test bed's in another suite's root,
# is given it: make KRDMA_VERSION=...)
ifneq ($(origin KRDMA_VERSION),command line)
  KRDMA_VERSION := $(shell $(SRC)/scripts/version.sh $(SRC))
  ifeq ($(KRDMA_VERSION),)
    $(error krdma: no version (scripts/version.sh failed))
  endif
endif

# The running kernel's tree when there is one (a real RDMA host), else the
# newest installed Debian headers (this machine's own kernel has no tree).
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
DEBIAN_KDIR := $(lastword $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V))
ifeq ($(origin KDIR),undefined)
  ifneq ($(wildcard $(RUNNING_KDIR)/Makefile),)
    KDIR := $(RUNNING_KDIR)
  else
    KDIR := $(DEBIAN_KDIR)
  endif
endif
# The release the kernel reports (uname -r), which names the build directory.
KVER := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
KBUILD_DIR := $(BUILD)/kernel/$(KVER)
# where make install puts the module (kbuild's default for external ones)
INSTALL_MOD_DIR ?= extra
MODULE_DEST := $(DESTDIR)/lib/modules/$(KVER)/$(INSTALL_MOD_DIR)/krdma.ko

MODULE_SRCS := $(wildcard $(SRC)/module/*.c $(SRC)/module/*.h)
PROBES := $(wildcard $(SRC)/probes/*.c)
WARN_CFLAGS := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
USER_CFLAGS := -O2 -g $(WARN_CFLAGS) -I$(SRC)/uapi $(EXTRA_CFLAGS)

.PHONY: all module tools selftests install install-module install-udev install-tools \
	uninstall dist dkms-install dkms-uninstall deb clean check check-debug \
	check-packages fuzz demo bench bench-trace checkpatch sparse lint docs version FORCE

all: module tools

version:
	@echo $(KRDMA_VERSION)

module: $(KBUILD_DIR)/krdma.ko

define need_kver
	@test -n "$(KVER)" || { echo "krdma: no kernel tree at KDIR='$(KDIR)'; install linux-headers or pass KDIR=" >&2; exit 1; }
endef

# What the kernel offers, found by compiling (scripts/kernel-probe.sh),
# again whenever the kernel tree's configuration changes.
$(KBUILD_DIR)/krdma_config.h: $(PROBES) $(SRC)/scripts/kernel-probe.sh \
		$(wildcard $(KDIR)/include/generated/autoconf.h)
	$(need_kver)
	@mkdir -p $(KBUILD_DIR)
	@echo "krdma: probing $(KDIR)"
	@MAKE="$(MAKE)" $(SRC)/scripts/kernel-probe.sh $(KDIR) $(SRC)/probes $(KBUILD_DIR)

# rewritten only when the version changes, so that a build stays a no-op
$(BUILD)/krdma_version.h $(KBUILD_DIR)/krdma_version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define KRDMA_VERSION "$(KRDMA_VERSION)"' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

# A tree of links per kernel release: kbuild writes objects next to sources.
# kbuild runs every time: it knows what changed, the kernel's headers too.
$(KBUILD_DIR)/krdma.ko: $(MODULE_SRCS) $(SRC)/uapi/krdma.h $(SRC)/Kbuild \
		$(KBUILD_DIR)/krdma_config.h $(KBUILD_DIR)/krdma_version.h FORCE
	$(need_kver)
	@echo "krdma: building $(KRDMA_VERSION) against $(KDIR) ($(KVER))"
	@mkdir -p $(KBUILD_DIR)/module
	@ln -sf $(SRC)/Kbuild $(KBUILD_DIR)/Kbuild
	@ln -sfn $(SRC)/uapi $(KBUILD_DIR)/uapi
	@for f in $(MODULE_SRCS); do ln -sf $$f $(KBUILD_DIR)/module/; done
	$(MAKE) -C $(KDIR) M=$(KBUILD_DIR) $(if $(W),W=$(W)) $(if $(C),C=$(C)) modules

tools: $(BUILD)/bin/krdmactl

$(BUILD)/bin/krdmactl: $(wildcard $(SRC)/userspace/*.c $(SRC)/userspace/*.h) \
		$(SRC)/uapi/krdma.h $(BUILD)/krdma_version.h
	$(MAKE) -C $(SRC)/userspace OUT=$(BUILD)/bin CC=$(CC) \
		CFLAGS="$(USER_CFLAGS) -DKRDMACTL_VERSION='\"$(KRDMA_VERSION)\"'"

selftests:
	$(MAKE) -C $(SRC)/selftests OUT=$(BUILD)/selftests CC=$(CC) CFLAGS="$(USER_CFLAGS)"

install: install-module install-tools

# Signed when a key is set (SIGN_KEY/SIGN_CERT, else, outside a DESTDIR,
# DKMS's MOK key), then depmod for the release installed into (in DESTDIR,
# as kbuild's modules_install does; DEPMOD=: leaves it out), so that
# modprobe krdma pulls in ib_core and rdma_cm.
DEPMOD ?= depmod
install-module: module install-udev
	install -D -m 0644 $(KBUILD_DIR)/krdma.ko $(MODULE_DEST)
	SIGN_DKMS_KEY=$(if $(DESTDIR),no,yes) $(SRC)/scripts/sign-module.sh $(KDIR) $(MODULE_DEST)
	$(DEPMOD) $(if $(DESTDIR),-b $(DESTDIR)) $(KVER)

# The udev rule gives the node to the krdma group, made here outside a
# DESTDIR (a package's maintainer scripts make it otherwise).
install-udev:
	install -D -m 0644 $(SRC)/udev/60-krdma.rules \
		$(DESTDIR)$(UDEVDIR)/rules.d/60-krdma.rules
ifeq ($(DESTDIR),)
	getent group krdma >/dev/null || groupadd --system krdma
	-udevadm control --reload 2>/dev/null && \
		udevadm trigger --subsystem-match=misc --sysname-match=krdma 2>/dev/null
endif

install-tools: tools
	install -D -m 0755 $(BUILD)/bin/krdmactl $(DESTDIR)$(PREFIX)/sbin/krdmactl
	install -D -m 0644 $(SRC)/uapi/krdma.h $(DESTDIR)$(PREFIX)/include/krdma/krdma.h
	install -D -m 0644 $(SRC)/man/krdmactl.8 $(DESTDIR)$(PREFIX)/share/man/man8/krdmactl.8
	install -D -m 0644 $(SRC)/userspace/completion/krdmactl \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/krdmactl
	install -D -m 0644 $(SRC)/scripts/modules-load.d/krdma.conf \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d/krdma.conf

# (the krdma group stays, as a package's would: files may be its)
uninstall:
	rm -f $(MODULE_DEST) $(DESTDIR)$(UDEVDIR)/rules.d/60-krdma.rules
	$(DEPMOD) $(if $(DESTDIR),-b $(DESTDIR)) $(KVER)
	rm -f $(DESTDIR)$(PREFIX)/sbin/krdmactl \
		$(DESTDIR)$(PREFIX)/include/krdma/krdma.h \
		$(DESTDIR)$(PREFIX)/share/man/man8/krdmactl.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/krdmactl \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d/krdma.conf
	-rmdir -p $(DESTDIR)$(PREFIX)/include/krdma \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d 2>/dev/null

# The source of this version, with VERSION and dkms.conf filled in: what
# /usr/src/krdma-VERSION holds for DKMS, and the packages' source.
DIST := $(BUILD)/dist/krdma-$(KRDMA_VERSION)
dist:
	$(SRC)/scripts/dist.sh $(SRC) $(KRDMA_VERSION) $(DIST)

dkms-install: dist install-udev
	$(SRC)/scripts/dkms.sh install $(DIST)

dkms-uninstall:
	$(SRC)/scripts/dkms.sh uninstall $(KRDMA_VERSION)
	rm -f $(DESTDIR)$(UDEVDIR)/rules.d/60-krdma.rules

deb: dist
	$(SRC)/scripts/deb.sh $(DIST) $(BUILD)/deb

check:
	$(SRC)/selftests/vm/check.sh

check-debug:
	$(SRC)/selftests/vm/check-debug.sh

check-packages:
	$(SRC)/selftests/vm/check-packages.sh

DURATION ?= 600
fuzz:
	$(SRC)/selftests/vm/check-debug.sh --fuzz $(DURATION)

demo:
	$(SRC)/selftests/vm/run.sh --kernel 6.1 -- $(SRC)/selftests/demo.sh

# krdma and perftest side by side in one VM; figures and ratios in
# build/bench.json (the guest writes it through the 9p-mounted repo)
bench:
	$(SRC)/selftests/vm/run.sh --kernel 6.1 -- $(SRC)/selftests/bench.sh
	@cat $(BUILD)/bench.json

# where each program's time goes on rxe, and the bound rxe's own cost sets
bench-trace:
	$(SRC)/selftests/vm/run.sh --kernel 6.1 -- $(SRC)/selftests/bench-trace.sh

CHECKPATCH ?= $(BUILD)/linux-source/scripts/checkpatch.pl
KERNEL_DOC ?= $(BUILD)/linux-source/scripts/kernel-doc
# checkpatch --strict, and the headers kernel-doc clean
checkpatch:
	$(SRC)/selftests/vm/linux-source.sh $(BUILD)/linux-source
	$(CHECKPATCH) --strict --no-tree --terse --show-types \
		-f $(filter-out %/trace.h,$(wildcard $(SRC)/module/*.[ch])) \
		$(SRC)/uapi/krdma.h $(SRC)/probes/*.c
	@# TRACE_EVENT()'s layout, as the kernel's own trace headers have it:
	@# a '(' ending a line, arguments under the macro's, not a call's;
	@# and their EM()/EMe() tables (include/trace/events/rdma.h's)
	$(CHECKPATCH) --strict --no-tree --terse --show-types \
		--ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT,COMPLEX_MACRO,TRAILING_SEMICOLON,CAMELCASE \
		-f $(SRC)/module/trace.h
	@out=$$($(KERNEL_DOC) -none -v $(SRC)/uapi/krdma.h $(SRC)/module/*.h 2>&1 | \
		grep -i warning); \
	if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; \
	echo "kernel-doc: uapi/krdma.h and module/*.h clean"

# Sphinx and the kernel's kernel-doc extension; any warning fails
docs:
	$(SRC)/scripts/docs.sh $(BUILD)

sparse:
	rm -rf $(KBUILD_DIR)
	$(MAKE) module C=2 W=1

# W=1 and sparse against every kernel of the matrix (the ones another
# suite has, in its build root), plus checkpatch: any warning fails.
lint: checkpatch docs
	$(SRC)/selftests/vm/lint.sh

clean:
	rm -rf $(BUILD)
	$(MAKE) -C $(SRC)/userspace clean OUT=$(BUILD)/bin 2>/dev/null || true
