# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Shared settings for softmr's scripts: cache locations and versions.
# Sourced, not run.

SOFTMR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOFTMR_CACHE=${SOFTMR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmr}
RDMA_CORE_VER=${RDMA_CORE_VER:-65.0}
# where `make install` puts the rdma-core build carrying the provider, and
# where scripts/build-provider --system stages it
SOFTMR_RDMA_PREFIX=/opt/softmr/rdma-core
SOFTMR_RDMA_STAGE=$SOFTMR_CACHE/rdma-core/$RDMA_CORE_VER/system-stage
KSRC_SERIES=${KSRC_SERIES:-6.12}

APT_DIR=$SOFTMR_CACHE/apt
# Private apt state: extra suites never touch the system's package lists.
apt_private() {
	local cmd=$1
	shift
	"$cmd" -o Dir::Etc::SourceList="$APT_DIR/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$APT_DIR/lists" \
		-o Dir::Cache="$APT_DIR/cache" \
		-o APT::Get::List-Cleanup=0 \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}

log() { printf '[softmr] %s\n' "$*" >&2; }
die() { printf '[softmr] error: %s\n' "$*" >&2; exit 1; }

# Paths the other scripts read after scripts/deps ran.
softmr_env() {
	[ -f "$SOFTMR_CACHE/env" ] || die "run scripts/deps first"
	# shellcheck disable=SC1091
	. "$SOFTMR_CACHE/env"
}

# softmr_lock NAME: hold $SOFTMR_CACHE/NAME.lock (on fd 7) until the script
# ends.  Guards what every clone on this machine shares in the cache (the
# kernel source tree kunit.py builds in, the rdma-core build): two clones
# (a CI run and a developer's) take turns instead of mixing their sources.
softmr_lock() {
	mkdir -p "$SOFTMR_CACHE"
	exec 7>"$SOFTMR_CACHE/$1.lock"
	flock 7
}

# Side builds of this clone (other kernels, lint, abi-mismatch): in the
# clone, so that clones do not share them.
SOFTMR_SIDE=$SOFTMR_TOP/.out/build

# Copy the kernel sources (Kbuild, driver, uapi) to DEST for a side build
# that must not touch the clone's own objects (kbuild's clean of M= would
# remove every .ko below the clone).
softmr_copy_kernel_tree() {
	mkdir -p "$1"
	rsync -a --checksum --delete --exclude '*.o' --exclude '*.ko' \
		--exclude '.*.cmd' --exclude '*.mod*' \
		"$SOFTMR_TOP/Kbuild" "$SOFTMR_TOP/drivers" "$SOFTMR_TOP/uapi" "$1/"
}

# The test kernel, chosen in one place by SOFTMR_KERNEL:
#   6.12   Debian's bookworm-backports kernel (the default; scripts/deps)
#   debug  our x86_64 6.12 build with KASAN, lockdep, kmemleak and fault
#          injection (scripts/build-debug-kernel, built on first use)
#   6.1    Debian bookworm's kernel (bookworm-security) and
#   7.3    Debian's newest (trixie-backports), both fetched on first use
#          (scripts/prepare-kernel; 7.3's build tree from linux-source)
# Sets KVER (release), KROOT (its modules are $KROOT/lib/modules/$KVER),
# VMLINUZ, KDIR (the build tree for external modules), SOFTMR_KERNEL_ID
# (names the kernel's cache entries), SOFTMR_MOD_DIR (where softmr.ko is
# built: the clone for the default kernel, a side copy in .out/build for
# the others), SOFTMR_KO and SOFTMR_ABI_KO (the abi-mismatch module of
# scripts/build-tests), SOFTMR_KERNEL_DEBUG (1: check the guest's kernel log
# for KASAN, lockdep and kmemleak reports) and the VM defaults
# SOFTMR_VM_TIMEOUT_DEFAULT (seconds) and SOFTMR_VM_MEM_DEFAULT (MiB).
softmr_kernel() {
	SOFTMR_KERNEL=${SOFTMR_KERNEL:-6.12}
	[ -f "$SOFTMR_CACHE/env" ] || "$SOFTMR_TOP/scripts/deps"
	softmr_env
	SOFTMR_KERNEL_DEBUG=0
	SOFTMR_VM_TIMEOUT_DEFAULT=1200
	SOFTMR_VM_MEM_DEFAULT=2048
	case $SOFTMR_KERNEL in
	6.12)
		KDIR=${KDIR:-$KDIR_DEFAULT}
		SOFTMR_KERNEL_ID=$KVER
		SOFTMR_MOD_DIR=$SOFTMR_TOP
		SOFTMR_ABI_DIR=$SOFTMR_SIDE/abi-mismatch
		;;
	6.1 | 7.3)
		local kvars
		kvars=$("$SOFTMR_TOP/scripts/prepare-kernel" "$SOFTMR_KERNEL") ||
			die "cannot prepare the $SOFTMR_KERNEL kernel"
		eval "$kvars"
		SOFTMR_KERNEL_ID=$(basename "$(dirname "$KROOT")")
		SOFTMR_MOD_DIR=$SOFTMR_SIDE/$SOFTMR_KERNEL
		SOFTMR_ABI_DIR=$SOFTMR_SIDE/$SOFTMR_KERNEL-abi-mismatch
		;;
	debug)
		local vars
		vars=$("$SOFTMR_TOP/scripts/build-debug-kernel") ||
			die "cannot build the debug kernel"
		eval "$vars"
		SOFTMR_KERNEL_ID=$(basename "$(dirname "$KROOT")")
		SOFTMR_MOD_DIR=$SOFTMR_SIDE/debug
		SOFTMR_ABI_DIR=$SOFTMR_SIDE/debug-abi-mismatch
		SOFTMR_KERNEL_DEBUG=1
		# KASAN, lockdep and kmemleak under TCG: several times slower;
		# KASAN's shadow takes an eighth of the memory.
		SOFTMR_VM_TIMEOUT_DEFAULT=3600
		SOFTMR_VM_MEM_DEFAULT=3072
		;;
	*)
		die "SOFTMR_KERNEL=$SOFTMR_KERNEL: unknown test kernel (6.12, 6.1, 7.3 or debug)"
		;;
	esac
	SOFTMR_KO=$SOFTMR_MOD_DIR/drivers/infiniband/sw/softmr/softmr.ko
	SOFTMR_ABI_KO=$SOFTMR_ABI_DIR/drivers/infiniband/sw/softmr/softmr.ko
}

