#!/bin/sh
# Two QEMU guests on one `vqfuse-sim vhost-user --guests 2` (issue 17): the
# ctest entry qemu-vqfuse-guests.
#
#   [VQF_GUESTS_DAX=1 [VQF_GUESTS_FS=virtiofs]] run-guests.sh BINDIR
#
# VQF_GUESTS_FS=virtiofs (with DAX only; qemu-virtiofs-guests-daxmatrix):
# both guests run the kernel's own virtiofs and fuse.ko, mounted with
# dax=always; no table, so the sessions never, always and auto (no
# shared), and no request counts (the in-tree driver has no counters):
# the answers are judged by the same rules, and the daemon's log must
# show A's window mapping and no READ from A.
#
# Guests A and B (2 vCPUs each, TCG, the patched QEMU) boot at once, each
# on its own socket of one daemon, and take commands from the host over
# their serial consoles (guest-lib.sh's vqf_g_serve).  Per cache mode,
# the host and guest B each make the seven changes of test_e2e_shared's
# matrix to names A has looked at (create, unlink, rename, chmod 600,
# truncate to 3 bytes, an in-place write, setxattr), and A looks again:
# size, mode, ctime (to the nanosecond) and content of each name, against
# the host's, and the FUSE requests its stat sent (vqfuse.ko's debugfs).
# Sessions (one daemon each):
#
#   never   A: mode none (version_table=0): the truth, by round trips
#   always  A: mode always (version_table=0): the stale answer, no request
#           (a name absent before is looked up: ENOENT is not cached)
#   auto    A: mode auto (version_table=0): the truth once the 1 s
#           timeouts ran out; then mode shared (A uses the table): the
#           truth with one or two requests per name, then none, also 2 s
#           later, past every timeout
#
# A mounts read-write with noatime, as a user would: with relatime every
# read marks atime stale, and the next stat is a GETATTR in every mode
# (patch 0014 spares a noatime mount that).
#
# VQF_GUESTS_DAX=1 (issue 27; the ctest entries qemu-vqfuse-guests-daxmatrix
# and -6.12-vqf): the same matrix with DAX on.  The daemon gets
# --dax-window 64M (each guest its own window, one copy of the data: every
# window maps the host's page cache), both guests mount with dax=always
# added to their options, and the work folder is guests-dax-matrix (so it
# runs beside qemu-vqfuse-guests-dax).  A's reads of content then go
# through its window; the run fails unless A's window served SETUPMAPPINGs
# in every phase (fuse.ko's counters at A's unmount) and in every session
# (the daemon's dax: line for guest 0), and A sent no FUSE READ at all, so
# that it cannot pass with DAX silently off.  The answers and request
# counts are those above, except two rules DAX changes on purpose (judge,
# expect): under always, content is read through the window, so it is the
# host's bytes now, while size, mode and ctime stay the stale ones; under
# shared, a name found gone may cost one request more (its evicted inode's
# REMOVEMAPPING); and under shared, the file B overwrote in place costs A
# one GETATTR on every look, because B's window keeps it mapped writable:
# B's stores change its bytes, mtime and ctime behind the server's back,
# so the daemon keeps its slot moving (vqf_hub_dax_writable()) and A sees
# the new ctime, as after write(2) on a local file system.
#
# Fails on: a wrong answer, a request count off the rules above, a guest
# that does not answer, anything vqf_scan_console flags, a daemon that
# refused messages or requests or did not see both front-ends go; with
# VQF_GUESTS_DAX=1 also on a window that served no SETUPMAPPING or a READ
# from A.
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
. "$VQF_QEMU_SRC/qemu-lib.sh"
vqf_once_more "$0" "$@"
. "$VQF_QEMU_SRC/guests-lib.sh"

