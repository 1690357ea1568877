#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# man-pages.sh BINDIR BUILDDIR SRCDIR [MANDIR] - the manual pages that
# help2man made from the program's --help (sim/cli/CMakeLists.txt)
# against that --help:
# - each page is newer than the program and its docs/man/*.h2m (a page
#   left behind by a changed --help is caught even when no option moved);
# - rendered (man -l, or groff), it has NAME (from the .h2m, not
#   help2man's placeholder), SYNOPSIS, DESCRIPTION, OPTIONS, EXAMPLES and
#   SEE ALSO;
# - every option (--name, -x) that vqfuse-sim --help, run --help, mount
#   --help and vhost-user --help print is in vqfuse-sim(1), and every one
#   of vqfuse-virtiofsd --help, and each of its -o items, in
#   vqfuse-virtiofsd(1);
# - each help lists every option its parser takes (the option tables in
#   SRCDIR/sim/cli, and the -o items set_legacy() knows), and lists in its
#   option column nothing the parser does not take;
# - cmake --install BUILDDIR --prefix TMP puts both pages in MANDIR/man1.
# MANDIR is CMAKE_INSTALL_MANDIR (default share/man); $CMAKE the cmake to
# install with.  Exit 77 (skipped) when neither man nor groff is there.
set -u
BIN=${1:?usage: man-pages.sh BINDIR BUILDDIR SRCDIR [MANDIR]}
B=${2:?usage: man-pages.sh BINDIR BUILDDIR SRCDIR [MANDIR]}
SRC=${3:?usage: man-pages.sh BINDIR BUILDDIR SRCDIR [MANDIR]}
MANDIR=${4:-share/man}
CMAKE=${CMAKE:-cmake}
CLI=$SRC/sim/cli
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-man.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

if command -v man >/dev/null && command -v col >/dev/null; then
	RENDER="man"
elif command -v groff >/dev/null; then
	RENDER="groff"
else
	echo "SKIP: neither man (man-db) nor groff to render the pages"
	exit 77
fi

# newer A B: A (a symbolic link followed) was modified after B
newer() {
	find -L "$1" -newer "$2" | grep -q .
}

# render PAGE: the page as plain text, wide and without hyphenation (an
# option broken at a line's end would not be found)
render() {
	if [ $RENDER = man ]; then
		LC_ALL=C MANROFFOPT=-rHY=0 MANWIDTH=200 MANPAGER=cat PAGER=cat \
			man -l "$1" 2>"$T/render.err" | col -bx
	else
		LC_ALL=C groff -man -Tascii -P-cbou -rHY=0 -rLL=200n "$1" \
			2>"$T/render.err"
	fi
}

# words FILE: its words, one a line, split where option names end
words() {
	tr -c 'A-Za-z0-9_-' '\n' <"$1" | grep -v '^$' | sort -u
}

# opts FILE: the option names (--name, -x) in FILE, one a line
opts() {
	words "$1" | grep -xE -- '--[A-Za-z0-9][A-Za-z0-9-]*|-[A-Za-z]'
}

# column FILE: the option names in FILE's option column (an indented line
# that starts with '-', up to the gap before its description)
column() {
	grep -E '^ {1,10}-' "$1" | sed -E 's/^ +//; s/  .*//' >"$T/col"
	opts "$T/col"
}

# oitems FILE: the -o items in FILE's option column ("-o a|b=V" gives a, b)
oitems() {
	grep -E '^ {1,10}-o [a-z]' "$1" | sed -E 's/^ +-o ([^ ]+).*/\1/' |
		tr '|' '\n' | sed 's/=.*//' | sort -u
}

# tables FILE ARRAY...: the option names in those option tables of FILE
tables() {
	f=$1
	shift
	for a in "$@"; do
		sed -n "/^static const .*[ *]$a\[\] = {/,/^};/p" "$f" >"$T/tab"
		[ -s "$T/tab" ] || fail "no table ${a}[] in $f (renamed?)"
		cat "$T/tab"
	done | grep -o '"-[^"]*"' | tr -d '"'
}

# help NAME ARGS...: NAME's help into $T/NAME.help, exit 0 and not empty
help() {
	name=$1
	shift
	if ! "$@" >"$T/$name.help" 2>"$T/err"; then
		fail "$name: exit $?"
		sed 's/^/  | /' "$T/err"
	fi
	[ -s "$T/$name.help" ] || fail "$name: printed nothing"
}

# in_page PAGE WHAT LIST: each line of LIST is a word of PAGE's text
in_page() {
	page=$1 what=$2
	while read -r w; do
		grep -qxF -- "$w" "$T/$page.words" ||
			fail "$page(1) lacks $what '$w'"
	done <"$3"
}

# listed NAME WHAT LIST: each line of LIST is a word of NAME's help
listed() {
	name=$1 what=$2
	while read -r w; do
		words "$T/$name.help" | grep -qxF -- "$w" ||
			fail "$name --help does not list $what '$w'"
	done <"$3"
}

# taken NAME LIST: NAME's option column names nothing outside LIST
taken() {
	column "$T/$1.help" | while read -r o; do
		grep -qxF -- "$o" "$2" ||
			echo "FAIL: $1 --help lists $o, which no parser takes"
	done >"$T/taken"
	[ -s "$T/taken" ] && cat "$T/taken" &&
		fails=$((fails + $(wc -l <"$T/taken")))
}

