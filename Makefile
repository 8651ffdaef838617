# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# softmr - software RDMA device with the full memory registration family.
#
#   make           build softmr.ko (KDIR=... for another kernel) and the provider
#   make demo      install what is missing, build, boot the test kernel, show
#                  softmr0 and the ib_write_bw baseline
#   make check     everything: build, lint, KUnit under UML, the VM suite
#   make install   as root: softmr.ko through DKMS and rdma-core with the
#                  softmr provider for every program (scripts/install)
#   make uninstall as root: removes all of it again (scripts/uninstall)
#   make install-test  both in the test VM (part of make check)
#
# Other targets: deps module provider tests kunit vmtest lint matrix bench
# fuzz clean.
#   make matrix    the whole VM suite on each test kernel (6.1, 6.12, 7.3)
#   make pair-test the two-VM harness (scripts/vm-pair): two VMs on one
#                  link, rxe between them, softmr0 on the link
#   make fuzz      a long softmr_fuzz campaign in the VM: 1,000,000 cases or
#                  30 minutes, a random seed, device removals
#                  (FUZZ_SEED, FUZZ_CASES, FUZZ_SECONDS: scripts/fuzz)
# Slow, reusable things live in $(SOFTMR_CACHE) (default ~/.cache/softmr).
# SOFTMR_KERNEL=debug (in the environment or on the command line) selects
# the debug test kernel (KASAN, lockdep, kmemleak; built on first use, see
# scripts/lib.sh) for module, tests, vmtest, demo, bench and fuzz, e.g.
# `make vmtest SOFTMR_KERNEL=debug`; make check runs the VM suite on both.

SHELL := /bin/bash
.DEFAULT_GOAL := all

all: module provider tests

deps:
	scripts/deps

module: deps
	scripts/build-module modules

# The in-place build the tests use, and the one `make install` installs.
provider: deps
	scripts/build-provider >/dev/null
	scripts/build-provider --system >/dev/null

tests: provider
	scripts/build-tests
	scripts/build-perftest >/dev/null

# KUnit under UML, then the same suites (and the ones UML cannot run) as a
# module on the debug kernel under QEMU (scripts/kunit-qemu; vm-run needs
# the provider's rdma-core build).  KUNIT_QEMU=0: UML only.
kunit: deps provider
	scripts/kunit
	[ "$(KUNIT_QEMU)" = 0 ] || scripts/kunit-qemu

vmtest: module provider tests
	scripts/vm-run 'userspace/tests/run-all'

lint: deps
	scripts/lint

# The whole VM suite on every test kernel (6.1, 6.12, 7.3), a line each.
matrix: provider tests
	scripts/matrix

demo: module provider tests
	scripts/demo

bench: module provider tests
	scripts/bench

check: all
	scripts/check

fuzz: module provider tests
	scripts/fuzz

# No prerequisites: scripts/install checks the machine before it builds.
install:
	scripts/install

uninstall:
	scripts/uninstall

# make install and make uninstall in the test VM, the system's programs in
# between (userspace/tests/install-test); DKMS builds the module here.
install-test: module provider tests
	SOFTMR_DKMS_TARBALL=$$(scripts/build-dkms-tarball) SOFTMR_TESTS=install \
		scripts/vm-run userspace/tests/run-all

# Two VMs joined by one link (scripts/vm-pair): the harness itself
# (pair-smoke: rxe on both ends, softmr off the wire), then softmr on the
# wire to softmr and to rxe: UD, malformed packets and the MR family in
# pyverbs (pair-wire, pair-pyverbs), forged
# packets into live RC and UC connections (pair-fuzz), RC and UC (pair-rc).
pair-test: module provider tests
	SOFTMR_VM_MODARGS= scripts/vm-pair 'userspace/tests/pair-smoke A' 'userspace/tests/pair-smoke B'
	scripts/vm-pair 'userspace/tests/pair-wire A' 'userspace/tests/pair-wire B'
	SOFTMR_PAIR_B=rxe scripts/vm-pair 'userspace/tests/pair-wire A' 'userspace/tests/pair-wire B'
	scripts/vm-pair 'userspace/tests/pair-fuzz A' 'userspace/tests/pair-fuzz B'
	scripts/vm-pair 'userspace/tests/pair-rc A' 'userspace/tests/pair-rc B'
	SOFTMR_PAIR_B=rxe scripts/vm-pair 'userspace/tests/pair-rc A' 'userspace/tests/pair-rc B'

clean:
	-scripts/build-module clean
	rm -rf userspace/tests/build .out

.PHONY: all deps module provider tests kunit vmtest lint matrix demo bench check fuzz \
	install uninstall install-test pair-test clean