FS=${VQF_GUESTS_FS:-vqfuse}
case $FS:${VQF_GUESTS_DAX:-0} in
vqfuse:*|virtiofs:1) ;;
# Without DAX the in-tree fuse.ko's reads mark atime stale even on a
# noatime mount (what patch 0014 changes), so its next stat is a GETATTR
# and cache=always's rule (stale attributes) does not hold: not a run.
virtiofs:*) vqf_die "VQF_GUESTS_FS=virtiofs needs VQF_GUESTS_DAX=1" ;;
*) vqf_die "VQF_GUESTS_FS=$FS: vqfuse or virtiofs" ;;
esac
g_require "$FS"
UMOUNT=vqf_g_umount
[ $FS = virtiofs ] && UMOUNT='umount $MNT && vqf_fs_unload virtiofs'
VQF_QEMU_MEM=512M
VQF_QEMU_SMP=2
# Steps are bounded by QEMU's own timeout (and this count of 0.1 s waits).
WAIT=${VQF_GUESTS_WAIT:-6000}

DAX=${VQF_GUESTS_DAX:-0}
W=$VQF_QEMU_BIN/work/guests${VQF_WORK_TAG:-}
NAME=qemu-vqfuse-guests
DAXARGS=
if [ "$DAX" = 1 ]; then
	W=$VQF_QEMU_BIN/work/guests-dax-matrix${VQF_WORK_TAG:-}
	NAME=qemu-vqfuse-guests-daxmatrix
	DAXARGS='--dax-window 64M'
fi
if [ $FS = virtiofs ]; then
	W=$W-virtiofs
	NAME=$(echo $NAME | sed 's/vqfuse/virtiofs/')
fi
rm -rf "$W"
mkdir -p "$W"
start=$(date +%s)
bad=0
flag()
{
	echo "FAIL: $*"
	bad=1
}

vqf_mkinitramfs "$W"
vqf_add_run_script "$W" 'vqf_g_serve'

# val NAME [VIEW] / sent NAME [VIEW]: from a look (A's vqf_g_look or the
# host's hview; default OUT, A's last look).
val()
{
	v=$(echo " ${2-$OUT} " | sed -n "s/.* $1=\([^ ]*\) .*/\1/p")
	echo "${v%/*}"
}
sent()
{
	v=$(echo " ${2-$OUT} " | sed -n "s/.* $1=\([^ ]*\) .*/\1/p")
	echo "${v##*/}"
}

# hview NAME...: the host's view of each name, as vqf_g_look prints it.
hview()
{
	for f; do
		p=$S/shared/g/$f
		if [ -e "$p" ]; then
			printf '%s=%s:%s/- ' "$f" \
				"$(TZ=UTC stat -c %s:%a:%z "$p" | tr ' ' _)" \
				"$(cat "$p")"
		else
			printf '%s=none/- ' "$f"
		fi
	done
}

KINDS='create unlink name chmod truncate write setxattr'

# change b|h KIND NAME: guest B's or the host's change.
change()
{
	if [ $1 = b ]; then
		g_cmd b "vqf_g_change $2 $3" || flag "$sess/$m: B's $2 failed"
		return
	fi
	h=$S/shared/g/$3
	case $2 in
	create) printf 0123456789 >"$h" ;;
	unlink) rm "$h" ;;
	name) mv "$h" "$h.new" ;;
	chmod) chmod 600 "$h" ;;
	truncate) truncate -s 3 "$h" ;;
	write) printf abcdefghij | dd of="$h" conv=notrunc 2>/dev/null ;;
	setxattr) "$VQF_QEMU_BIN/vqf-cohere" setxattr "$h" user.k v ;;
	esac || flag "$sess/$m: the host's $2 failed"
}

