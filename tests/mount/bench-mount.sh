#!/bin/sh
# The mount's options and phases' output are word lists on purpose.
# shellcheck disable=SC2086,SC2046
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# bench-mount.sh VQFUSE_SIM [TREE] - a benchmark, not a test: times tar
# extracting, archiving (tar c | wc -c, every byte read) and removing a
# copy of TREE (default /usr/share/doc) on a native directory and through
# vqfuse-sim mount in a few configurations, in the same run, and prints
# seconds, the ratio to native and the FUSE requests per host operation.
# Everything happens under one temporary directory on $TMPDIR's
# filesystem (native and shared directory alike).  VQF_BENCH_RUNS (default
# 1) runs each; the best time is kept.
set -u
SIM=${1:?usage: bench-mount.sh path/to/vqfuse-sim [TREE]}
TREE=${2:-/usr/share/doc}
RUNS=${VQF_BENCH_RUNS:-1}
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-mount-bench.XXXXXX") || exit 1
M=$T/mnt
PID=
mkdir -p "$M"

mounted() {
	awk -v m="$M" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

cleanup() {
	[ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID"
	mounted && { fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"; }
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now() {
	date +%s.%N
}

# secs CMD...: wall seconds of CMD (which must succeed).
secs() {
	t0=$(now)
	if ! timeout 1800 sh -c "$*" >/dev/null 2>"$T/cmd.err"; then
		echo "bench-mount: failed: $*" >&2
		sed 's/^/  | /' "$T/cmd.err" >&2
		exit 1
	fi
	echo "$(now) $t0" | awk '{ printf "%.3f", $1 - $2 }'
}

best() {
	echo "$@" | tr ' ' '\n' | sort -g | head -1
}

tar -cf "$T/tree.tar" -C "$TREE" . 2>/dev/null
files=$(tar -tf "$T/tree.tar" | wc -l)
bytes=$(stat -c %s "$T/tree.tar")
echo "tree: $TREE, $files entries, tar of $bytes bytes; best of $RUNS"
printf '%-36s %9s %9s %9s %7s %7s %9s\n' "stack" "untar s" "tar s" \
	"rm s" "x nat." "req/op" "host ops"

# phases DIR: untar, tar c, rm -r in DIR; prints the three best times.
phases() {
	x='' c='' r=''
	for i in $(seq 1 "$RUNS"); do
		mkdir "$1/t"
		x="$x $(secs tar -xf "$T/tree.tar" -C "$1/t")"
		c="$c $(secs "tar -cf - -C '$1/t' . | wc -c")"
		r="$r $(secs rm -rf "$1/t")"
	done
	echo "$(best $x) $(best $c) $(best $r)"
}

mkdir "$T/native"
set -- $(phases "$T/native")
nx=$1 nc=$2 nr=$3
printf '%-36s %9s %9s %9s %7s %7s %9s\n' "native" "$nx" "$nc" "$nr" "1.00" \
	"-" "-"

for cfg in "--cache=none" "--cache=auto" "--cache=always --writeback" \
	   "--queues 2 --threads 2" "--inline" \
	   "--backend passthrough_ll --inline"; do
	mkdir -p "$T/shared"
	"$SIM" mount "$M" --shared "$T/shared" $cfg > "$T/out" 2>&1 &
	PID=$!
	i=0
	while ! mounted; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$PID" 2>/dev/null; then
			echo "bench-mount: $cfg did not mount:" >&2
			cat "$T/out" >&2
			exit 1
		fi
		sleep 0.1
	done
	set -- $(phases "$M")
	kill -TERM "$PID"
	wait "$PID"
	PID=
	ratio=$(echo "$1 $2 $3 $nx $nc $nr" |
		awk '{ printf "%.2f", ($1 + $2 + $3) / ($4 + $5 + $6) }')
	req=$(sed -n 's/.*per host operation: requests \([0-9.]*\).*/\1/p' \
		"$T/out")
	ops=$(sed -n 's/.*counters: host_ops=\([0-9]*\).*/\1/p' "$T/out")
	printf '%-36s %9s %9s %9s %7s %7s %9s\n' "mount $cfg" "$1" "$2" "$3" \
		"$ratio" "$req" "$ops"
	rm -rf "$T/shared"
done
