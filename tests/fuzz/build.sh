#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script for vqfuse's fuzz targets.
#
# Environment (set by OSS-Fuzz's compile step; set them yourself to try it
# locally, e.g.
#   CC=clang CFLAGS="-fsanitize=address,fuzzer-no-link -g" \
#   LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/out tests/fuzz/build.sh):
#   CC, CFLAGS           compiler and flags (sanitizer + coverage included)
#   LIB_FUZZING_ENGINE   link flag or archive of the engine
#   OUT                  where fuzz_<name>, <name>.dict and
#                        fuzz_<name>_seed_corpus.zip go
#   WORK                 scratch folder (default: a temporary one)
#
# Needs only a C compiler, the kernel uapi headers (<linux/fuse.h>,
# <linux/virtio_ring.h>) and zip: no CMake, cmocka or libfuse, so it runs
# in the stock base-builder image - except fuzz_device, which is built only
# when pkg-config finds fuse3 >= 3.14 and liburing (see below).  The code
# under test is compiled with $CFLAGS like the harnesses, so its edges
# count.
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${CC:=clang}"
: "${CFLAGS:=}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
: "${OUT:?OUT must name the output folder}"
work=${WORK:-$(mktemp -d)}
obj=$work/vqf-obj
mkdir -p "$obj" "$OUT"

inc="-I$root/lib -I$root/sim/vring -I$root/tests"
objs=
for src in "$root"/lib/*.c "$root"/sim/vring/*.c; do
	o=$obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
	# shellcheck disable=SC2086
	$CC $CFLAGS -std=gnu11 $inc -c "$src" -o "$o"
	objs="$objs $o"
done

# fuzz_device also needs the simulator's device, backend and passthrough,
# which use libfuse3 >= 3.14 (fuse_session_custom_io) and liburing.  The
# stock base-builder image has neither new enough: install or build them
# in the Dockerfile (static libraries, or copy the .so files into $OUT and
# set an rpath), or the target is skipped here.
sim_objs=
sim_inc=
sim_libs=
if pkg-config --atleast-version=3.14 fuse3 2>/dev/null &&
   pkg-config --exists liburing 2>/dev/null; then
	sim_inc="-I$root/sim/device -I$root/sim/backend"
	sim_inc="$sim_inc -I$root/sim/passthrough"
	sim_inc="$sim_inc $(pkg-config --cflags fuse3 liburing)"
	sim_libs=$(pkg-config --libs fuse3 liburing)
	for src in "$root"/sim/device/*.c \
		   "$root"/sim/backend/vqf_backend.c \
		   "$root"/sim/backend/vqf_backend_check.c \
		   "$root"/sim/passthrough/vqf_p*.c; do
		o=$obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
		# shellcheck disable=SC2086
		$CC $CFLAGS -std=gnu11 $inc $sim_inc -c "$src" -o "$o"
		sim_objs="$sim_objs $o"
	done
else
	echo "build.sh: fuse3 >= 3.14 or liburing missing: no fuzz_device" >&2
fi

for h in "$root"/tests/fuzz/fuzz_*.c; do
	t=$(basename "$h" .c)
	extra_inc=
	extra=
	if [ "$t" = fuzz_device ]; then
		[ -n "$sim_objs" ] || continue
		extra_inc=$sim_inc
		extra="$sim_objs $sim_libs"
	fi
	# shellcheck disable=SC2086
	$CC $CFLAGS -std=gnu11 $inc $extra_inc "$h" $objs $extra \
		$LIB_FUZZING_ENGINE -lpthread -o "$OUT/$t"
	d=$root/tests/fuzz/dict/${t#fuzz_}.dict
	[ -f "$d" ] && cp "$d" "$OUT/$t.dict"
done

# Seeds: the generator is an ordinary program, built without the
# sanitizer and coverage flags so it links anywhere.
# shellcheck disable=SC2086
$CC -O1 -std=gnu11 $inc "$root/tests/fuzz/gen_corpus.c" \
	"$root"/lib/*.c "$root"/sim/vring/*.c -lpthread -o "$work/gen_corpus"
rm -rf "$work/seeds"
"$work/gen_corpus" "$work/seeds"
for s in "$work"/seeds/fuzz_*; do
	t=$(basename "$s")
	rm -f "$OUT/${t}_seed_corpus.zip"
	(cd "$s" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
done
