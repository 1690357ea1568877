#!/bin/sh
# Builds the 6.12 guest kernel of the QEMU tests from Debian's own source,
# /usr/src/linux-source-6.12.tar.xz, with fuse, cuse and virtiofs as
# modules.  Debian's 6.12 images build them (and virtio_pci) into the
# kernel, so kernel/fuse-6.12's patched fuse.ko could never load there.
#
# The kernel is cached outside the repository in
# $VQF_KERNEL_CACHE/kernel-6.12-KEY/ (default /var/cache/vqfuse), KEY
# hashing everything that goes into it: the Debian version and size of the
# tarball, kernel/guest-6.12.config and this script.  A second run with the
# same KEY only prints the folder.  A lock per KEY keeps two builds from
# racing; the entry appears complete or not at all (built aside, renamed).
#
# An entry holds
#   kernel-version         KVER, e.g. 6.12.118-vqf (CONFIG_LOCALVERSION)
#   boot/vmlinuz-KVER      the bzImage (QEMU -kernel)
#   boot/config-KVER, boot/System.map-KVER
#   lib/modules/KVER/      modules_install: modules.dep, modules.builtin,
#                          modules.builtin.modinfo, the few modules;
#                          build -> ../../../build
#   build/                 what out-of-tree modules need (KDIR), as
#                          scripts/package/install-extmod-build makes it for
#                          Debian's linux-headers: .config, Makefile,
#                          include/, include/generated, arch/x86/include,
#                          scripts/ built, tools/objtool, Module.symvers
#   BUILDINFO, build.log
# so that, e.g.,
#   make -C kernel KDIR=$E/build KVER=$(cat $E/kernel-version) modules
# builds the patched fuse.ko and vqfuse.ko against it.
#
# Cold, it extracts the tarball (less the large trees the config never
# compiles) in a work folder beside the cache, configures
# `make ARCH=x86_64 tinyconfig` + kernel/guest-6.12.config + olddefconfig,
# checks that every option of the fragment kept its value, and builds
# bzImage and modules with objects in a separate O= tree.
#
#   VQF_KERNEL_CACHE   cache folder (default /var/cache/vqfuse)
#   VQF_KERNEL_JOBS    make jobs (default 2)
#   VQF_KERNEL_TARBALL the source (default /usr/src/linux-source-6.12.tar.xz)
#   VQF_KERNEL_LOCKDEP 1: the same kernel with lockdep (PROVE_LOCKING), in
#                      kernel-6.12-lockdep-KEY/, release 6.12.118-vqf-lockdep
#                      (its modules' vermagic differs: modules built for
#                      one never load into the other); about 1.7x slower
#                      under TCG, hence not the default
#
# Prints the cache entry's folder on stdout; progress goes to stderr and
# the build's output to the log (kept in the entry as build.log, or beside
# it as kernel-6.12-KEY.log when the build failed).  The work folder (about
# 1 GB: source and objects) is removed whether the build succeeds or not.
# Cold: about 4 minutes with -j2 on an idle 2-core machine, 6.5 loaded.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/scripts/build-kernel.sh
cache=${VQF_KERNEL_CACHE:-/var/cache/vqfuse}
jobs=${VQF_KERNEL_JOBS:-2}
tarball=${VQF_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
frag=$root/kernel/guest-6.12.config
top=linux-source-6.12

die()
{
	echo "build-kernel: $*" >&2
	exit 1
}

[ -f "$tarball" ] || die "$tarball missing (apt-get install linux-source-6.12)"
for t in make gcc bc flex bison perl xz depmod; do
	command -v "$t" >/dev/null 2>&1 ||
		[ -x "/sbin/$t" ] || [ -x "/usr/sbin/$t" ] ||
		die "$t missing (apt-get install build-essential bc flex bison kmod xz-utils)"
done
# objtool (the ORC unwinder's) is built against libelf
[ -f /usr/include/gelf.h ] || die "libelf headers missing (apt-get install libelf-dev)"

debver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown)
size=$(wc -c <"$tarball" | tr -d ' ')

# Options over the fragment (a later value of an option wins).
extra=
flavour=
if [ "${VQF_KERNEL_LOCKDEP:-0}" = 1 ]; then
	flavour=-lockdep
	# shellcheck disable=SC2089 # kconfig text, never expanded unquoted
	extra='CONFIG_LOCALVERSION="-vqf-lockdep"
CONFIG_PROVE_LOCKING=y'
fi

# Everything that changes the entry goes into the key, in a fixed order.
key=$( {
	echo "linux-source-6.12 $debver $size"
	cat "$frag" "$self"
	printf '%s\n' "$extra"
} | sha256sum | cut -c1-16)
name=kernel-6.12$flavour-$key
out=$cache/$name

