#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-confine.sh VQFUSE_SIM - the daemon's confinement as /proc shows it
# (docs/virtiofsd-compat.md), per sandbox mode: namespace (the default),
# chroot and none.  For each: the serving process's root (its mount table:
# a read-only tmpfs, the shared directory, /proc; nothing of the host's
# file system reachable through /proc/PID/root), its namespaces against
# ours, "Seccomp: 2" and "NoNewPrivs: 1" on every thread, CapEff and
# CapBnd as documented, the start line naming it all; then it serves a
# front-end (a python3 client: GET_FEATURES, GET_QUEUE_NUM, hang-up) and
# exits 0 with its socket removed.  SIGTERM to the parent outside the
# sandbox stops the child.  A directory the caller left open is not
# among the serving process's descriptors.  As root, an unprivileged
# start (uid 65534, setpriv) runs in a user namespace with --uid-map and
# serves as well.
# Needs root and python3 (skipped without them).
set -u
SIM=${1:?usage: test-confine.sh path/to/vqfuse-sim}
if [ "$(id -u)" != 0 ] || ! command -v python3 >/dev/null; then
	echo "SKIP: needs root and python3"
	exit 0
fi
# shellcheck source=tests/vhost/vu-cli-lib.sh
. "$(dirname "$0")/vu-cli-lib.sh"
vu_tmp vqf-confine
chmod 0755 "$T"
mkdir "$T/shared"
echo data >"$T/shared/f"
SH=$(realpath "$T/shared")
S=$T/vfs.sock
# chown, dac_override, fowner, fsetid, setgid, setuid, mknod, setfcap
CAPS=00000000880000db

# start ARGS...: the daemon on $S in the background ($pid), once it has
# said it listens; $cpid is the process that serves.  It inherits a
# descriptor of $T, outside the shared directory (see inherited).
start() {
	vu_start listening ${AS:-} "$SIM" vhost-user --socket "$S" \
		--shared "$SH" "$@" 7<"$T"
	cpid=$pid
	# the serving process is the innermost descendant
	while c=$(pgrep -P "$cpid" | head -n 1) && [ -n "$c" ]; do
		cpid=$c
	done
}

# serve DESC: a front-end's first messages, then its hang-up
serve() {
	vu_hello "$1" 2
	grep -q "front-end disconnected" "$T/log" ||
		fail "$1: disconnect not reported"
}