# judge NAME RULE: A's last look (OUT) at NAME against RULE.  RULE truth:
# the host's view after the changes (TRUTH); stale: what A saw before them
# (BEFORE), except a name that was absent then: the daemon answers ENOENT,
# which is never cached without the table, so A looks it up and finds it
# (and the old name of a rename may show the inode as that lookup of the
# new name refreshed it: one inode, two names).
# With DAX, stale is what A saw before in size, mode and ctime only: A
# reads content through its window, which maps the host's page cache (one
# copy of the data, no page cache of A's to go stale), so the content is
# the host's now (a truncated file: the bytes left, then zeros up to the
# size A still believes, which read -r drops), as a local file system
# gives it; cache=always keeps only the attributes.  A name gone on the
# host keeps its content: A's open inode is the unlinked or renamed file.
# Sets v (what A saw) and want; 0 when v is right, 1 when wrong.
judge()
{
	v=$(val "$1")
	b=$(val "$1" "$BEFORE")
	want=$(val "$1" "$TRUTH")
	alt=$want
	[ $2 = stale ] && [ "$b" != none ] && alt=$b &&
		if [ $DAX = 1 ] && [ "$want" != none ]; then
			alt=${b%:*}:${want##*:}
		fi && want=$alt
	case $2:$1 in
	# a renamed name's inode, refreshed by A's LOOKUP of the new name,
	# shows through the stale old name too
	stale:*-name-?) alt=$(val "$1.new" "$TRUTH") ;;
	esac
	[ "$v" = "$want" ] || [ "$v" = "$alt" ] && return 0
	return 1
}

# expect LABEL RULE: judges A's last look name by name (judge).
# CHECK_SENT judges the requests each name's stat sent: some (none's
# round trips), first (shared: 1-2 over the looks in SUM, one
# revalidation, plus a LOOKUP after a name is found gone; with DAX up to
# 3 for such a name: its inode, evicted during that stat, gives back the
# window range A's look mapped, one REMOVEMAPPING, as upstream's eviction
# does), zero (with DAX, 1 for the file B's window maps writable: its
# slot proves nothing while B can store into it), or stale (always: 0, 1
# for a name absent before).
expect()
{
	for f in $names; do
		judge "$f" $2
		r=$?
		if [ $r != 0 ]; then
			flag "$sess/$m $1: $f is '$v', not '$want'"
		fi
		n=$(sent "$f")
		# the kernel's own virtiofs has no request counters
		cs=${CHECK_SENT:-}
		[ $FS = virtiofs ] && cs=
		case $cs in
		some) [ "$n" -ge 1 ] ||
			flag "$sess/$m $1: $f's stat sent no request" ;;
		first) n=$(sent "$f" "$SUM")
		       hi=2
		       [ $DAX = 1 ] && [ "$b" != none ] && [ "$want" = none ] &&
				hi=3
		       [ "$n" -ge 1 ] && [ "$n" -le $hi ] ||
			flag "$sess/$m $1: $f's stats sent $n requests, not 1-$hi" ;;
		zero) w=0
		      [ $DAX = 1 ] && [ "${f%-write-b}" != "$f" ] && w=1
		      [ "$n" = $w ] ||
			flag "$sess/$m $1: $f's stat sent $n requests, not $w" ;;
		stale) w=0
		       [ "$b" = none ] && [ $1 = look1 ] && w=1
		       [ "$n" = $w ] ||
			flag "$sess/$m $1: $f's stat sent $n requests, not $w" ;;
		esac
	done
}

# addsent: SUM gets the requests of A's last look added, name by name.
addsent()
{
	t=
	for f in $names; do
		t="$t $f=-/$(($(sent "$f" "$SUM") + $(sent "$f")))"
	done
	SUM="$t "
}

