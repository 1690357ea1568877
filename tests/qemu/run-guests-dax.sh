#!/bin/sh
# Two QEMU guests with DAX windows on one `vqfuse-sim vhost-user --guests 2
# --dax-window 64M` (issue 27): the ctest entries qemu-vqfuse-guests-dax
# and, with VQF_GUESTS_FS=virtiofs, qemu-virtiofs-guests-dax.
#
#   [VQF_GUESTS_FS=vqfuse|virtiofs] run-guests-dax.sh BINDIR
#
# vqfuse (default): vqfuse.ko and the patched fuse.ko with the version
# table.  virtiofs: the kernel's own virtiofs and fuse, mounted
# -o dax=always, no table (the same rows; a guest learns a new size when
# its attributes time out, 1 s, rather than at its next stat).
#
# Guests A and B (2 vCPUs each, TCG, the patched QEMU, vqfuse.ko and the
# patched fuse.ko) mount the shared directory with -o dax=always: each
# has its own window (shm region 0 of its device) beside the one version
# table, and every window maps the host's file, so a page of data exists
# once, in the host's page cache.  The host drives both over their serial
# consoles (guests-lib.sh); vqf-cohere makes the loads and stores.  Rows:
#
#   store   B maps w and loads 12 bytes at 4096; A stores a string there
#           through its own MAP_SHARED mapping, then write()s another at
#           8192; B's same mapping (no new open, map or request) loads
#           both
#   counter A and B each add 1 to the u64 at offset 0 of c 100000 times
#           with a locked add through MAP_SHARED mappings, starting
#           together (a start line in the same page): c holds 200000
#   trunc   B maps 16 pages of t (page i full of 'A' + i); A truncates t
#           to 4096 + 100 bytes; B's loads through its mapping: pages 0
#           and 1 as before, the rest of page 1 zeros, pages 2-15 zeros
#           or SIGBUS, never the old bytes; both QEMUs keep running
#   regrow  B maps 16 pages of r and A truncates it as t; B loads every
#           page (QEMU replaces those past the end); A writes 'Z' at page
#           5, growing r over pages 2-5; B's same mapping loads pages 0-1
#           as before, 2-4 zeros, 'Z' in page 5 (the daemon mapped the
#           grown pages again: without that, B's replaced page reads 0)
#   host    A and B map 16 pages of h; the host truncates h the same way;
#           the same loads in both
#   learnt  (trunc and host) once the guest's kernel has the new size
#           (its stat: 4196), the same process's loads past the end get
#           SIGBUS, as on a local file system; page 1 (the end's) stays;
#           read() gives the 4196 bytes left, no more
#

# Fails on: a wrong byte or count, a guest that does not answer or whose
# QEMU ends other than by quit, anything vqf_scan_console flags (Oops,
# WARNING, ...), a daemon that refused messages or requests, a guest's
# window that served no SETUPMAPPING, a daemon that did not see the
# truncations (its windows: line).
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
. "$VQF_QEMU_SRC/qemu-lib.sh"
vqf_once_more "$0" "$@"
. "$VQF_QEMU_SRC/guests-lib.sh"

FS=${VQF_GUESTS_FS:-vqfuse}
case $FS in
vqfuse)
	NAME=qemu-vqfuse-guests-dax
	MOUNT='vqf_g_mount -o dax=always'
	UMOUNT=vqf_g_umount
	# the table brings the new size with the next stat
	LEARN= ;;
virtiofs)
	NAME=qemu-virtiofs-guests-dax
	MOUNT=vqf_dax_mount
	UMOUNT='umount $MNT && vqf_fs_unload virtiofs'
	# no table: the size is the attribute's, cached for the daemon's
	# 1 s (cache auto), by the guest's own clock
	LEARN='sleep 2; ' ;;
*)
	vqf_die "VQF_GUESTS_FS=$FS: vqfuse or virtiofs" ;;
esac
g_require "$FS"
VQF_QEMU_MEM=512M
# two vCPUs: QEMU's TCG makes a guest's locked add a host atomic only
# when it runs vCPUs in parallel
VQF_QEMU_SMP=2
WAIT=${VQF_GUESTS_WAIT:-6000}
N=${VQF_DAX_COUNT:-100000}

W=$VQF_QEMU_BIN/work/guests-dax-$FS${VQF_WORK_TAG:-}
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

# field NAME: the value of NAME=... in OUT
field()
{
	echo " $OUT " | sed -n "s/.* $1=\([^ ]*\) .*/\1/p"
}

# bg G NAME COMMAND [ARG]: COMMAND /tmp/NAME.go [ARG] runs in guest G's
# background, its output in /tmp/NAME.out; until_out G PATTERN NAME: waits
# for PATTERN in it (the guest's loop is bounded by the host's WAIT).
bg()
{
	g_cmd $1 "rm -f /tmp/$2.go /tmp/$2.go2; ($3 /tmp/$2.go ${4:-} >/tmp/$2.out 2>&1 &)" ||
		flag "$sess: $1 could not start $2"
}
until_out()
{
	g_cmd $1 "i=0; until grep -q '$2' /tmp/$3.out; do i=\$((i + 1)); [ \$i -lt $WAIT ] || break; sleep 0.1; done; cat /tmp/$3.out"
}

