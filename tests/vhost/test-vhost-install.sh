#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-vhost-install.sh BUILDDIR - `cmake --install` into a temporary
# prefix (and once more with DESTDIR) puts the vhost-user backend
# description where libvirt looks (share/qemu/vhost-user/*.json, the
# vhost-user spec's backend program conventions): valid JSON with the
# spec's fields, "type": "fs", and a "binary" that is the installed
# vqfuse-virtiofsd, absolute, executable and answering
# --print-capabilities with type fs.  DESTDIR must not leak into it.
set -u
B=${1:?usage: test-vhost-install.sh BUILDDIR}
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-vhost-install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# check JSON_FILE ROOT: the description, ROOT prefixed to its binary
check() {
	json=$1 root=$2
	[ -f "$json" ] || { fail "$json not installed"; return; }
	if command -v python3 >/dev/null; then
		python3 -m json.tool "$json" >/dev/null || fail "$json: not JSON"
		python3 - "$json" >"$T/bin" <<'PY' || { fail "$json: fields"; return; }
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, dict), d
assert d["type"] == "fs", d
assert isinstance(d["description"], str) and d["description"], d
assert isinstance(d["binary"], str) and d["binary"].startswith("/"), d
assert set(d) <= {"description", "type", "binary", "tags"}, d
print(d["binary"])
PY
		bin=$(cat "$T/bin")
	else
		grep -q '"type": "fs"' "$json" || fail "$json: no type fs"
		bin=$(sed -n 's/.*"binary": "\(.*\)".*/\1/p' "$json")
	fi
	[ -x "$root$bin" ] || { fail "binary $root$bin not executable"; return; }
	"$root$bin" --print-capabilities | grep -q '"type": "fs"' ||
		fail "$root$bin --print-capabilities"
}

P=$T/prefix
cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1 ||
	{ fail "cmake --install --prefix"; cat "$T/install.log"; }
check "$P/share/qemu/vhost-user/50-vqfuse-sim.json" ""
grep -q "\"$P/bin/vqfuse-virtiofsd\"" \
	"$P/share/qemu/vhost-user/50-vqfuse-sim.json" ||
	fail "binary is not the prefix's vqfuse-virtiofsd"

D=$T/dest
DESTDIR=$D cmake --install "$B" --prefix /opt/vqf >"$T/install.log" 2>&1 ||
	{ fail "DESTDIR cmake --install"; cat "$T/install.log"; }
check "$D/opt/vqf/share/qemu/vhost-user/50-vqfuse-sim.json" "$D"
grep -q '"/opt/vqf/bin/vqfuse-virtiofsd"' \
	"$D/opt/vqf/share/qemu/vhost-user/50-vqfuse-sim.json" ||
	fail "DESTDIR leaked into the description"

[ $fails = 0 ] && echo "PASS" && exit 0
echo "$fails failure(s)"
exit 1
