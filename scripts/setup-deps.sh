#!/bin/sh
# Installs what vqfuse needs on Debian 12.  Idempotent: silent and quick
# when everything is present.  Run as root.
set -eu

PKGS="build-essential cmake pkg-config git perl python3 kmod cpio
xz-utils file libfuse3-dev fuse3 libcmocka-dev liburing-dev valgrind
qemu-system-x86 qemu-system-common qemu-utils busybox-static linux-source-6.1
linux-headers-amd64 linux-image-amd64 linux-source-6.12 linux-headers-6.12-amd64
linux-image-6.12-amd64 bc flex bison libelf-dev clang libclang-rt-14-dev llvm afl++
gnuplot-nox dpkg-dev patch meson ninja-build libglib2.0-dev libpixman-1-dev
zlib1g-dev libfdt-dev libseccomp-dev libcap-ng-dev help2man man-db groff-base
debhelper dh-dkms dkms lintian"

# scripts/build-qemu.sh fetches Debian's qemu source package
# (apt-get source): a deb-src entry for the suites the binaries come from.
src_list=/etc/apt/sources.list.d/vqfuse-deb-src.sources
if [ ! -f "$src_list" ]; then
	cat >"$src_list" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	src_new=1
else
	src_new=
fi

missing=
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	     grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	# a new deb-src entry is read by the next apt-get update only
	[ -n "$src_new" ] && apt-get update -qq >/dev/null
	exit 0
fi

echo "setup: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
