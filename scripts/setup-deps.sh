#!/bin/sh
# Installs what vqfuse needs on Debian 12.  Idempotent: silent and quick
# when everything is present.  Run as root.
set -eu

PKGS="build-essential cmake pkg-config git perl python3 kmod cpio
xz-utils file libfuse3-dev fuse3 libcmocka-dev liburing-dev valgrind
qemu-system-x86 qemu-system-common qemu-utils busybox-static linux-source-6.1
linux-headers-amd64 linux-image-amd64 clang libclang-rt-14-dev llvm afl++
gnuplot-nox"

missing=
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	     grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "setup: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