# threads DESC: seccomp filter mode and NoNewPrivs on every thread
threads() {
	n=0
	for st in /proc/"$cpid"/task/*/status; do
		n=$((n + 1))
		grep -q "^Seccomp:[[:space:]]*2$" "$st" ||
			fail "$1: $st: $(grep ^Seccomp: "$st")"
		grep -q "^NoNewPrivs:[[:space:]]*1$" "$st" ||
			fail "$1: $st: not NoNewPrivs"
	done
	[ $n -ge 1 ] || fail "$1: no threads of $cpid"
}

# ns DESC SAME DIFFERENT: namespaces of $cpid equal to ours or not
ns() {
	desc=$1 same=$2 diff=$3
	for n in $same; do
		[ "$(readlink /proc/$cpid/ns/$n)" = "$(readlink /proc/self/ns/$n)" ] ||
			fail "$desc: $n namespace is not ours"
	done
	for n in $diff; do
		[ "$(readlink /proc/$cpid/ns/$n)" != "$(readlink /proc/self/ns/$n)" ] ||
			fail "$desc: $n namespace is ours"
	done
}

# root DESC: the serving process's view of the file system
sandboxed_root() {
	r=/proc/$cpid/root
	[ -e "$r$SH/f" ] || fail "$1: the shared directory is not in its root"
	[ -e "$r/etc" ] && fail "$1: the host's /etc is in its root"
	ls "$r/proc" | grep -q '^[0-9]' || fail "$1: no /proc in its root"
	[ -e "$r/proc/sys" ] && fail "$1: /proc/sys is in its root"
	want=$(printf '%s\n' proc "$(echo "$SH" | cut -d/ -f2)" | sort |
	       tr '\n' ' ')
	[ "$(ls "$r" | tr '\n' ' ')" = "$want" ] ||
		fail "$1: its root holds $(ls "$r" | tr '\n' ' ')"
	grep -q " / / [^-]*ro[, ].* - tmpfs vqfuse-root" \
		/proc/$cpid/mountinfo ||
		fail "$1: the root is no read-only tmpfs"
}

# inherited DESC: the directory start() left open is not among the
# serving process's descriptors (an openat() from it reaches past the
# root, and past Landlock where the kernel lacks it)
inherited() {
	for f in /proc/"$cpid"/fd/*; do
		[ "$f" -ef "$T" ] && fail "$1: $f, inherited, is the host's $T"
	done
}

# caps DESC [MASK]: CapEff, CapPrm and CapBnd of the serving process are
# MASK (default $CAPS): nothing beyond the listed capabilities
caps() {
	for c in CapEff CapPrm CapBnd; do
		v=$(awk "/^$c:/ { print \$2 }" /proc/$cpid/status)
		[ "$v" = "${2:-$CAPS}" ] ||
			fail "$1: $c $v, not ${2:-$CAPS}"
	done
}

# --- namespace (the default) ---
start --queues 1
d="namespace"
[ "$cpid" != "$pid" ] || fail "$d: no child serves"
threads "$d"
ns "$d" "user" "mnt pid net ipc uts"
sandboxed_root "$d"
inherited "$d"
caps "$d"
[ "$(wc -l </proc/$cpid/mountinfo)" = 3 ] ||
	fail "$d: $(wc -l </proc/$cpid/mountinfo) mounts, not 3"
grep -q "confined: sandbox namespace (mount, pid, net, ipc, uts); root a read-only tmpfs.*seccomp kill ([0-9]* syscalls allowed); capabilities chown, dac_override, fowner, fsetid, setgid, setuid, mknod, setfcap; \(Landlock ABI [0-9]\|no Landlock\)" \
	"$T/log" || { fail "$d: start line"; sed 's/^/  | /' "$T/log"; }
serve "$d"

# SIGTERM to the parent outside reaches the child
start --queues 1
vu_stop "namespace, SIGTERM"

# --- chroot ---
start --queues 1 --sandbox=chroot --seccomp=log
d="chroot"
[ "$cpid" != "$pid" ] || fail "$d: no child serves"
threads "$d"
ns "$d" "user pid net ipc uts" "mnt"
sandboxed_root "$d"
# the host's pids: only its own is in its /proc (another's /proc/PID/root
# would lead out of the root)
[ "$(ls /proc/$cpid/root/proc | tr '\n' ' ')" = "$cpid self " ] ||
	fail "$d: its /proc lists $(ls /proc/$cpid/root/proc | tr '\n' ' ')"
[ -e /proc/$cpid/root/proc/self/fd/0 ] ||
	fail "$d: no /proc/self/fd in its root"
inherited "$d"
caps "$d"
grep -q "confined: sandbox chroot (mount); .*seccomp log" "$T/log" ||
	fail "$d: start line"
serve "$d"

# --- none, --readonly, --modcaps ---
start --queues 1 --sandbox=none --seccomp=trap --readonly \
	--modcaps=-mknod:+sys_nice
d="none"
[ "$cpid" = "$pid" ] || fail "$d: a child serves"
threads "$d"
ns "$d" "user mnt pid net ipc uts" ""
[ -e /proc/$cpid/root/etc ] || fail "$d: not the host's root"
inherited "$d"
caps "$d --modcaps" 00000000808000db
grep -q "confined: sandbox none; .*seccomp trap.*capabilities chown, dac_override, fowner, fsetid, setgid, setuid, sys_nice, setfcap.*read-only" \
	"$T/log" || { fail "$d: start line"; sed 's/^/  | /' "$T/log"; }
serve "$d"

# --- unprivileged: a user namespace, --uid-map ---
if command -v setpriv >/dev/null; then
	chown -R 65534:65534 "$T/shared"
	chmod 0777 "$T"
	for map in "" "--uid-map=:0:65534:1: --gid-map=:0:65534:1:"; do
		d="unprivileged ${map:-default map}"
		# shellcheck disable=SC2086
		AS="setpriv --reuid=65534 --regid=65534 --clear-groups" \
			start --queues 1 $map
		threads "$d"
		ns "$d" "" "user mnt pid net ipc uts"
		sandboxed_root "$d"
		inherited "$d"
		caps "$d"
		[ "$(awk '{ print $1, $2, $3 }' /proc/$cpid/uid_map)" = \
			"0 65534 1" ] ||
			fail "$d: uid_map $(cat /proc/$cpid/uid_map)"
		grep -q "uts, user)" "$T/log" || fail "$d: start line"
		serve "$d"
	done
else
	echo "SKIP: no setpriv, unprivileged case not run"
fi

vu_result