# pattern FILE: 16 pages, page i full of the letter 'A' + i
pattern()
{
	for l in A B C D E F G H I J K L M N O P; do
		head -c 4096 /dev/zero | tr '\0' "$l"
	done >"$1"
}

# check_trunc G NAME: G's loads after the truncation to 4096 + 100
check_trunc()
{
	until_out $1 tail= $2
	before=$(field before) after=$(field after) tail=$(field tail)
	[ "$before" = ABCDEFGHIJKLMNOP ] ||
		flag "$sess/$2: $1's loads before the truncation: '$before'"
	case $after in
	AB*) ;;
	*) flag "$sess/$2: $1's loads inside the new end: '$after'" ;;
	esac
	rest=${after#AB}
	[ ${#rest} = 14 ] && [ -z "$(echo "$rest" | tr -d '0S')" ] ||
		flag "$sess/$2: $1's loads past the new end: '$rest', not 0 or S"
	[ "$tail" = 00 ] ||
		flag "$sess/$2: $1's page 1 past the end: '$tail', not zeros"
}

# learnt G NAME ROW: once G's kernel has the new size (G's stat reads the
# bumped slot), its process's next loads past the end get SIGBUS, as on
# a local file system: the size change takes the page table entries
# past the end away (truncate_pagecache) and a fault past i_size is
# SIGBUS (dax_iomap_fault).  Page 1, which holds the end, stays mapped.
learnt()
{
	g_cmd $1 "${LEARN}stat -c %s $G/$2"
	[ "$OUT" = 4196 ] || flag "$sess/$3: $1's stat gives '$OUT', not 4196"
	g_cmd $1 "touch /tmp/$2.go2"
	until_out $1 again= $2
	[ "$(field again)" = ABSSSSSSSSSSSSSS ] ||
		flag "$sess/$3: $1's loads once it has the new size: '$(field again)', not AB and SIGBUS past the end"
	# read(): ends at the new end (cat, not wc -c, which may fstat),
	# page 0 all A, then 100 bytes of B
	g_cmd $1 "cat $G/$2 | wc -c; head -c 4096 $G/$2 | tr -d A | wc -c; tail -c +4097 $G/$2 | tr -d B | wc -c"
	[ "$(echo $OUT)" = "4196 0 0" ] ||
		flag "$sess/$3: $1's read() once it has the new size: '$OUT', not 4196 bytes, A then B"
}

sess=dax
S=$W/$sess
mkdir -p "$S/shared/g"
G=/mnt/g
# the files, made on the host before the guests look
printf xxxxxxxxxxxx >"$S/shared/g/w"
head -c 16384 /dev/zero >>"$S/shared/g/w"
head -c 4096 /dev/zero >"$S/shared/g/c"
pattern "$S/shared/g/t"
pattern "$S/shared/g/r"
pattern "$S/shared/g/h"
g_daemon --cache auto --dax-window 64M
g_start a "$S/vfs.sock.0"
g_start b "$S/vfs.sock.1"
if g_wait a '^VQF-READY' && g_wait b '^VQF-READY' &&
   g_cmd a "$MOUNT" && g_cmd b "$MOUNT"; then
	# store: A's mmap store and write() in B's mapping
	bg b w "vqf-cohere mmwatch $G/w 4096 4108"
	until_out b before= w
	zeros=$(head -c 4108 /dev/zero | tr '\0' 0)
	[ "$(field before)" = "$zeros" ] ||
		flag "$sess/store: B's loads before: '$(field before | cut -c1-40)...'"
	g_cmd a "vqf-cohere mmwrite $G/w 4096 hello-from-a" ||
		flag "$sess/store: A's store failed"
	g_cmd a "printf written-by-a | dd of=$G/w bs=1 seek=8192 conv=notrunc 2>/dev/null" ||
		flag "$sess/store: A's write() failed"
	g_cmd b "touch /tmp/w.go"
	until_out b after= w
	want=hello-from-a
	want=$want$(head -c 4084 /dev/zero | tr '\0' 0)written-by-a
	[ "$(field after)" = "$want" ] ||
		flag "$sess/store: B's loads after A's store and write: '$(field after | cut -c1-40)...'"

	# counter: both at once
	g_send a "vqf-cohere mmcount $G/c $N"
	g_send b "vqf-cohere mmcount $G/c $N"
	g_reap a || flag "$sess/counter: A's counter failed"
	ca=$(field count) fa=$(field first)
	g_reap b || flag "$sess/counter: B's counter failed"
	cb=$(field count) fb=$(field first)
	got=$(od -An -t u8 -N8 "$S/shared/g/c" | tr -d ' ')
	# the adds interleaved when each began before the other ended
	ov=no
	[ "$fa" -lt "$cb" ] && [ "$fb" -lt "$ca" ] && ov=yes
	echo "$sess/counter: A from $fa to $ca, B from $fb to $cb," \
		"interleaved: $ov; the file holds $got"
	[ "$got" = $((2 * N)) ] ||
		flag "$sess/counter: $got after 2 x $N locked adds"

	# trunc: A truncates what B has mapped
	bg b t "vqf-cohere mmpages $G/t 16" /tmp/t.go2
	until_out b before= t
	g_cmd a "truncate -s 4196 $G/t" || flag "$sess/trunc: A's truncate failed"
	g_cmd b "touch /tmp/t.go"
	check_trunc b t
	# read() before B has the new size: as long as B's old size, or
	# the new; past the new end zeros, never the old bytes (letters)
	g_cmd b "cat $G/t | wc -c; cat $G/t | tail -c +4197 | tr -cd A-P | wc -c"
	set -- $OUT
	echo "$sess/trunc: B's read() before it has the new size: ${1:-?} bytes"
	[ "${2:-}" = 0 ] ||
		flag "$sess/trunc: B's read() past the new end: '$OUT', old bytes"
	learnt b t trunc

	# regrow: B has touched the pages past the end A's truncate left
	# (QEMU replaced them); A's write past the end grows the file over
	# them, and B's same mapping must show the file's new bytes, not
	# its replaced pages (the daemon maps the grown pages again)
	bg b r "vqf-cohere mmpages $G/r 16" /tmp/r.go2
	until_out b before= r
	g_cmd a "truncate -s 4196 $G/r" || flag "$sess/regrow: A's truncate failed"
	g_cmd b "touch /tmp/r.go"
	check_trunc b r
	g_cmd a "printf Z | dd of=$G/r bs=1 seek=20480 conv=notrunc 2>/dev/null" ||
		flag "$sess/regrow: A's write past the end failed"
	g_cmd b "touch /tmp/r.go2"
	until_out b again= r
	again=$(field again)
	case $again in
	AB000Z*) rest=${again#AB000Z}
		[ ${#rest} = 10 ] && [ -z "$(echo "$rest" | tr -d '0S')" ] ||
			flag "$sess/regrow: B's loads past the grown end: '$rest'" ;;
	*) flag "$sess/regrow: B's loads after the file grew: '$again', not AB000Z..." ;;
	esac

	# host: the host truncates what A and B have mapped
	bg a h "vqf-cohere mmpages $G/h 16" /tmp/h.go2
	bg b h "vqf-cohere mmpages $G/h 16" /tmp/h.go2
	until_out a before= h
	until_out b before= h
	truncate -s 4196 "$S/shared/g/h"
	g_cmd a "touch /tmp/h.go"
	g_cmd b "touch /tmp/h.go"
	check_trunc a h
	check_trunc b h
	learnt a h host
	learnt b h host

	for g in a b; do
		g_cmd $g "$UMOUNT" || flag "$sess: $g's unmount failed"
	done
else
	flag "$sess: a guest did not boot or mount with dax=always"
fi
g_end
for g in a b; do
	vqf_scan_console "$S/$g.txt" &&
		grep -q '^VQF-GUEST-EXIT rc=0' "$S/$g.txt" ||
		flag "$sess: guest $g's console (above) or exit"
	sed "s/^/$g: QEMU: /" "$S/$g.err"
done
grep -v '^vhost-user: ' "$S/daemon.log" | grep -E 'guest|hub:|refused|dax:|windows:'
[ "$(grep -c 'front-end disconnected' "$S/daemon.log")" = 2 ] ||
	flag "$sess: the daemon did not see both front-ends go"
[ "$(grep -c ' messages, 0 refused' "$S/daemon.log")" = 2 ] ||
	flag "$sess: the daemon refused vhost-user messages"
[ "$(grep -c ' 0 refused, 0 queue breaks' "$S/daemon.log")" = 2 ] ||
	flag "$sess: the daemon refused requests or saw a ring broken"
[ "$(grep -c ': dax: [1-9][0-9]* setups' "$S/daemon.log")" = 2 ] ||
	flag "$sess: a guest's window served no SETUPMAPPING"
grep -q 'windows: [1-9][0-9]* shrinks and [0-9]* growths seen, [1-9][0-9]* ranges' \
	"$S/daemon.log" || flag "$sess: the daemon saw no truncation"
vqf_daemon_confined "$S/daemon.log" namespace ||
	flag "$sess: the daemon's confinement (above)"
end=$(date +%s)
echo "$NAME: $((end - start)) s"
[ $bad = 0 ] && rm -rf "$W"/*/shared
vqf_stale_exit $bad "$W"/*/*.txt
exit $bad
