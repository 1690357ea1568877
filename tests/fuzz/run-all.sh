#!/bin/sh
# Build every fuzz target with clang in its own build folder and run each
# one for a bounded time.  A crash, leak, sanitizer report, timeout or
# out-of-memory fails the run; the reproducer is printed into the log
# (path, hex dump and base64) and kept under $B/fuzz-artifacts/<target>/.
#
# usage: tests/fuzz/run-all.sh [SECONDS]
#
#   SECONDS              per target (default: $VQF_FUZZ_SECONDS or 60);
#                        0 only replays seeds and regressions once
#   VQF_FUZZ_BUILD       build folder (default: build-fuzz at the top)
#   VQF_FUZZ_TARGETS     space-separated subset, e.g. "fuzz_version"
#   VQF_FUZZ_CORPUS      folder that keeps each target's corpus between
#                        runs (default: $B/fuzz-corpus)
#   VQF_FUZZ_JOBS        parallel build jobs (default 2)
#   VQF_FUZZ_CC          compiler (default clang; afl-clang-fast builds
#                        AFL++ binaries, which this script does not run)
#   VQF_FUZZ_TMPDIR      where fuzz_device and fuzz_vu_rings make their
#                        shared directory (default /dev/shm if writable,
#                        else $TMPDIR, /tmp)
#   VQF_FUZZ_CONNECT     fuzz_vu_rings: drive the vhost-user-fs daemon
#                        listening on this socket instead of ours
#                        (docs/fuzzing.md); VQF_FUZZ_SHARE its shared
#                        directory, emptied between inputs
#   VQF_FUZZ_THREADS     fuzz_vu_rings: our daemon's worker threads
#                        (default 0: each ring served in its own thread)
#   VQF_FUZZ_LAX_FORGET  fuzz_vu_rings: bypass finding V1 (a daemon without
#                        its fix)
#
# fuzz_device (the whole device over the passthrough), fuzz_vhost and
# fuzz_vu_rings (FUSE requests through real rings to a vhost-user daemon)
# are built when pkg-config finds fuse3 >= 3.14 and liburing; they run for
# SECONDS like the others.
#
# Exit status: 0 clean, 1 a target failed, 2 the build failed.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-${VQF_FUZZ_SECONDS:-60}}
B=${VQF_FUZZ_BUILD:-$root/build-fuzz}
jobs=${VQF_FUZZ_JOBS:-2}
corpus_root=${VQF_FUZZ_CORPUS:-$B/fuzz-corpus}

case $secs in
''|*[!0-9]*) echo "run-all: SECONDS must be a number" >&2; exit 2 ;;
esac

mkdir -p "$B"
if ! CC=${VQF_FUZZ_CC:-clang} cmake -S "$root" -B "$B" -DVQFUSE_FUZZ=ON \
	-DVQFUSE_SANITIZE=OFF -DVQFUSE_KERNEL=OFF -DVQFUSE_WERROR=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$B/fuzz-configure.log" 2>&1; then
	cat "$B/fuzz-configure.log" >&2
	echo "run-all: configure failed" >&2
	exit 2
fi
if ! cmake --build "$B" --target vqf_fuzz_all -j"$jobs"; then
	echo "run-all: build failed" >&2
	exit 2
fi

fz=$B/tests/fuzz
if [ -n "${VQF_FUZZ_TARGETS:-}" ]; then
	targets=$VQF_FUZZ_TARGETS
else
	targets=
	for f in "$fz"/fuzz_*; do
		[ -f "$f" ] && [ -x "$f" ] && targets="$targets ${f##*/}"
	done
fi
[ -n "$targets" ] || { echo "run-all: no fuzz targets built" >&2; exit 2; }

failed=
summary=
ntargets=$(echo $targets | wc -w)
for t in $targets; do
	exe=$fz/$t
	[ -x "$exe" ] || { echo "run-all: no target $t" >&2; exit 2; }
	corpus=$corpus_root/$t
	art=$B/fuzz-artifacts/$t
	log=$B/fuzz-logs/$t.log
	rm -rf "$art"
	mkdir -p "$corpus" "$art" "$B/fuzz-logs"
	if [ "$secs" -eq 0 ]; then
		set -- -runs=0
	else
		set -- -max_total_time="$secs"
	fi
	set -- "$@" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/"
	dict=$root/tests/fuzz/dict/${t#fuzz_}.dict
	[ -f "$dict" ] && set -- "$@" -dict="$dict"
	set -- "$@" "$corpus" "$fz/seeds/$t"
	reg=$root/tests/fuzz/regressions/$t
	[ -d "$reg" ] && set -- "$@" "$reg"

	echo "run-all: $t for ${secs}s"
	if "$exe" "$@" >"$log" 2>&1; then
		status=ok
	else
		status=FAILED
		failed="$failed $t"
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
	line="$t: $status, ${execs:-?} execs, ${rate:-?}/s, ${cov:-cov: ?}"
	summary="$summary
$line"
	echo "run-all: $line"
	if [ "$status" != ok ]; then
		echo "----- $t: last lines of $log"
		tail -n 60 "$log"
		for a in "$art"/*; do
			[ -f "$a" ] || continue
			echo "----- $t: reproducer $a"
			echo "replay: $exe $a"
			od -A x -t x1z -v "$a" | head -n 64
			echo "base64:"
			base64 "$a" | head -n 40
		done
	fi
done

echo "run-all: summary$summary"
nfail=$(echo $failed | wc -w)
echo "fuzz: $((ntargets - nfail)) passed, $nfail failed"
if [ -n "$failed" ]; then
	echo "run-all: FAILED:$failed" >&2
	exit 1
fi
