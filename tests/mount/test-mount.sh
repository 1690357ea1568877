#!/bin/sh
# $OPTS is a word list on purpose; cleanup runs from the trap; the names
# listed with ls are ours.
# shellcheck disable=SC2086,SC2317,SC2012,SC2010
# shellcheck source-path=SCRIPTDIR
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-mount.sh VQFUSE_SIM CASE [MOUNT OPTIONS...] - vqfuse-sim mount with
# real programs on a temporary directory.  Cases:
#   usage   bad invocations exit 2 and name what is wrong (no mount)
#   ops     shell-level operations, each checked on the mount and in the
#           shared directory; unmounted with SIGTERM
#   tar     a tar round trip (symlinks, hard links, xattrs, sparse files)
#           compared byte for byte and in metadata with the source, on the
#           mount, in the shared directory and extracted back natively;
#           two extracts at once; unmounted with fusermount3 -u
#   sigint  writes, then SIGINT with a file and a directory open: the stop
#           waits for their releases; a second SIGINT stops at once; exit
#           0, counters, nothing lost
#   coherent  (with --cache=shared) edits made in the shared directory
#           behind the mount's back show on the mount at once
#   posix   (as root) vqf-posix users over the mount: other users'
#           permissions, owners, device nodes, 4,095-byte paths, space
#           given back at unlink (and no deleted file left open by the
#           server); $VQF_POSIX names vqf-posix
# $VQF_SIM_WRAP, if set, runs vqfuse-sim under it (valgrind).
# $VQF_MOUNT_DAEMON=virtiofsd|vqfuse: each mount is `mount --connect` to
# that vhost-user-fs daemon (tests/connect/daemon-lib.sh), started per
# mount over DIR with the options $VQF_MOUNT_DAEMON_OPTS (words; default
# cache auto, xattrs on, locks kept on the host: the client sends SETLK
# and FLOCK whatever INIT said, docs/connect.md), ours being
# `$VQF_DAEMON_SIM vhost-user` (default VQFUSE_SIM); every stop then also
# requires the daemon to end by itself, cleanly (vqf_daemon_clean).  With
# a daemon, posix takes $VQF_POSIX_SKIP (case names whose failure is
# tolerated) and ops $VQF_MOUNT_QUIRKS (flock-blocking: a blocking FLOCK
# is answered EOPNOTSUPP, as virtiofsd does).
# Exit 0 pass, 1 fail, 77 skipped (no usable /dev/fuse or fusermount3).
set -u -f
SIM=${1:?usage: test-mount.sh path/to/vqfuse-sim CASE [options]}
CASE=${2:?usage: test-mount.sh path/to/vqfuse-sim CASE [options]}
shift 2
OPTS="$*"
HERE=$(cd "$(dirname "$0")" && pwd)
DAEMON=${VQF_MOUNT_DAEMON:-}
if [ -n "$DAEMON" ]; then
	# shellcheck source=../connect/daemon-lib.sh
	. "$HERE/../connect/daemon-lib.sh"
	case $DAEMON in
	virtiofsd) DOPTS=${VQF_MOUNT_DAEMON_OPTS:--o cache=auto -o xattr -o posix_lock -o flock} ;;
	*) DOPTS=${VQF_MOUNT_DAEMON_OPTS:---cache auto --xattr --host-locks} ;;
	esac
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-mount-test.XXXXXX") || exit 1
D=$T/shared
M=$T/mnt
PID=
fails=0
checks=0
mkdir -p "$D" "$M"

