#!/bin/sh
# bench-pool.sh REF CONSOLE...: the per-round ratios X/REF of every
# driver X in several bench-qemu console logs (work/bench/console.txt,
# kept aside between runs), pooled into one median, quartiles and count
# per row.  A ratio is only ever taken within one round of one boot.
#
# Why: on a shared 2-core host a round's ratio spreads by +-30 % or more,
# and a median of 5-9 rounds by +-10 %; runs made in a crossover (the
# paired mode with VQF_BENCH_PAIR_SWAP=0 and 1, so that each driver gets
# each device and interrupt placement) only answer together.
#
#   tests/qemu/bench-pool.sh virtiofs-vqf /tmp/sw0.console /tmp/sw1.console
set -u
[ $# -ge 2 ] || { echo "usage: $0 REF CONSOLE..." >&2; exit 2; }
ref=$1
shift
awk -v ref="$ref" '
FNR == 1 { file++ }
/^VQF-BENCH-FS / { fs = $2; rnd = file SUBSEP $4; next }
/^BENCH smallfile / {
	split($6, v, "="); val[fs, rnd, $3] = v[2]; rounds[rnd] = 1
	if (!(fs in seen)) { seen[fs] = 1; order[++nf] = fs }
	next
}
/^BENCH seqread / {
	split($5, v, "="); val[fs, rnd, "seqread"] = v[2]
}
function q(a, n, p,    x) {
	x = (n - 1) * p
	return a[int(x)] + (x - int(x)) * (a[int(x) + 1] - a[int(x)])
}
END {
	nm = split("create stat read append rename delete all seqread", m, " ")
	for (i = 1; i <= nf; i++) {
		x = order[i]
		if (x == ref || x == "9p")
			continue
		printf "%-14s %7s %7s %7s %6s\n", x "/" ref, "q1", "median",
		       "q3", "rounds"
		for (j = 1; j <= nm; j++) {
			k = 0
			for (r in rounds) {
				a = val[x, r, m[j]]; b = val[ref, r, m[j]]
				if (!a || !b)
					continue
				t = a / b
				for (l = k++; l > 0 && rs[l - 1] > t; l--)
					rs[l] = rs[l - 1]
				rs[l] = t
			}
			if (!k)
				continue
			printf "%-14s %6.2fx %6.2fx %6.2fx %6d\n", m[j],
			       q(rs, k, 0.25), q(rs, k, 0.5), q(rs, k, 0.75), k
		}
	}
}' "$@"