if [ -f "$out/kernel-version" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/$name.lock"
flock 9
# another build may have finished while we waited
if [ -f "$out/kernel-version" ]; then
	echo "$out"
	exit 0
fi

w=$cache/$name.work
log=$cache/$name.log
echo "build-kernel: cold build of linux-source-6.12 $debver ($name), log in $log" >&2
rm -rf "$w"
trap 'rm -rf "$w" "$out.tmp.$$"' EXIT
trap 'exit 1' HUP INT TERM
mkdir -p "$w/src" "$w/obj"
: >"$log"
started=$(date +%s)

fail()
{
	grep -B2 -A8 -m3 -E 'error:|\*\*\*' "$log" >&2 || tail -30 "$log" >&2
	die "$*"
}

# Source, less what the config never compiles nor Kconfig reads: the sources
# of the large driver trees, of the other architectures (Kconfig files and
# Makefiles stay: Kconfig sources them all), Documentation but its Kconfig.
# xz itself takes a few seconds; the writes were three times that.
set -- --exclude="$top/Documentation/*/*" --exclude="$top/Documentation/*.rst"
# (drivers/net: but its top folder, loopback.c is built with NET)
for d in drivers/gpu 'drivers/net/*' drivers/media drivers/scsi \
	drivers/infiniband drivers/staging drivers/accel drivers/usb \
	drivers/iio sound tools/perf tools/testing \
	alpha arc arm arm64 csky hexagon loongarch m68k microblaze mips nios2 \
	openrisc parisc powerpc riscv s390 sh sparc um xtensa; do
	case $d in */*|sound) ;; *) d=arch/$d ;; esac
	set -- "$@" --exclude="$top/$d/*.[chS]" --exclude="$top/$d/*.dts*"
done
tar -xJf "$tarball" -C "$w/src" --strip-components=1 "$@" "$top" \
	>>"$log" 2>&1 || fail "cannot extract $tarball"

# Configure: tinyconfig, the fragment over it, olddefconfig.
k()
{
	make -C "$w/src" O="$w/obj" ARCH=x86_64 "$@" >>"$log" 2>&1
}
k tinyconfig || fail "tinyconfig failed"
{ cat "$frag"; printf '%s\n' "$extra"; } >"$w/guest.config"
"$w/src/scripts/kconfig/merge_config.sh" -m -O "$w/obj" "$w/obj/.config" \
	"$w/guest.config" >>"$log" 2>&1 || fail "merge_config failed"
k olddefconfig || fail "olddefconfig failed"
# every option of the fragment must have kept the value asked (the last
# one given): a dependency missing from the fragment silently turns an
# option off
bad=$(sed -n -e '/^CONFIG_/p' \
	-e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1=n/p' "$w/guest.config" |
	awk -F= '!($1 in v) { k[++n] = $1 } { v[$1] = $0 }
		END { for (i = 1; i <= n; i++) print v[k[i]] }' |
	while IFS= read -r l; do
		n=${l%%=*}
		v=${l#*=}
		got=$(sed -n "s/^$n=//p" "$w/obj/.config")
		[ -n "$got" ] || got=n
		[ "$got" = "$v" ] || echo "  $n: asked $v, got $got"
	done)
if [ -n "$bad" ]; then
	echo "$bad" >&2
	die "kernel/guest-6.12.config: options above did not take (missing dependencies?)"
fi

k -j"$jobs" bzImage modules || fail "kernel build failed"
kver=$(cat "$w/obj/include/config/kernel.release")
case $kver in
*-vqf*) ;;
*) die "kernel release $kver lacks -vqf (CONFIG_LOCALVERSION)" ;;
esac

tmp=$out.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp/boot"
cp "$w/obj/arch/x86/boot/bzImage" "$tmp/boot/vmlinuz-$kver"
cp "$w/obj/.config" "$tmp/boot/config-$kver"
cp "$w/obj/System.map" "$tmp/boot/System.map-$kver"
k INSTALL_MOD_PATH="$tmp" INSTALL_MOD_STRIP=1 modules_install ||
	fail "modules_install failed"
[ -f "$tmp/lib/modules/$kver/modules.dep" ] || fail "depmod wrote no modules.dep"
# what external modules need, as Debian's linux-headers packages hold it
(cd "$w/obj" && srctree=$w/src SRCARCH=x86 CC=gcc HOSTCC=gcc MAKE=make \
	"$w/src/scripts/package/install-extmod-build" "$tmp/build") \
	>>"$log" 2>&1 || fail "install-extmod-build failed"
cp "$w/obj/.config" "$tmp/build/.config"
cp "$w/obj/System.map" "$tmp/build/System.map"
rm -f "$tmp/lib/modules/$kver/build" "$tmp/lib/modules/$kver/source"
ln -s ../../../build "$tmp/lib/modules/$kver/build"
echo "$kver" >"$tmp/kernel-version"
{
	echo "source linux-source-6.12 $debver ($tarball, $size bytes)"
	echo "key $key"
	echo "kernel $kver"
	echo "base tinyconfig (ARCH=x86_64) + kernel/guest-6.12.config"
	[ -z "$extra" ] || printf '%s\n' "$extra" | sed 's/^/extra /'
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - started)) s, -j$jobs"
} >"$tmp/BUILDINFO"
mv "$log" "$tmp/build.log"
rm -rf "$out"
mv "$tmp" "$out"
# the source and objects are only needed to build
rm -rf "$w"
echo "build-kernel: cached in $out ($(du -sh "$out" | cut -f1))" >&2
echo "$out"