mounted() {
	awk -v m="$M" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

cleanup() {
	[ -n "$DAEMON" ] && vqf_daemon_kill
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID"
		i=0
		while kill -0 "$PID" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$PID" 2>/dev/null
	fi
	if mounted; then
		fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# check DESC CMD...: CMD (bounded in time) must succeed.
check() {
	desc=$1
	shift
	checks=$((checks + 1))
	if ! timeout 120 "$@"; then
		fail "$desc ($*)"
		return 1
	fi
	return 0
}

# same DESC A B: two strings are equal.
same() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] && return 0
	fail "$1: '$2' != '$3'"
	return 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

finish() {
	echo "$CASE: $checks checks, $fails failures"
	[ $fails -eq 0 ]
	exit $?
}

# ---- usage errors: no mount needed --------------------------------------

if [ "$CASE" = usage ]; then
	expect_usage() {
		needle=$1
		shift
		checks=$((checks + 1))
		timeout 30 "$SIM" mount "$@" > "$T/out" 2> "$T/err"
		rc=$?
		if [ $rc -ne 2 ]; then
			fail "mount $*: exit $rc, expected 2"
		elif ! grep -q -- "$needle" "$T/err"; then
			fail "mount $*: stderr does not name '$needle'"
			sed 's/^/  | /' "$T/err"
		fi
	}
	expect_usage "MOUNTPOINT" --shared "$D"
	expect_usage "--shared DIR" "$M"
	expect_usage "$T/nonexistent" "$T/nonexistent" --shared "$D"
	expect_usage "--shared" "$M" --shared "$T/nonexistent"
	expect_usage "inside the shared" "$D" --shared "$D"
	expect_usage "inside the shared" "$D" --shared "$T"
	expect_usage "--cache" "$M" --shared "$D" --cache=sometimes
	expect_usage "--timeout" "$M" --shared "$D" --timeout 2
	expect_usage "--timeout" "$M" --shared "$D" --cache=auto --timeout 0
	expect_usage "--timeout" "$M" --shared "$D" --cache=auto --timeout x
	expect_usage "--queues" "$M" --shared "$D" --queues 0
	expect_usage "--queue-size" "$M" --shared "$D" --queue-size 100
	expect_usage "--fs" "$M" --shared "$D" --fs ext4
	expect_usage "--writeback" "$M" --shared "$D" --writeback=1
	expect_usage "--bogus" "$M" --shared "$D" --bogus
	expect_usage "unexpected argument" "$M" "$T" --shared "$D"
	checks=$((checks + 1))
	if timeout 30 "$SIM" --help > "$T/out" 2>&1; then
		for o in --cache --writeback --timeout --queues --queue-size \
			 --threads --inline --backend --max-files --debug; do
			grep -q -- "$o" "$T/out" ||
				fail "--help does not document mount's $o"
		done
	else
		fail "--help: exit $?"
	fi
	timeout 30 "$SIM" mount --help > "$T/out" 2>&1 ||
		fail "mount --help: exit $?"
	finish
fi

# ---- mounting ------------------------------------------------------------

[ -c /dev/fuse ] || skip "no /dev/fuse"
if [ ! -r /dev/fuse ] || [ ! -w /dev/fuse ]; then
	skip "/dev/fuse not usable by $(id -un)"
fi
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
	skip "not root and no fusermount3"
fi
command -v python3 >/dev/null || skip "no python3"
if [ -n "$DAEMON" ] && ! why=$(vqf_daemon_usable "$DAEMON"); then
	skip "$why"
fi

# start [OPTIONS...]: mounts D on M (or, with a daemon, the daemon
# serving D), waits until the mount is there.
start() {
	msrc=$D
	if [ -n "$DAEMON" ]; then
		msrc=$T/vhost.sock
		vqf_daemon_start "$DAEMON" "${VQF_DAEMON_SIM:-$SIM}" "$msrc" \
			"$D" "$T/daemon.log" $DOPTS || {
			fail "the $DAEMON back-end did not start"
			finish
		}
		set -- --connect "$msrc" "$@"
	else
		set -- --shared "$D" "$@"
	fi
	# A non-interactive shell starts background jobs with SIGINT
	# ignored, and libfuse keeps an ignored signal ignored.
	env --default-signal=INT ${VQF_SIM_WRAP:-} "$SIM" mount "$M" "$@" > "$T/out" 2> "$T/err" &
	PID=$!
	i=0
	while ! mounted; do
		if ! kill -0 "$PID" 2>/dev/null; then
			wait "$PID"
			rc=$?
			PID=
			sed 's/^/  | /' "$T/err"
			# The environment refuses FUSE mounts (a container
			# without the capability, no setuid fusermount3).
			if [ $rc -eq 1 ] && grep -q "cannot mount" "$T/err"
			then
				skip "the host refuses FUSE mounts"
			fi
			fail "vqfuse-sim mount exited with $rc before mounting"
			finish
		fi
		i=$((i + 1))
		if [ $i -gt 3000 ]; then
			fail "the mount did not appear within 300 s"
			finish
		fi
		sleep 0.1
	done
	# The line follows the mount (slowly under valgrind).
	checks=$((checks + 1))
	i=0
	while ! grep -q "mounted $msrc on $M" "$T/out" && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "mounted $msrc on $M" "$T/out" || fail "no 'mounted' line"
}

# stop HOW: SIGTERM, SIGINT or fusermount3 -u, then reap HOW.
stop() {
	case $1 in
	umount)
		fusermount3 -u "$M" || fail "fusermount3 -u $M: exit $?" ;;
	*)
		kill -"$1" "$PID" ;;
	esac
	reap "$1"
}

