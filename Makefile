# SPDX-License-Identifier: GPL-2.0
#
# make                module + krdmactl (against KDIR, see below)
# make KDIR=DIR       against any configured kernel tree or headers
# make install        modules_install + krdmactl + uapi header
# make check          every selftest in rxe VMs on Debian 6.1 and 6.12
# make check-debug    every selftest on a debug kernel (KASAN, lockdep, kmemleak)
# make fuzz [DURATION=SECS]  the ioctl fuzzer in a VM (debug kernel if built)
# make demo           a VM with rxe0: krdmactl devices
# make lint          W=1 + sparse on every installed kernel, checkpatch
# make checkpatch | sparse | clean

SRC := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(SRC)/build
PREFIX ?= /usr/local
CC ?= cc

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

MODULE_SRCS := $(wildcard $(SRC)/module/*.c $(SRC)/module/*.h)
WARN_CFLAGS := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
USER_CFLAGS := -O2 -g $(WARN_CFLAGS) -I$(SRC)/uapi $(EXTRA_CFLAGS)

.PHONY: all module tools selftests install clean check check-debug fuzz demo bench bench-trace checkpatch sparse lint

all: module tools

module: $(KBUILD_DIR)/krdma.ko

# A tree of links per kernel release: kbuild writes objects next to sources.
$(KBUILD_DIR)/krdma.ko: $(MODULE_SRCS) $(SRC)/uapi/krdma.h $(SRC)/Kbuild
	@test -n "$(KVER)" || { echo "krdma: no kernel tree at KDIR='$(KDIR)'; install linux-headers or pass KDIR=" >&2; exit 1; }
	@echo "krdma: building against $(KDIR) ($(KVER))"
	@mkdir -p $(KBUILD_DIR)/module
	@ln -sf $(SRC)/Kbuild $(KBUILD_DIR)/Kbuild
	@ln -sfn $(SRC)/uapi $(KBUILD_DIR)/uapi
	@for f in $(MODULE_SRCS); do ln -sf $$f $(KBUILD_DIR)/module/; done
	$(MAKE) -C $(KDIR) M=$(KBUILD_DIR) W=$(W) C=$(C) modules

tools: $(BUILD)/bin/krdmactl

$(BUILD)/bin/krdmactl: $(wildcard $(SRC)/userspace/*.c $(SRC)/userspace/*.h) $(SRC)/uapi/krdma.h
	$(MAKE) -C $(SRC)/userspace OUT=$(BUILD)/bin CC=$(CC) CFLAGS="$(USER_CFLAGS)"

selftests:
	$(MAKE) -C $(SRC)/selftests OUT=$(BUILD)/selftests CC=$(CC) CFLAGS="$(USER_CFLAGS)"

install: all
	$(MAKE) -C $(KDIR) M=$(KBUILD_DIR) $(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install
	install -D -m 0755 $(BUILD)/bin/krdmactl $(DESTDIR)$(PREFIX)/sbin/krdmactl
	install -D -m 0644 $(SRC)/uapi/krdma.h $(DESTDIR)$(PREFIX)/include/krdma/krdma.h

check:
	$(SRC)/selftests/vm/check.sh

check-debug:
	$(SRC)/selftests/vm/check-debug.sh

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

# where a SEND ping-pong's time goes (kprobes on rxe), per program
bench-trace:
	$(SRC)/selftests/vm/run.sh --kernel 6.1 -- $(SRC)/selftests/bench-trace.sh

CHECKPATCH ?= $(BUILD)/linux-source/scripts/checkpatch.pl
checkpatch:
	$(SRC)/selftests/vm/linux-source.sh $(BUILD)/linux-source
	$(CHECKPATCH) --strict --no-tree --terse --show-types \
		-f $(SRC)/module/*.[ch] $(SRC)/uapi/krdma.h

sparse:
	rm -rf $(KBUILD_DIR)
	$(MAKE) module C=2 W=1

# W=1 and sparse against every installed Debian kernel's headers, plus
# checkpatch: any warning fails.
lint: checkpatch
	@set -e; for k in $$(ls -d /usr/src/linux-headers-*-amd64 | sort -V); do \
		rm -rf $(BUILD)/lint; \
		$(MAKE) --no-print-directory module KDIR=$$k BUILD=$(BUILD)/lint W=1 C=2 \
			> $(BUILD)/lint.log 2>&1 || { cat $(BUILD)/lint.log; exit 1; }; \
		if grep -E 'warning:|error:' $(BUILD)/lint.log; then exit 1; fi; \
		echo "lint: $$k: W=1 and sparse clean"; \
	done; rm -rf $(BUILD)/lint

clean:
	rm -rf $(BUILD)
	$(MAKE) -C $(SRC)/userspace clean OUT=$(BUILD)/bin 2>/dev/null || true