# gmount G OPTS [PARAM=VALUE...]: guest G loads vqfuse.ko with those
# parameters and mounts it with the mount options OPTS (comma-separated,
# may be empty), plus dax=always with DAX.  vqf_g_mount takes one option
# and checks it as one string of /proc/mounts; noatime (a mount flag,
# listed first) and dax=always (listed last) never stand side by side
# there, so two options are mounted here, each checked on its own, then
# debugfs and the table-slots line as vqf_g_mount gives them.
gmount()
{
	mg=$1 mo=$2
	shift 2
	[ $DAX = 1 ] && mo=${mo:+$mo,}dax=always
	if [ $FS = virtiofs ]; then
		# the kernel's own virtiofs and fuse: no table, no debugfs
		g_cmd $mg "vqf_fs_load virtiofs && mount -t virtiofs ${mo:+-o $mo} \"\$VQF_TAG\" \"\$MNT\" && r=0 && for x in $(echo $mo | tr , ' '); do grep -q \" \$MNT .*[ ,]\$x[ ,]\" /proc/mounts || { echo \"# mounted without \$x\"; r=1; }; done && if [ \$r = 1 ]; then umount \"\$MNT\"; false; fi && echo table-slots=0"
		return
	fi
	case $mo in
	*,*) ;;
	*) g_cmd $mg "vqf_g_mount ${mo:+-o $mo} $*"
	   return ;;
	esac
	g_cmd $mg "vqf_fs_load vqfuse $* && mount -t vqfuse -o $mo \"\$VQF_TAG\" \"\$MNT\" && r=0 && for x in $(echo $mo | tr , ' '); do grep -q \" \$MNT .*[ ,]\$x[ ,]\" /proc/mounts || { echo \"# mounted without \$x\"; r=1; }; done && if [ \$r = 1 ]; then umount \"\$MNT\"; false; fi && { grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs none /sys/kernel/debug; } && echo table-slots=\$(sed -n 's/^slots //p' /sys/kernel/debug/vqfuse/*/version)"
}

# phase MODE: A mounts (the table used only for shared), looks at its
# names, the host and then guest B change them, A looks again.
phase()
{
	m=$1
	names=
	for c in b h; do
		for k in $KINDS; do
			f=$m-$k-$c
			names="$names $f"
			[ $k = name ] && names="$names $f.new"
			[ $k = create ] && continue
			printf 0123456789 >"$S/shared/g/$f"
			chmod 644 "$S/shared/g/$f"
		done
	done
	HBEFORE=$(hview $names)
	p=version_table=0
	[ $m = shared ] || [ $FS = virtiofs ] && p=
	gmount a noatime $p || return 1
	case $m in
	shared) echo "$OUT" | grep -q 'table-slots=[1-9]' ||
			flag "$sess/$m: A has no version table" ;;
	*) echo "$OUT" | grep -q 'table-slots=0' ||
			flag "$sess/$m: A uses the version table" ;;
	esac
	g_cmd a "vqf_g_look$names"
	BEFORE=$OUT
	# the host's view and A's first agree (ctime to the nanosecond)
	TRUTH=$HBEFORE expect look0 truth
	# the host's changes first: B's console round trips give the
	# daemon's watcher time to put them in the table
	for k in $KINDS; do
		change h $k $m-$k-h
	done
	for k in $KINDS; do
		change b $k $m-$k-b
	done
	TRUTH=$(hview $names)
	for f in $names; do
		[ "$(val "$f" "$TRUTH")" != "$(val "$f" "$HBEFORE")" ] ||
			flag "$sess/$m: the change of $f does not show on the host"
	done
	g_cmd a "vqf_g_look$names"
	case $m in
	none) CHECK_SENT=some expect look1 truth ;;
	always) CHECK_SENT=stale expect look1 stale ;;
	shared)
		# B's changes are in the table before B's reply; the host's
		# once the daemon's watcher saw them: look until they are.
		SUM=
		addsent
		# (not i: g_cmd's wait counts with it)
		try=0
		while [ $try -lt 100 ]; do
			ok=1
			for f in $names; do
				judge "$f" truth || ok=0
			done
			[ $ok = 1 ] && break
			try=$((try + 1))
			g_cmd a "vqf_g_look$names"
			addsent
		done
		echo "$sess/$m: the host's changes seen after $try more looks"
		CHECK_SENT=first expect look1 truth ;;
	esac
	g_cmd a "vqf_g_look$names"
	case $m in
	none) CHECK_SENT=some expect look2 truth ;;
	always) CHECK_SENT=stale expect look2 stale ;;
	shared)
		CHECK_SENT=zero expect look2 truth
		# past every timeout, still no round trip (auto's look3 has one)
		g_cmd a "sleep 2; vqf_g_look$names"
		CHECK_SENT=zero expect look3 truth ;;
	auto)
		g_cmd a "sleep 2; vqf_g_look$names"
		expect look3 truth ;;
	esac
	[ $FS = vqfuse ] && g_cmd a "cat /sys/kernel/debug/vqfuse/*/version"
	g_cmd a "$UMOUNT" || flag "$sess/$m: A's unmount or rmmod failed"
	# the in-tree fuse.ko logs no window counters: the daemon's (session)
	[ $DAX = 1 ] && [ $FS = vqfuse ] || return 0
	# fuse.ko logs its window's counters when the connection ends (fs/fuse
	# 0005): one more such line than after A's last phase, and setups in
	# it, or A read without its window
	g_cmd a "dmesg | grep -c 'fuse: dax: [0-9]* ranges'; dmesg | grep 'fuse: dax: [0-9]* ranges' | tail -n 1 | sed 's/^[^]]*] //'"
	n=${OUT%% *}
	[ "$n" = $((adax + 1)) ] && echo " $OUT " | grep -q ' setups=[1-9]' ||
		flag "$sess/$m: A's window served no SETUPMAPPING (fuse.ko: '$OUT')"
	adax=$n
}

