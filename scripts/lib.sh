# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Shared settings for softmr's scripts: cache locations and versions.
# Sourced, not run.

SOFTMR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOFTMR_CACHE=${SOFTMR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softmr}
RDMA_CORE_VER=${RDMA_CORE_VER:-65.0}
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

# Copy the kernel sources (Kbuild, driver, uapi) to DEST for a side build
# that must not touch the clone's own objects (kbuild's clean of M= would
# remove every .ko below the clone).
softmr_copy_kernel_tree() {
	mkdir -p "$1"
	rsync -a --checksum --delete --exclude '*.o' --exclude '*.ko' \
		--exclude '.*.cmd' --exclude '*.mod*' \
		"$SOFTMR_TOP/Kbuild" "$SOFTMR_TOP/drivers" "$SOFTMR_TOP/uapi" "$1/"
}