# waiting_line: the stop announces that it waits for open files (300 s).
waiting_line() {
	checks=$((checks + 1))
	i=0
	while ! grep -q "waiting up to .* open file" "$T/err" &&
	      [ $i -lt 3000 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "waiting up to .* open file" "$T/err" ||
		fail "no 'waiting ... open file' line on stderr"
}

# reap WHAT: after WHAT stopped it, the process must exit 0 within 20 s,
# leave no mount and print its counters with no failures.
reap() {
	i=0
	while kill -0 "$PID" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$PID" 2>/dev/null; then
		fail "vqfuse-sim still running 20 s after $1"
		return
	fi
	wait "$PID"
	rc=$?
	PID=
	checks=$((checks + 1))
	[ $rc -eq 0 ] || fail "vqfuse-sim exited with $rc after $1"
	mounted && fail "still mounted after $1"
	if ! grep -q "counters: host_ops=[1-9]" "$T/out"; then
		fail "no counters line after $1"
	elif ! grep -q "failed=0 bad_replies=0" "$T/out"; then
		fail "requests failed: $(grep counters: "$T/out")"
	fi
	grep -v mounted "$T/out" | sed 's/^/  /'
	if [ -s "$T/err" ]; then
		echo "  stderr:"
		sed 's/^/  | /' "$T/err"
	fi
	# The daemon ends with its front-end, having refused nothing.
	if [ -n "$DAEMON" ]; then
		checks=$((checks + 1))
		vqf_daemon_end 30 ||
			fail "the $DAEMON back-end still ran 30 s after $1"
		vqf_daemon_clean "$DAEMON" "$T/daemon.log" ||
			fail "the $DAEMON back-end did not end cleanly (above)"
		grep 'guard: ' "$T/daemon.log" | sed 's/^/  back-end: /'
	fi
}

# ---- ops -----------------------------------------------------------------

if [ "$CASE" = ops ]; then
	start $OPTS
	echo hello > "$M/a"
	same "cat" "$(cat "$M/a")" hello
	same "cat in DIR" "$(cat "$D/a")" hello
	echo more >> "$M/a"
	same "append" "$(cat "$D/a")" "$(printf 'hello\nmore')"
	echo new > "$M/a"
	same "O_TRUNC" "$(cat "$D/a")" new
	check mkdir mkdir -p "$M/d1/d2"
	check "mkdir in DIR" test -d "$D/d1/d2"
	head -c 3000000 /dev/urandom > "$T/big"
	check "cp in" cp "$T/big" "$M/big"
	check "cmp mount" cmp "$T/big" "$M/big"
	check "cmp DIR" cmp "$T/big" "$D/big"
	check "cp on the mount" cp "$M/big" "$M/d1/big2"
	check "cmp copy" cmp "$T/big" "$D/d1/big2"
	check "mv" mv "$M/d1/big2" "$M/d1/d2/big3"
	check "mv: gone" test ! -e "$D/d1/big2"
	check "mv: there" cmp "$T/big" "$D/d1/d2/big3"
	check "ln" ln "$M/a" "$M/hl"
	same "nlink" "$(stat -c %h "$M/a")" 2
	same "nlink in DIR" "$(stat -c %h "$D/a")" 2
	same "same inode" "$(stat -c %i "$M/hl")" "$(stat -c %i "$M/a")"
	check "ln -s" ln -s a "$M/sl"
	check "ln -s dangling" ln -s nowhere/x "$M/dangling"
	same "readlink" "$(readlink "$M/sl")" a
	same "readlink dangling" "$(readlink "$M/dangling")" nowhere/x
	check "symlink in DIR" test -L "$D/sl"
	same "cat through symlink" "$(cat "$M/sl")" new
	check chmod chmod 0640 "$M/a"
	same "chmod" "$(stat -c %a "$M/a")" 640
	same "chmod in DIR" "$(stat -c %a "$D/a")" 640
	check "touch -d" touch -d "2001-02-03 04:05:06 UTC" "$M/a"
	want=$(date -d "2001-02-03 04:05:06 UTC" +%s)
	same "mtime" "$(stat -c %Y "$M/a")" "$want"
	same "mtime in DIR" "$(stat -c %Y "$D/a")" "$want"
	# The symlink itself, not its target (lutimes, lchown).
	check "touch -h" touch -h -d "2002-03-04 05:06:07 UTC" "$M/sl"
	check "touch -h dangling" touch -h -d "2002-03-04 05:06:07 UTC" \
		"$M/dangling"
	same "symlink mtime" "$(stat -c %Y "$D/sl")" \
		"$(date -d "2002-03-04 05:06:07 UTC" +%s)"
	same "target mtime kept" "$(stat -c %Y "$D/a")" "$want"
	if [ "$(id -u)" -eq 0 ]; then
		check "chown -h" chown -h 12:34 "$M/sl"
		same "lchown in DIR" "$(stat -c %u:%g "$D/sl")" 12:34
		same "target owner kept" "$(stat -c %u "$D/a")" 0
		check chown chown 56:78 "$M/d1"
		same "chown in DIR" "$(stat -c %u:%g "$D/d1")" 56:78
	fi
	check truncate truncate -s 100000 "$M/a"
	same "size" "$(stat -c %s "$M/a")" 100000
	same "size in DIR" "$(stat -c %s "$D/a")" 100000
	check "df" sh -c "df '$M' | grep -q vqfuse-sim"
	check "ls -l" sh -c "ls -la '$M' | grep -q dangling"
	same "find" "$(cd "$M" && find . | sort | tr '\n' ' ')" \
		"$(cd "$D" && find . | sort | tr '\n' ' ')"
	check mkfifo mkfifo "$M/fifo"
	check "fifo in DIR" test -p "$D/fifo"
	# What the shell has no command for.
	check "python ops" python3 - "$M" "$D" <<'PY'
import ctypes, errno, fcntl, os, sys
m, d = sys.argv[1], sys.argv[2]
M = lambda p: os.path.join(m, p)
D = lambda p: os.path.join(d, p)
# xattrs, on a file and on the symlink itself
os.setxattr(M("a"), "user.color", b"blue")
assert os.getxattr(D("a"), "user.color") == b"blue"
assert os.getxattr(M("a"), "user.color") == b"blue"
assert "user.color" in os.listxattr(M("a"))
assert "user.color" not in os.listxattr(M("sl"), follow_symlinks=False)
os.removexattr(M("a"), "user.color")
assert "user.color" not in os.listxattr(D("a"))
try:
    os.getxattr(M("a"), "user.color")
    raise AssertionError("removed xattr still there")
except OSError as e:
    assert e.errno == errno.ENODATA, e
# renameat2 NOREPLACE and EXCHANGE
libc = ctypes.CDLL(None, use_errno=True)
AT = -100
def rename2(a, b, flags):
    r = libc.renameat2(AT, M(a).encode(), AT, M(b).encode(), flags)
    return 0 if r == 0 else ctypes.get_errno()
open(M("x"), "w").write("x")
open(M("y"), "w").write("y")
assert rename2("x", "y", 1) == errno.EEXIST
assert rename2("x", "y", 2) == 0
assert open(D("x")).read() == "y" and open(D("y")).read() == "x"
# sparse file: holes and data through SEEK_DATA / SEEK_HOLE
fd = os.open(M("sparse"), os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"z" * 4096, 1 << 20)
os.ftruncate(fd, 4 << 20)
assert os.lseek(fd, 0, os.SEEK_DATA) == 1 << 20
assert os.lseek(fd, 1 << 20, os.SEEK_HOLE) == (1 << 20) + 4096
os.posix_fallocate(fd, 3 << 20, 8192)
os.close(fd)
st = os.stat(D("sparse"))
assert st.st_size == 4 << 20 and st.st_blocks * 512 < 1 << 20, st
# copy_file_range between two open files
fi = os.open(M("big"), os.O_RDONLY)
fo = os.open(M("cfr"), os.O_WRONLY | os.O_CREAT, 0o644)
n = os.copy_file_range(fi, fo, 65536, 4096, 0)
assert n > 0, n
os.close(fi)
os.close(fo)
with open(D("big"), "rb") as f:
    f.seek(4096)
    assert open(D("cfr"), "rb").read() == f.read(n)
# flock: two open files, one exclusive lock
f1 = os.open(M("a"), os.O_RDONLY)
f2 = os.open(M("a"), os.O_RDONLY)
fcntl.flock(f1, fcntl.LOCK_EX | fcntl.LOCK_NB)
try:
    fcntl.flock(f2, fcntl.LOCK_EX | fcntl.LOCK_NB)
    raise AssertionError("second flock succeeded")
except BlockingIOError:
    pass
if "flock-blocking" in os.environ.get("VQF_MOUNT_QUIRKS", "").split():
    # virtiofsd -o flock answers every blocking FLOCK (SETLKW) with
    # EOPNOTSUPP, LOCK_UN without LOCK_NB included (docs/connect.md)
    try:
        fcntl.flock(f1, fcntl.LOCK_UN)
        raise AssertionError("blocking LOCK_UN succeeded")
    except OSError as e:
        assert e.errno == errno.EOPNOTSUPP, e
    fcntl.flock(f1, fcntl.LOCK_UN | fcntl.LOCK_NB)
else:
    fcntl.flock(f1, fcntl.LOCK_UN)
fcntl.flock(f2, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.close(f1)
os.close(f2)
# POSIX locks (kept by the host kernel) work
f1 = os.open(M("a"), os.O_RDWR)
fcntl.lockf(f1, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.close(f1)
# an open file that is unlinked keeps working
fd = os.open(M("tmpfile"), os.O_RDWR | os.O_CREAT, 0o600)
os.unlink(M("tmpfile"))
assert not os.path.exists(M("tmpfile"))
assert not os.path.exists(D("tmpfile"))
os.pwrite(fd, b"still here", 0)
assert os.pread(fd, 100, 0) == b"still here"
assert os.fstat(fd).st_size == 10
os.ftruncate(fd, 5)
assert os.pread(fd, 100, 0) == b"still"
os.fsync(fd)
os.close(fd)
# no .fuse_hidden file left once closed (RELEASE follows close(2) later)
import time
for i in range(100):
    if not [n for n in os.listdir(d) if n.startswith(".fuse_hidden")]:
        break
    time.sleep(0.05)
else:
    raise AssertionError(".fuse_hidden left: %s" % os.listdir(d))
PY
	check rm rm "$M/hl" "$M/x" "$M/y" "$M/cfr" "$M/fifo"
	same "nlink after rm" "$(stat -c %h "$D/a")" 1
	checks=$((checks + 1))
	rmdir "$M/d1/d2" 2>/dev/null && fail "rmdir of a non-empty directory"
	check "rm" rm "$M/d1/d2/big3"
	check rmdir rmdir "$M/d1/d2"
	check "rmdir in DIR" test ! -e "$D/d1/d2"
	check "rm -r" rm -r "$M/d1"
	check "rm -r in DIR" test ! -e "$D/d1"
	same "left" "$(ls -A "$M" | tr '\n' ' ')" "a big dangling sl sparse "
	stop TERM
	same "left in DIR" "$(ls -A "$D" | tr '\n' ' ')" \
		"a big dangling sl sparse "
	finish
fi

# ---- tar -----------------------------------------------------------------

# A tree with what tar must keep: modes, mtimes, symlinks (relative,
# absolute, dangling), hard links, user.* xattrs, sparse files, an empty
# file and directory, deeper levels and a few hundred small files.
make_tree() {
	src=$1
	mkdir -p "$src/dir/sub/deeper" "$src/empty-dir" "$src/many"
	head -c 200000 /dev/urandom > "$src/dir/random"
	head -c 5000000 /dev/urandom > "$src/big"
	: > "$src/empty"
	printf 'text\n' > "$src/dir/sub/deeper/leaf"
	for i in $(seq 1 300); do
		printf 'file %s\n' "$i" > "$src/many/f$i"
	done
	ln "$src/dir/random" "$src/dir/sub/hardlink"
	ln "$src/dir/random" "$src/hardlink2"
	ln -s ../random "$src/dir/sub/rel-link"
	ln -s /etc/hostname "$src/abs-link"
	ln -s does/not/exist "$src/dangling"
	truncate -s 20M "$src/sparse"
	printf 'middle' | dd of="$src/sparse" bs=1 seek=10485760 \
		conv=notrunc 2>/dev/null
	printf 'end' | dd of="$src/sparse" bs=1 seek=20971517 \
		conv=notrunc 2>/dev/null
	chmod 0600 "$src/dir/random"
	chmod 0750 "$src/dir/sub"
	chmod 4755 "$src/big"
	chmod 0444 "$src/empty"
	python3 - "$src" <<'PY'
import os, sys
s = sys.argv[1]
os.setxattr(os.path.join(s, "big"), "user.a", b"1")
os.setxattr(os.path.join(s, "big"), "user.b", b"\0binary\xff")
os.setxattr(os.path.join(s, "dir"), "user.dir", b"on a directory")
os.setxattr(os.path.join(s, "dir/random"), "user.linked", b"x" * 1000)
PY
	find "$src" -exec touch -h -d "2010-01-02 03:04:05.123456789 UTC" {} +
	touch -d "2020-05-06 07:08:09.5 UTC" "$src/big"
}

TAR="tar --format=posix --xattrs --xattrs-include=user.* --numeric-owner"

if [ "$CASE" = tar ]; then
	src=$T/src
	make_tree "$src"
	check "tar c (native)" $TAR -S -cpf "$T/src.tar" -C "$src" .
	cmpflags=--sparse
	[ "$(id -u)" -eq 0 ] && cmpflags="$cmpflags --owners"
	start $OPTS
	mkdir "$M/x" "$M/y"
	# Two extracts at once: with --queues/--threads they overlap.
	timeout 300 $TAR -xpf "$T/src.tar" -C "$M/x" &
	p1=$!
	timeout 300 $TAR -xpf "$T/src.tar" -C "$M/y" &
	p2=$!
	wait $p1 || fail "tar x onto the mount: exit $?"
	wait $p2 || fail "second tar x onto the mount: exit $?"
	checks=$((checks + 2))
	check "tree on the mount" python3 "$HERE/treecmp.py" $cmpflags \
		"$src" "$M/x"
	check "second tree on the mount" python3 "$HERE/treecmp.py" \
		$cmpflags "$src" "$M/y"
	check "tar c from the mount" $TAR -S -cpf "$T/back.tar" -C "$M/x" .
	check "tar d on the mount" $TAR -df "$T/src.tar" -C "$M/y"
	check "rm -r on the mount" rm -rf "$M/y"
	stop umount
	# What the host sees, after the unmount (writeback may hold data
	# until then).
	check "tree in DIR" python3 "$HERE/treecmp.py" $cmpflags "$src" "$D/x"
	check "nothing else in DIR" test "$(ls -A "$D")" = x
	mkdir "$T/back"
	check "tar x (native)" $TAR -xpf "$T/back.tar" -C "$T/back"
	check "tree back" python3 "$HERE/treecmp.py" $cmpflags "$src" \
		"$T/back"
	finish
fi

# ---- sigint ----------------------------------------------------------------

if [ "$CASE" = sigint ]; then
	# A stop waits for what the host kernel still has open (the
	# releases it sends after close()); 600 s: far beyond this phase.
	start $OPTS --stop-wait 600
	head -c 1000000 /dev/urandom > "$T/data"
	for i in 1 2 3 4 5; do
		check "cp $i" cp "$T/data" "$M/f$i"
	done
	ls -l "$M" > /dev/null
	# A file and a directory still open when the signal comes.
	exec 3> "$M/open"
	printf 'written before SIGINT' >&3
	exec 4< "$M"
	kill -INT "$PID"
	waiting_line
	exec 3>&- 4<&-
	reap INT
	checks=$((checks + 1))
	grep -q "left_open=0" "$T/out" ||
		fail "the stop did not wait for the releases"
	for i in 1 2 3 4 5; do
		check "f$i in DIR" cmp "$T/data" "$D/f$i"
	done
	same "open file" "$(cat "$D/open")" "written before SIGINT"

	# A second signal stops at once; the bridge closes what is open.
	start $OPTS
	exec 3> "$M/open2"
	printf 'written before two SIGINTs' >&3
	kill -INT "$PID"
	waiting_line
	kill -INT "$PID"
	reap "a second INT"
	exec 3>&-
	checks=$((checks + 1))
	grep -q "left_open=1" "$T/out" ||
		fail "the file open at the second signal was not closed by it"
	same "open2 file" "$(cat "$D/open2")" "written before two SIGINTs"
	finish
fi

# ---- coherent -----------------------------------------------------------------

# eventually DESC SHELL-TEST: holds within 2 s (inotify is asynchronous,
# so the version table learns of a host edit a moment after it is made).
eventually() {
	checks=$((checks + 1))
	i=0
	while [ $i -lt 100 ]; do
		sh -c "$2" && return 0
		sleep 0.02
		i=$((i + 1))
	done
	fail "$1: never true: $2"
}

if [ "$CASE" = coherent ]; then
	start $OPTS
	echo one > "$M/f"
	mkdir "$M/d"
	check "cached: ls -l" ls -l "$M"
	check "cached: stat" stat "$M/f" "$M/d"
	check "cached: no such name" sh -c "! test -e '$M/new'"
	echo two >> "$D/f"
	chmod 600 "$D/f"
	mv "$D/d" "$D/e"
	echo three > "$D/new"
	eventually "size" "test \"\$(stat -c %s '$M/f')\" = 8"
	eventually "mode" "test \"\$(stat -c %a '$M/f')\" = 600"
	eventually "renamed away" "test ! -e '$M/d'"
	eventually "renamed to" "test -d '$M/e'"
	eventually "created" "test \"\$(cat '$M/new')\" = three"
	same "content" "$(cat "$M/f")" "one
two"
	rm "$D/new"
	eventually "removed" "test ! -e '$M/new'"
	stop TERM
	finish
fi

# ---- posix: the multi-user suite ---------------------------------------------

if [ "$CASE" = posix ]; then
	[ "$(id -u)" -eq 0 ] || skip "the multi-user suite needs root"
	P=${VQF_POSIX:?posix needs VQF_POSIX=path/to/vqf-posix}
	# Other users must reach the mount through $T.
	chmod 755 "$T"
	start $OPTS
	checks=$((checks + 1))
	timeout 1800 "$P" users "$M/users" > "$T/users" 2>&1
	rc=$?
	sed 's/^/  /' "$T/users"
	if [ $rc -ne 0 ] && [ -n "$DAEMON" ] && [ -n "${VQF_POSIX_SKIP:-}" ]
	then
		# With a daemon: the cases $VQF_POSIX_SKIP names may fail
		# (docs/connect.md says why), nothing else.  Exit 1: cases
		# failed, the run itself completed.
		if [ $rc -ne 1 ] ||
		   ! grep -q '^ *# vqf-posix-users: ' "$T/users"; then
			fail "vqf-posix users: exit $rc"
		fi
		# shellcheck disable=SC2013 # case names are words
		for c in $(sed -n 's/^ *not ok [0-9]* //p' "$T/users"); do
			case " $VQF_POSIX_SKIP " in
			*" $c "*) echo "  (expected against $DAEMON: $c)" ;;
			*) fail "vqf-posix users: $c" ;;
			esac
		done
	elif [ $rc -ne 0 ]; then
		fail "vqf-posix users: exit $rc"
	fi
	# Nothing unlinked stays open in the server (FORGET came).
	if [ -n "$DAEMON" ]; then
		# The daemon's processes: paths are its sandbox's, and
		# the guest RAM it maps is a deleted memfd.
		held=0
		for p in $(vqf_daemon_tree "$VQF_DAEMON_PID"); do
			n=$(ls -l "/proc/$p/fd" 2>/dev/null |
				grep -v 'memfd:' | grep -c '(deleted)')
			held=$((held + n))
		done
	else
		held=$(ls -l "/proc/$PID/fd" 2>/dev/null | grep -F "$D/" |
			grep -c '(deleted)')
	fi
	same "deleted files of DIR the server holds open" "$held" 0
	stop TERM
	finish
fi

echo "unknown case '$CASE'"
exit 1