# session NAME CACHE MODE...: one daemon, both guests, A's modes in turn.
session()
{
	sess=$1 cache=$2
	shift 2
	S=$W/$sess
	mkdir -p "$S/shared/g"
	g_daemon --cache "$cache" $DAXARGS
	adax=0
	g_start a "$S/vfs.sock.0"
	g_start b "$S/vfs.sock.1"
	if g_wait a '^VQF-READY' && g_wait b '^VQF-READY'; then
		if gmount b ''; then
			for mode; do
				phase "$mode"
			done
			g_cmd b "$UMOUNT" || flag "$sess: B's unmount failed"
		fi
	else
		flag "$sess: a guest did not boot"
	fi
	g_end
	for g in a b; do
		vqf_scan_console "$S/$g.txt" &&
			grep -q '^VQF-GUEST-EXIT rc=0' "$S/$g.txt" ||
			flag "$sess: guest $g's console (above) or exit"
		sed "s/^/$g: QEMU: /" "$S/$g.err"
	done
	grep -v '^vhost-user: ' "$S/daemon.log" | grep -E 'guest|hub:|refused'
	[ "$(grep -c 'front-end disconnected' "$S/daemon.log")" = 2 ] ||
		flag "$sess: the daemon did not see both front-ends go"
	grep -q 'hub: 2 guests' "$S/daemon.log" ||
		flag "$sess: the daemon did not serve 2 guests through one hub"
	[ "$(grep -c ' messages, 0 refused' "$S/daemon.log")" = 2 ] ||
		flag "$sess: the daemon refused vhost-user messages"
	[ "$(grep -c ' 0 refused, 0 queue breaks' "$S/daemon.log")" = 2 ] ||
		flag "$sess: the daemon refused requests or saw a ring broken"
	vqf_daemon_confined "$S/daemon.log" namespace ||
		flag "$sess: the daemon's confinement (above)"
	[ $DAX = 1 ] || return 0
	# guest 0 is A (vfs.sock.0): its window mapped ranges, and no content
	# of A's came by FUSE READ
	ga=$(sed -n '/: guest 0:$/,/: guest 1:$/p' "$S/daemon.log")
	echo "$ga" | grep -E 'by opcode|dax:'
	echo "$ga" | grep -q ': dax: [1-9][0-9]* setups' ||
		flag "$sess: A's window served no SETUPMAPPING (the daemon's log)"
	echo "$ga" | grep -q 'requests by opcode: READ=0 ' ||
		flag "$sess: A sent FUSE READs: content not through its window"
}

session never never none
session always always always
if [ $FS = vqfuse ]; then
	session auto auto auto shared
else
	session auto auto auto
fi
end=$(date +%s)
echo "$NAME: $((end - start)) s"
[ $bad = 0 ] && rm -rf "$W"/*/shared
vqf_stale_exit $bad "$W"/*/*.txt
exit $bad