SIM=$BIN/vqfuse-sim
VFSD=$BIN/vqfuse-virtiofsd
for p in vqfuse-sim vqfuse-virtiofsd; do
	page=$BIN/$p.1
	[ -f "$page" ] || { fail "$page: not built"; continue; }
	newer "$BIN/$p" "$page" &&
		fail "$page is older than $BIN/$p: rebuild the pages"
	newer "$SRC/docs/man/$p.h2m" "$page" &&
		fail "$page is older than docs/man/$p.h2m: rebuild the pages"
	render "$page" >"$T/$p.txt"
	[ -s "$T/$p.txt" ] || { fail "$page: renders to nothing"; continue; }
	[ -s "$T/render.err" ] && sed "s|^|  $p.1: |" "$T/render.err"
	words "$T/$p.txt" >"$T/$p.words"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "SEE ALSO"; do
		grep -qx "$s" "$T/$p.txt" || fail "$p(1) has no $s section"
	done
	grep -A1 -x NAME "$T/$p.txt" | grep -q "manual page for" &&
		fail "$p(1): NAME is help2man's placeholder (docs/man/$p.h2m?)"
	grep -q "^ *$p " "$T/$p.txt" || fail "$p(1): no synopsis of $p"
done

help sim "$SIM" --help
help run "$SIM" run --help
help mount "$SIM" mount --help
help vhost "$SIM" vhost-user --help
help vfsd "$VFSD" --help
if ! grep -q '^Usage: vqfuse-sim run ' "$T/sim.help" ||
   ! grep -q '^  or:  vqfuse-sim mount ' "$T/sim.help"; then
	fail "vqfuse-sim --help: no GNU usage (Usage: ... or: ...)"
fi
grep -q '^Usage: vqfuse-virtiofsd ' "$T/vfsd.help" ||
	fail "vqfuse-virtiofsd --help: no usage line of its own"

# Every option each help prints is in that program's page.
for h in sim run mount vhost; do
	opts "$T/$h.help" >"$T/$h.opts"
	[ -s "$T/$h.opts" ] || fail "$h --help: no option found"
	[ -f "$T/vqfuse-sim.words" ] &&
		in_page vqfuse-sim "option" "$T/$h.opts"
done
opts "$T/vfsd.help" >"$T/vfsd.opts"
oitems "$T/vfsd.help" >"$T/vfsd.items"
[ -s "$T/vfsd.items" ] || fail "vqfuse-virtiofsd --help: no -o item"
if [ -f "$T/vqfuse-virtiofsd.words" ]; then
	in_page vqfuse-virtiofsd "option" "$T/vfsd.opts"
	in_page vqfuse-virtiofsd "-o item" "$T/vfsd.items"
fi

# Every option a parser takes is in the help of the name that takes it.
tables "$CLI/vqfuse_sim.c" num_opts run_flags run_strs >"$T/run.tab"
tables "$CLI/mount.c" mount_nums mount_flags mount_strs >"$T/mount.tab"
{
	tables "$CLI/vu_compat.c" vu_flags vu_strs vu_nums vfsd_flags \
		vfsd_strs vfsd_nums
	# vu_flags[] and vu_nums[] take the shared memory options by macro
	sed -n '/^#define VQF_VU_SHM_FLAGS/p; /^#define VQF_VU_SHM_NUM/,/[^\\]$/p' \
		"$CLI/vqf_vu_shm.h" | grep -o '"-[^"]*"' | tr -d '"'
} >"$T/vu.tab"
sed -n '/^static int set_legacy(/,/^}/p' "$CLI/vu_compat.c" |
	grep -oE '"[a-z_][a-z0-9_]*"' | tr -d '"' | sort -u >"$T/o.tab"
for t in run mount vu o; do
	[ -s "$T/$t.tab" ] || fail "no option of $t found in $CLI"
done
listed sim "run's option" "$T/run.tab"
listed sim "mount's option" "$T/mount.tab"
listed sim "vhost-user's option" "$T/vu.tab"
listed mount "mount's option" "$T/mount.tab"
listed vhost "vhost-user's option" "$T/vu.tab"
listed vfsd "option" "$T/vu.tab"
while read -r i; do
	# loglevel is log_level's other spelling, named in its line
	grep -qxF -- "$i" "$T/vfsd.items" || words "$T/vfsd.help" |
		grep -qxF -- "$i" || fail "vqfuse-virtiofsd --help lacks -o $i"
done <"$T/o.tab"
while read -r i; do
	grep -qxF -- "$i" "$T/o.tab" ||
		fail "vqfuse-virtiofsd --help lists -o $i, which set_legacy() does not take"
done <"$T/vfsd.items"

# ... and lists in its option column only what a parser takes.
printf '%s\n' -h --help --version >"$T/all.tab"
cat "$T/run.tab" "$T/mount.tab" "$T/vu.tab" >>"$T/all.tab"
taken sim "$T/all.tab"
printf '%s\n' -h --help >>"$T/mount.tab"
taken mount "$T/mount.tab"
printf '%s\n' -h --help >>"$T/vu.tab"
taken vhost "$T/vu.tab"
taken vfsd "$T/vu.tab"

# cmake --install puts them in MANDIR/man1 (DESTDIR too when absolute).
case $MANDIR in
/*)	DESTDIR=$T/dest
	dir=$DESTDIR$MANDIR/man1 ;;
*)	DESTDIR=
	dir=$T/prefix/$MANDIR/man1 ;;
esac
export DESTDIR
if ! "$CMAKE" --install "$B" --prefix "$T/prefix" >"$T/install.log" 2>&1
then
	fail "cmake --install $B --prefix $T/prefix"
	sed 's/^/  | /' "$T/install.log"
fi
for p in vqfuse-sim vqfuse-virtiofsd; do
	if [ ! -f "$dir/$p.1" ]; then
		fail "cmake --install: no $dir/$p.1"
	elif ! cmp -s "$dir/$p.1" "$BIN/$p.1"; then
		fail "cmake --install: $dir/$p.1 is not the built page"
	fi
done

[ $fails = 0 ] && echo "PASS" && exit 0
echo "$fails failure(s)"
exit 1
