#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# run.sh SRCDIR QEMU_BINDIR WORKDIR - the Debian packages, end to end
# (ctest entry `package`, label package; docs/packaging.md):
#
#   1. a clean copy of SRCDIR (git's tracked and unignored files, no build
#      folders) -> dpkg-buildpackage, with the package's own tests: the
#      source package and vqfuse-sim, libvqfuse-dev, vqfuse-dkms (+
#      vqfuse-sim-dbgsym)
#   2. lintian on the .changes: no error and no warning (what stays is
#      overridden in debian/ with its reason)
#   3. apt-get --simulate installs the three .debs here: their Depends
#      exist in Debian 12
#   4. every .deb unpacked into a scratch root: the files each must hold,
#      the program run from there, a program built against libvqfuse-dev
#      with its pkg-config file, the manual pages rendered
#   5. DKMS (add, build, install) from the scratch root's /usr/src into
#      scratch trees for the installed 6.1 kernel (linux-headers-amd64) and
#      the 6.12 one (only vqfuse.ko: fuse is built in there); for 6.1 beside
#      copies of that kernel's own fuse.ko, cuse.ko and virtiofs.ko, so
#      DKMS's version check is the one a real install makes; depmod and
#      modprobe --show-depends over the result must pick DKMS's modules
#      over the in-tree ones for vqfuse and virtiofs
#   6. the DKMS-built modules booted under QEMU (tests/qemu/run-test.sh
#      dkms): one POSIX cycle on vqfuse.ko, one on the rebuilt virtiofs.ko,
#      both over DKMS's fuse.ko
#
# Nothing is installed on this machine and no module is loaded into its
# kernel: DKMS runs in a private mount namespace with a tmpfs over
# /var/lib/dkms (where it would make its signing key), on --sourcetree,
# --dkmstree and --installtree of its own, with --no-depmod.  Needs root
# (unshare, mount); exits 77 (skipped) without it.
set -eu

src=$(cd "$1" && pwd)
qbin=$(cd "$2" && pwd)
w=$3

fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

t0=$(date +%s)
step()
{
	echo "== [$(($(date +%s) - t0)) s] $*"
}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: the package test needs root (unshare -m, mount)"
	exit 77
fi
for t in dpkg-buildpackage lintian dkms dh_dkms help2man; do
	command -v "$t" >/dev/null ||
		fail "$t missing: scripts/setup-deps.sh installs it"
done

rm -rf "$w"
mkdir -p "$w/src"

step "clean copy of $src"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z -co --exclude-standard |
		tar --null -T - -cf -) | tar -xf - -C "$w/src"
else
	(cd "$src" && tar --exclude='./build*' --exclude=./.git -cf - .) |
		tar -xf - -C "$w/src"
fi
[ -f "$w/src/debian/control" ] || fail "no debian/ in the copy"

# As a buildd builds it, its own tests included (debian/rules: lib/'s and
# the ring's), on both cores.
step "dpkg-buildpackage"
(cd "$w/src" && DEB_BUILD_OPTIONS="parallel=2" \
	dpkg-buildpackage -us -uc) >"$w/build.log" 2>&1 || {
	tail -50 "$w/build.log"
	fail "dpkg-buildpackage (log: $w/build.log)"
}
grep -E '^[0-9]+% tests passed' "$w/build.log" ||
	fail "the package build ran no tests"
ver=$(cd "$w/src" && dpkg-parsechangelog -S Version)
up=${ver%%-*}
for p in "vqfuse-sim_${ver}_amd64" "libvqfuse-dev_${ver}_amd64" \
	 "vqfuse-dkms_${ver}_all"; do
	[ -f "$w/$p.deb" ] || fail "$p.deb was not built"
done
changes=$w/vqfuse_${ver}_amd64.changes
[ -f "$changes" ] || fail "no $changes"
[ -f "$w/vqfuse_${ver}.dsc" ] || fail "no source package"

