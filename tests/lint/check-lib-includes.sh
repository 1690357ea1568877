#!/bin/sh
# Fails if any file in lib/ other than vqf_compat.h includes a header that is
# not itself a file in lib/ (quoted or angled, any spelling).
set -eu
libdir=$1
bad=0
for f in "$libdir"/*.c "$libdir"/*.h; do
	[ -e "$f" ] || continue
	base=$(basename "$f")
	[ "$base" = vqf_compat.h ] && continue
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' "$f"); do
		case $inc in
		*/*) ok=0 ;;
		*) [ -e "$libdir/$inc" ] && ok=1 || ok=0 ;;
		esac
		if [ $ok = 0 ]; then
			echo "$f: includes <$inc>, which is not a lib/ header" >&2
			bad=1
		fi
	done
done
[ $bad = 0 ] && echo "lib/ includes: ok"
exit $bad