# softmr_kernel_suite KERNEL: build softmr.ko and the abi-mismatch module for
# a test kernel and run the VM suite on it (SOFTMR_TESTS / SOFTMR_SKIP_TESTS
# narrow it) from the top of the clone.  Exports SOFTMR_KERNEL, so callers
# run it in a subshell.  Returns 2 when the build fails, else the suite's
# status.  Used by scripts/check and scripts/matrix.
softmr_kernel_suite() {
	export SOFTMR_KERNEL=$1
	"$SOFTMR_TOP/scripts/build-module" modules >/dev/null &&
		"$SOFTMR_TOP/scripts/build-tests" || return 2
	(cd "$SOFTMR_TOP" && scripts/vm-run userspace/tests/run-all)
}

# The version `make install` gives DKMS: the commit's date and hash
# (20261123.89a22f9), or "0" outside a git checkout.
softmr_version() {
	git -C "$SOFTMR_TOP" log -1 --format=%cd.%h --date=format:%Y%m%d 2>/dev/null || echo 0
}

# softmr_dkms_tree DIR VERSION: the tree DKMS builds from (Kbuild, the
# driver, the uapi header, dkms.conf with VERSION), in DIR.
softmr_dkms_tree() {
	mkdir -p "$1"
	softmr_copy_kernel_tree "$1"
	sed "s/@VERSION@/$2/" "$SOFTMR_TOP/dkms.conf" >"$1/dkms.conf"
}

# The versions of softmr DKMS has (any of its options, e.g. --dkmstree, go
# to dkms status), one a line.
softmr_dkms_versions() {
	dkms status -m softmr "$@" 2>/dev/null |
		sed -n 's|^softmr/\([^,:]*\).*|\1|p' | sort -u
}

# The build of the newest perftest (scripts/build-perftest), from the
# PERFTEST_SRC that scripts/deps records.
softmr_perftest_build() {
	echo "${PERFTEST_SRC%/src}/build-rdma-core-$RDMA_CORE_VER"
}

# What `make install` puts on the machine (scripts/install, scripts/uninstall).
SOFTMR_LDCONF=/etc/ld.so.conf.d/00-softmr-rdma-core.conf
SOFTMR_RDMA_ETC=/etc/opt/softmr/rdma-core
# Debian programs scripts/install diverted (dpkg-divert), one path a line.
SOFTMR_DIVERSIONS=/opt/softmr/diversions

# Take back the diversions of a previous make install: each program gets
# its own file back.
softmr_undivert() {
	local f
	[ -f "$SOFTMR_DIVERSIONS" ] || return 0
	while read -r f; do
		[ -n "$f" ] || continue
		[ -L "$f" ] && rm -f "$f"
		dpkg-divert --local --rename --divert "$f.softmr-distrib" \
			--remove "$f" >/dev/null
	done <"$SOFTMR_DIVERSIONS"
	rm -f "$SOFTMR_DIVERSIONS"
}