step "lintian"
lintian --fail-on error,warning --display-info "$changes" \
	>"$w/lintian.log" 2>&1 || {
	cat "$w/lintian.log"
	fail "lintian reports errors or warnings"
}
grep -v 'running with root privileges' "$w/lintian.log" || true

step "apt-get --simulate install"
apt-get -s -q install "$w/vqfuse-sim_${ver}_amd64.deb" \
	"$w/libvqfuse-dev_${ver}_amd64.deb" \
	"$w/vqfuse-dkms_${ver}_all.deb" >"$w/apt.log" 2>&1 || {
	cat "$w/apt.log"
	fail "the packages' dependencies cannot be installed"
}
grep -E '^Inst (vqfuse-sim|libvqfuse-dev|vqfuse-dkms) ' "$w/apt.log"

step "unpacked into $w/root"
r=$w/root
for d in "$w"/*.deb; do
	dpkg-deb -x "$d" "$r"
done
have()
{
	for f in "$@"; do
		[ -e "$r/$f" ] || [ -L "$r/$f" ] || fail "$f is not in the packages"
	done
}
have usr/bin/vqfuse-sim usr/bin/vqfuse-virtiofsd \
	usr/share/qemu/vhost-user/50-vqfuse-sim.json \
	usr/share/man/man1/vqfuse-sim.1.gz \
	usr/share/man/man1/vqfuse-virtiofsd.1.gz \
	usr/lib/x86_64-linux-gnu/libvqfuse.a \
	usr/lib/x86_64-linux-gnu/pkgconfig/vqfuse.pc \
	"usr/src/vqfuse-$up/dkms.conf" \
	"usr/src/vqfuse-$up/kernel/Makefile" \
	"usr/src/vqfuse-$up/kernel/dkms-make.sh"
[ "$(readlink "$r/usr/bin/vqfuse-virtiofsd")" = vqfuse-sim ] ||
	fail "vqfuse-virtiofsd is not a link to vqfuse-sim"
for h in "$src"/lib/*.h; do
	have "usr/include/vqfuse/$(basename "$h")"
done
for p in "$src"/kernel/fuse-*/*.patch "$src"/lib/*.c; do
	rel=${p#"$src"/}
	cmp -s "$p" "$r/usr/src/vqfuse-$up/$rel" ||
		fail "vqfuse-dkms's $rel differs from the tree's"
done
grep -q "^PACKAGE_VERSION=\"$up\"" "$r/usr/src/vqfuse-$up/dkms.conf" ||
	fail "dkms.conf does not say version $up"

# The description libvirt reads names the installed program.
python3 - "$r/usr/share/qemu/vhost-user/50-vqfuse-sim.json" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
assert d["type"] == "fs", d
assert d["binary"] == "/usr/bin/vqfuse-virtiofsd", d
PY
	fail "50-vqfuse-sim.json is not a vhost-user fs description of /usr/bin/vqfuse-virtiofsd"

out=$("$r/usr/bin/vqfuse-sim" --version)
[ "$out" = "vqfuse-sim $up" ] ||
	fail "vqfuse-sim --version says '$out', the package is $up"
"$r/usr/bin/vqfuse-virtiofsd" --print-capabilities | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["type"] == "fs", d' || fail "vqfuse-virtiofsd --print-capabilities"

for m in vqfuse-sim vqfuse-virtiofsd; do
	MANWIDTH=100 man -l "$r/usr/share/man/man1/$m.1.gz" 2>/dev/null |
		grep -q "^NAME" || fail "man page $m(1) does not render"
done

# libvqfuse-dev as a user would use it: pkg-config, the headers, the .a.
cat >"$w/devtest.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <vqf_dirent.h>

int main(void)
{
	struct {
		struct fuse_dirent d;
		char name[8];
	} rec;
	struct vqf_dirent e;
	u32 pos = 0;

	memset(&rec, 0, sizeof(rec));
	rec.d.ino = 7;
	rec.d.off = 1;
	rec.d.namelen = 3;
	rec.d.type = 8;
	memcpy(rec.d.name, "abc", 3);
	if (vqf_dirent_next((const u8 *)&rec, sizeof(rec), false, &pos, &e) != 1 ||
	    e.namelen != 3 || memcmp(e.name, "abc", 3) || e.ino != 7)
		return 1;
	if (vqf_dirent_next((const u8 *)&rec, sizeof(rec), false, &pos, &e))
		return 2;
	pos = 0;
	if (vqf_dirent_next((const u8 *)&rec, 4, false, &pos, &e) != -ENODATA)
		return 3;
	puts("libvqfuse-dev: ok");
	return 0;
}
C
flags=$(PKG_CONFIG_SYSROOT_DIR=$r \
	PKG_CONFIG_LIBDIR=$r/usr/lib/x86_64-linux-gnu/pkgconfig \
	pkg-config --cflags --libs vqfuse) || fail "pkg-config vqfuse"
# shellcheck disable=SC2086
cc -Wall -Werror -o "$w/devtest" "$w/devtest.c" $flags ||
	fail "a program against libvqfuse-dev does not build"
"$w/devtest" || fail "a program against libvqfuse-dev does not run"

# The kernel DKMS builds for: the installed linux-headers-amd64's (6.1),
# as kernel/Makefile picks it; 6.12 follows below.
kver=$(ls -d /lib/modules/6.1.*-amd64/build 2>/dev/null | sort -V | tail -n 1 |
	cut -d/ -f4)
[ -n "$kver" ] || fail "no linux-headers-*-amd64 installed"
step "DKMS for $kver"
m=$w/modroot/lib/modules/$kver
mkdir -p "$m/kernel/fs/fuse" "$w/dkms"
for k in fuse cuse virtiofs; do
	intree=$(modinfo -k "$kver" -n "$k") || fail "no $k module in $kver"
	cp "$intree" "$m/kernel/fs/fuse/"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "/lib/modules/$kver/$f" ] && cp "/lib/modules/$kver/$f" "$m/"
done
trees="--sourcetree $r/usr/src --dkmstree $w/dkms --installtree $w/modroot/lib/modules"
# dkms_ns KVER LOG [add]: DKMS (add,) build and install for KVER, in a
# private mount namespace, into the scratch trees
dkms_ns()
{
	# shellcheck disable=SC2016
	unshare -m sh -c '
		set -e
		mount -t tmpfs vqfuse-dkms /var/lib/dkms
		[ -z "$4" ] || dkms add -m vqfuse -v "$1" $3
		dkms build -m vqfuse -v "$1" -k "$2" -j 2 $3
		dkms install -m vqfuse -v "$1" -k "$2" --no-depmod $3
		dkms status $3
	' dkms "$up" "$1" "$trees" "${3:-}" >"$2" 2>&1 || {
		cat "$2"
		find "$w/dkms" -name make.log -exec tail -40 {} \;
		fail "dkms build/install for $1"
	}
}
dkms_ns "$kver" "$w/dkms.log" add
grep -E '^vqfuse/' "$w/dkms.log"
grep -q "^vqfuse/$up, $kver, .*: installed" "$w/dkms.log" ||
	fail "dkms status does not say installed"
for k in vqfuse fuse cuse virtiofs; do
	[ -f "$m/updates/dkms/$k.ko" ] || {
		cat "$w/dkms.log"
		fail "DKMS did not install $k.ko into updates/dkms"
	}
done
for k in fuse cuse virtiofs; do
	[ "$(modinfo -F version "$m/updates/dkms/$k.ko")" = "vqfuse-$up" ] ||
		fail "DKMS's $k.ko is not vqfuse's (modinfo version)"
done
[ "$(modinfo -F vermagic "$m/updates/dkms/vqfuse.ko" | cut -d' ' -f1)" = \
  "$kver" ] || fail "vqfuse.ko is not built for $kver"

# What modprobe would load: DKMS's modules, not the in-tree ones.
depmod -b "$w/modroot" "$kver" || fail "depmod over the DKMS install"
for k in vqfuse virtiofs; do
	deps=$(modprobe -d "$w/modroot" -S "$kver" --show-depends "$k") ||
		fail "modprobe --show-depends $k"
	echo "$deps" | sort -u
	echo "$deps" | grep -q "updates/dkms/fuse.ko" ||
		fail "modprobe would not load DKMS's fuse.ko for $k"
	echo "$deps" | grep -q "updates/dkms/$k.ko" ||
		fail "modprobe would not load DKMS's $k.ko"
	echo "$deps" | grep -q "kernel/fs/fuse/" &&
		fail "modprobe would load an in-tree fs/fuse module for $k"
done

# Debian's 6.12 builds fuse and virtiofs in: DKMS builds vqfuse.ko against
# the kernel's own fuse and installs nothing else; modprobe must find it
# with no fs/fuse module to load first.
k12=$(ls -d /lib/modules/6.12.*-amd64/build 2>/dev/null | sort -V |
	tail -n 1 | cut -d/ -f4)
[ -n "$k12" ] || fail "no linux-headers-6.12-amd64 installed"
step "DKMS for $k12 (fuse built in)"
m12=$w/modroot/lib/modules/$k12
mkdir -p "$m12"
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "/lib/modules/$k12/$f" ] && cp "/lib/modules/$k12/$f" "$m12/"
done
dkms_ns "$k12" "$w/dkms-6.12.log"
grep -q "^vqfuse/$up, $k12, .*: installed" "$w/dkms-6.12.log" ||
	fail "dkms status does not say installed for $k12"
# 6.12's modules are xz-compressed (CONFIG_MODULE_COMPRESS_XZ): DKMS
# installs vqfuse.ko.xz there
ko12=$(ls "$m12"/updates/dkms/vqfuse.ko* 2>/dev/null | head -n 1)
[ -n "$ko12" ] || fail "DKMS did not install vqfuse.ko for $k12"
for k in fuse cuse virtiofs; do
	! ls "$m12/updates/dkms/$k.ko"* >/dev/null 2>&1 ||
		fail "DKMS installed $k.ko for $k12, whose $k is built in"
done
[ "$(modinfo -F vermagic "$ko12" | cut -d' ' -f1)" = "$k12" ] ||
	fail "vqfuse.ko is not built for $k12"
depmod -b "$w/modroot" "$k12" || fail "depmod over the DKMS install ($k12)"
deps=$(modprobe -d "$w/modroot" -S "$k12" --show-depends vqfuse) ||
	fail "modprobe --show-depends vqfuse ($k12)"
echo "$deps"
[ "$(echo "$deps" | grep -c '^insmod')" = 1 ] &&
	echo "$deps" | grep -q "updates/dkms/vqfuse.ko" ||
	fail "modprobe would load more than DKMS's vqfuse.ko on $k12"
echo "DKMS for $k12: $(basename "$ko12") only (fuse, virtiofs built in)"

step "QEMU: POSIX cycles on DKMS's vqfuse.ko and virtiofs.ko over its fuse.ko"
mkdir -p "$w/ko"
for k in vqfuse fuse cuse virtiofs; do
	cp "$m/updates/dkms/$k.ko" "$w/ko/"
done
echo "$kver" >"$w/ko/kernel-version"
VQF_KO_DIR=$w/ko VQF_KVER=$kver VQF_REQUIRE_VQFUSE=1 \
	"$src/tests/qemu/run-test.sh" dkms "$qbin" >"$w/qemu.log" 2>&1 || {
	cat "$w/qemu.log"
	fail "the DKMS-built modules under QEMU"
}
grep -E '^host: guest runs|^# modver' "$w/qemu.log"
step "done"
echo "package: ok ($ver: 3 packages, lintian clean, DKMS for $kver and" \
	"$k12, POSIX cycles in QEMU on vqfuse and virtiofs)"
