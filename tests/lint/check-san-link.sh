#!/bin/sh
# Fails when a sanitize program (every CMake target NAME-san that links an
# executable) links an object of ours without ASan instrumentation: each
# object file on its link line and each member of each archive from the
# build tree must reference __asan_*.  System libraries are not checked.
#
#   check-san-link.sh BUILDDIR     check every -san program under BUILDDIR
#   check-san-link.sh --self-test  build a tiny instrumented and a tiny
#                                  plain link in a temporary folder; pass
#                                  only if the first passes and the second
#                                  fails (the san-link-rejects entry)
set -eu

# $1: an object or archive; succeeds if every object in it is instrumented
# (results are cached: every program links the same archives).
instrumented() {
	key=$(echo "$1" | tr '/' '%')
	if [ -f "$tmp/c.$key" ]; then
		cat "$tmp/c.$key"
		[ ! -s "$tmp/c.$key" ]
		return
	fi
	# nm -A prefixes each line with "file:" or "archive:member:".
	case $1 in
	*.a) nf=2 ;;
	*) nf=1 ;;
	esac
	nm -A "$1" 2>/dev/null | awk -F: -v nf=$nf '
		{ m = nf == 2 ? $1 ":" $2 : $1; all[m] = 1 }
		/ U __asan_/ { ok[m] = 1 }
		END { for (m in all) if (!(m in ok)) print m }' |
		sort | sed 's/^/    not instrumented: /' >"$tmp/c.$key"
	cat "$tmp/c.$key"
	[ ! -s "$tmp/c.$key" ]
}

check_tree() {
	b=$(cd "$1" && pwd)
	nprog=0
	nbad=0
	for lt in $(find "$b" -path '*/CMakeFiles/*-san.dir/link.txt' |
		    sort); do
		# Static libraries are archived, not linked: skip them.
		grep -q ' -o ' "$lt" || continue
		dir=${lt%/CMakeFiles/*}
		prog=$(basename "$(dirname "$lt")" .dir)
		nprog=$((nprog + 1))
		progbad=0
		for tok in $(cat "$lt"); do
			case $tok in
			*.o|*.a) ;;
			*) continue ;;
			esac
			case $tok in
			/*) f=$tok ;;
			*) f=$dir/$tok ;;
			esac
			[ -f "$f" ] || continue
			f=$(realpath "$f")
			case $f in
			"$b"/*) ;;
			*) continue ;;
			esac
			if ! out=$(instrumented "$f"); then
				echo "$prog: links ${f#"$b"/} uninstrumented:"
				echo "$out"
				progbad=1
			fi
		done
		nbad=$((nbad + progbad))
	done
	if [ "$nprog" = 0 ]; then
		echo "san-link: no -san programs under $b (build them first)"
		return 1
	fi
	echo "san-link: $nprog sanitize programs, $nbad with uninstrumented code"
	[ "$nbad" = 0 ]
}

self_test() {
	cc=${CC:-cc}
	t=$tmp/self
	mkdir -p "$t/good/CMakeFiles/p-san.dir" "$t/bad/CMakeFiles/p-san.dir"
	printf 'int f(int *p) { return *p; }\n' >"$t/f.c"
	printf 'int f(int *p);\nint main(void) { int x = 1; return f(&x) - 1; }\n' \
		>"$t/m.c"
	for k in good bad; do
		san=
		[ $k = good ] && san=-fsanitize=address
		$cc -c $san "$t/m.c" -o "$t/$k/m.o"
		$cc -c $san "$t/f.c" -o "$t/$k/f.o"
		ar qc "$t/$k/libf.a" "$t/$k/f.o"
		echo "$cc -fsanitize=address m.o -o p-san libf.a" \
			>"$t/$k/CMakeFiles/p-san.dir/link.txt"
	done
	check_tree "$t/good" || { echo "self-test: an instrumented link failed"; return 1; }
	if check_tree "$t/bad"; then
		echo "self-test: a plain archive in a -san link passed"
		return 1
	fi
	echo "self-test: the check rejects an uninstrumented link"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$1" = --self-test ]; then
	self_test
else
	check_tree "$1"
fi
