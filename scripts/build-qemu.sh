#!/bin/sh
# Builds the QEMU that qemu/'s patch series makes of Debian 12's qemu
# (virtio shared memory for vhost-user-fs; see qemu/README.md) and links
# it as $B/qemu/qemu-system-x86_64.
#
# The binary is cached outside the repository in
# $VQF_QEMU_CACHE/qemu-KEY/ (default /var/cache/vqfuse), KEY hashing
# everything that goes into it: the Debian version, the series and its
# patches, the device set, the configure options and this script.  A
# second build with the same KEY only makes the link.  A lock per KEY
# keeps two builds (two checkouts, CI and a developer) from racing; the
# cache entry appears complete or not at all (built aside, then renamed).
#
# Cold, it fetches the source package once (`apt-get source`, needs the
# deb-src entry scripts/setup-deps.sh adds), extracts and patches it in
# $B/qemu/, and builds one target, x86_64-softmmu, with no default
# features and no default devices: only the devices of tests/qemu's
# guests (qemu/x86_64-vqf.mak), TCG and vhost-user.
#
#   B                  build folder: $VQF_BUILD or ./build
#   VQF_QEMU_JOBS      ninja jobs (default: nproc)
#   VQF_QEMU_CACHE     cache folder (default /var/cache/vqfuse)
#
# Prints the path of the binary on stdout; progress goes to stderr and the
# build's own output to $B/qemu/build.log.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
B=${VQF_BUILD:-$root/build}
case $B in /*) ;; *) B=$root/$B ;; esac
cache=${VQF_QEMU_CACHE:-/var/cache/vqfuse}
jobs=${VQF_QEMU_JOBS:-$(nproc 2>/dev/null || echo 2)}
version=1:7.2+dfsg-7+deb12u18
qdir=$root/qemu

# Everything that changes the binary goes into the key, in a fixed order.
set -- --target-list=x86_64-softmmu --without-default-features \
	--without-default-devices --with-devices-x86_64=vqf \
	--enable-vhost-user --disable-user --disable-docs \
	--disable-install-blobs --disable-werror --disable-debug-info \
	--with-git-submodules=ignore --audio-drv-list= \
	--prefix=/opt/vqfuse-qemu \
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
key=$( {
	echo "$version"
	echo "$*"
	cat "$0" "$qdir/series" "$qdir/x86_64-vqf.mak"
	grep -v '^#' "$qdir/series" | while read -r p; do
		[ -n "$p" ] && cat "$qdir/$p"
	done
} | sha256sum | cut -c1-16)

out=$cache/qemu-$key
link()
{
	mkdir -p "$B/qemu"
	ln -sfn "$out/qemu-system-x86_64" "$B/qemu/qemu-system-x86_64"
	echo "$B/qemu/qemu-system-x86_64"
}

if [ -x "$out/qemu-system-x86_64" ]; then
	link
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/qemu-$key.lock"
flock 9
# another build may have finished while we waited
if [ -x "$out/qemu-system-x86_64" ]; then
	link
	exit 0
fi

log=$B/qemu/build.log
w=$B/qemu/work
echo "build-qemu: cold build of $version (key $key), log in $log" >&2
rm -rf "$w"
mkdir -p "$w"
: >"$log"

# The source package, fetched once per version and kept beside the cache.
dl=$cache/src-$(echo "$version" | tr ':+' '__')
dsc=$dl/qemu_${version#*:}.dsc
if [ ! -f "$dsc" ]; then
	mkdir -p "$dl.tmp"
	# the deb-src entry may be newer than the last apt-get update
	(cd "$dl.tmp" && { apt-get source -qq --download-only "qemu=$version" ||
		{ apt-get update -qq &&
		  apt-get source -qq --download-only "qemu=$version"; }; }) \
		>>"$log" 2>&1 || {
		tail -20 "$log" >&2
		echo "build-qemu: apt-get source failed (deb-src entry: scripts/setup-deps.sh)" >&2
		exit 1
	}
	rm -rf "$dl"
	mv "$dl.tmp" "$dl"
fi
# dpkg-source applies Debian's own patches (security fixes) first.
dpkg-source -x "$dsc" "$w/src" >>"$log" 2>&1
grep -v '^#' "$qdir/series" | while read -r p; do
	[ -n "$p" ] || continue
	patch -d "$w/src" -p1 -s --no-backup-if-mismatch <"$qdir/$p" >>"$log" 2>&1 || {
		echo "build-qemu: $p does not apply" >&2
		exit 1
	}
done
cp "$qdir/x86_64-vqf.mak" "$w/src/configs/devices/x86_64-softmmu/vqf.mak"

mkdir -p "$w/build"
(cd "$w/build" && ../src/configure "$@") >>"$log" 2>&1 || {
	tail -30 "$log" >&2
	echo "build-qemu: configure failed" >&2
	exit 1
}
ninja -C "$w/build" -j "$jobs" qemu-system-x86_64 >>"$log" 2>&1 || {
	grep -B2 -A12 -m3 'error' "$log" >&2 || tail -30 "$log" >&2
	echo "build-qemu: build failed" >&2
	exit 1
}

tmp=$out.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$w/build/qemu-system-x86_64" "$tmp/"
strip "$tmp/qemu-system-x86_64"
{
	echo "version $version"
	echo "key $key"
	echo "configure $*"
	grep -v '^#' "$qdir/series" | sed -n 's/^\(..*\)$/patch \1/p'
} >"$tmp/BUILDINFO"
rm -rf "$out"
mv "$tmp" "$out"
# the extracted tree is only needed to build; keep the build folder small
rm -rf "$w"
echo "build-qemu: cached in $out" >&2
link
