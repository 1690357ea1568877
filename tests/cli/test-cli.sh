#!/bin/sh
# $SF, $RUNAS and $WRAP are word lists on purpose.
# shellcheck disable=SC2086
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-cli.sh VQFUSE_SIM - checks vqfuse-sim's exit codes, its JSON output
# and that every workload leaves the shared directory as it found it.
set -u
SIM=${1:?usage: test-cli.sh path/to/vqfuse-sim}
# A wrapper for every run, e.g. "valgrind -q --error-exitcode=3".
WRAP=${VQF_CLI_WRAP:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-cli-test.XXXXXX") || exit 1
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
D=$T/shared
OUT=$T/out
ERR=$T/err
fails=0
checks=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

pass() {
	checks=$((checks + 1))
}

# Something to leave alone, and a listing of it with sizes and modes.
mkdir -p "$D/sub"
printf 'keep me\n' > "$D/canary"
printf 'deeper\n' > "$D/sub/file"
snap() {
	(cd "$D" && find . -printf '%p %y %s %m\n' | sort)
}
snap > "$T/before"

# expect RC DESC ARGS...: runs vqfuse-sim, checks the exit code.
expect() {
	want=$1
	desc=$2
	shift 2
	timeout 300 $WRAP "$SIM" "$@" > "$OUT" 2> "$ERR"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$desc: exit $rc, expected $want ($*)"
		sed 's/^/  | /' "$ERR" | head -5
		return 1
	fi
	pass
	return 0
}

# stderr must name the offending option or value.
expect_usage() {
	needle=$1
	shift
	expect 2 "bad usage '$*'" "$@" || return
	if ! grep -q -- "$needle" "$ERR"; then
		fail "bad usage '$*': stderr does not name '$needle'"
		sed 's/^/  | /' "$ERR"
	fi
}

# check_json WORKLOAD PHASES...: the JSON parses, is ok, has the phases
# with operations and FUSE requests in them.
check_json() {
	python3 - "$OUT" "$@" <<'PY' || fail "JSON of $1"
import json, sys
path, wl, phases = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path) as f:
	d = json.load(f)
assert d["ok"] is True, d
assert d["workload"] == wl, d["workload"]
got = [p["name"] for p in d["phases"]]
assert got == phases, got
for p in d["phases"]:
	assert p["ops"] > 0 and p["seconds"] > 0, p
	assert p["ops_per_sec"] > 0, p
	assert p["requests"] >= p["ops"], p
	assert p["requests_per_op"] >= 1, p
	for k in ("kicks_per_op", "irqs_per_op", "interrupts_per_op",
		  "cli_bytes_copied", "drv_bytes_copied"):
		assert k in p, k
PY
	pass
}

check_dir() {
	snap > "$T/after"
	if ! cmp -s "$T/before" "$T/after"; then
		fail "$1: shared directory changed"
		diff "$T/before" "$T/after" | head -10
	else
		pass
	fi
}

SF="create ls-l read append rename delete-renamed"

# Help, version, commands.
expect 0 "--help" --help
grep -q -- "--queue-size" "$OUT" || fail "--help does not document --queue-size"
for o in --shared --queues --threads --workload --files --size --bs \
	 --jobs --backend --json --cache --writeback --timeout --plot --trace --dax --dax-window ls-l \
	 auto+wb always+wb shared --guests --poll-us --handoff --dax-stale; do
	grep -q -- "$o" "$OUT" || fail "--help does not document $o"
done
grep -q -- "--dax\[=MODE\]" "$OUT" || fail "--help does not document --dax=MODE"
expect 0 "help" help
expect 0 "run --help" run --help
expect 0 "--version" --version
grep -q "vqfuse-sim" "$OUT" || fail "--version prints no name"

# Usage errors: exit 2, the message names what is wrong.
expect 2 "no arguments"
expect_usage "frobnicate" frobnicate
expect_usage "--shared" run
expect_usage "--shared" run --shared "$T/nonexistent"
expect_usage "not a directory" run --shared "$D/canary"
expect_usage "--bogus" run --shared "$D" --bogus
expect_usage "--files" run --shared "$D" --files 0
expect_usage "--files" run --shared "$D" --files 12abc
expect_usage "--files" run --shared "$D" --files -1
expect_usage "--files" run --shared "$D" --files 99999999999999999999999
expect_usage "--files" run --shared "$D" --files
expect_usage "--size" run --shared "$D" --size 4Q
expect_usage "--bs" run --shared "$D" --bs 0
expect_usage "--jobs" run --shared "$D" --jobs 100000
expect_usage "--queues" run --shared "$D" --queues 0
expect_usage "--queue-size" run --shared "$D" --queue-size 100
expect_usage "--queue-size" run --shared "$D" --queue-size 4
expect_usage "--threads" run --shared "$D" --threads x
expect_usage "--poll-us" run --shared "$D" --poll-us 10001
expect_usage "--poll-us" run --shared "$D" --poll-us -1
expect_usage "nfs" run --shared "$D" --backend nfs
expect_usage "tarball" run --shared "$D" --workload tarball
expect_usage "--json" run --shared "$D" --json=yes
expect_usage "stray" run --shared "$D" stray
expect_usage "bogus" run --shared "$D" --cache bogus
expect_usage "--cache" run --shared "$D" --cache=
expect_usage "--cache" run --shared "$D" --cache
expect_usage "--writeback" run --shared "$D" --writeback=yes
expect_usage "--writeback" run --shared "$D" --cache=all --writeback
expect_usage "--timeout" run --shared "$D" --cache=auto --timeout 0
expect_usage "--timeout" run --shared "$D" --cache=auto --timeout 1x
expect_usage "--timeout" run --shared "$D" --cache=auto --timeout 86401
expect_usage "--timeout applies" run --shared "$D" --timeout 2
expect_usage "--timeout applies" run --shared "$D" --cache always \
	--timeout 2
expect_usage "--plot" run --shared "$D" --plot=
expect_usage "--plot" run --shared "$D" --plot
check_dir "usage errors"

# Every workload, small, through vqfuse's passthrough; table and JSON.
expect 0 "smallfile table" run --shared "$D" --files 40 --jobs 2 --quiet &&
	for p in $SF; do
		grep -q "^$p " "$OUT" || fail "smallfile table lacks $p"
	done
check_dir smallfile
expect 0 "smallfile json" run --shared "$D" --files 30 --size 1000 \
	--bs 300 --json --quiet && check_json smallfile $SF
check_dir "smallfile json"
for w in seqread seqwrite; do
	expect 0 "$w" run --shared="$D" --workload=$w --size=1M --jobs 2 \
		--json --quiet && check_json $w $w
	check_dir $w
done
for w in randread randwrite; do
	expect 0 "$w" run --shared "$D" --workload $w --size 200K --bs 4K \
		--queues 2 --threads 2 --jobs 3 --json --quiet &&
		check_json $w $w
	check_dir $w
	expect 0 "$w smallest queue" run --shared "$D" --workload $w \
		--size 64K --queue-size 8 --jobs 2 --json --quiet &&
		check_json $w $w
	check_dir $w
done
# A file size that is not a multiple of bs.
expect 0 "seqread odd size" run --shared "$D" --workload seqread \
	--size 100001 --bs 4096 --json --quiet && check_json seqread seqread
check_dir "seqread odd size"

# Polling (threaded device): the run succeeds, the JSON names the window.
expect 0 "poll" run --shared "$D" --files 20 --jobs 2 --poll-us 50 \
	--json --quiet && check_json smallfile $SF &&
	python3 - "$OUT" <<'PY' || fail "poll: JSON poll_us"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["poll_us"] == 50 and d["inline"] is False, d
PY
check_dir "poll"

# Direct kicks (the default) against --handoff: with one job every
# request is served and reaped by its caller (FORGETs, which nobody waits
# for, may signal); handed off, the replies come by interrupt.  A FORGET
# is counted in the phase that sends it and its signal in the phase it
# lands in, which may be the next one: compare the run's totals.
expect 0 "direct" run --shared "$D" --files 10 --json --quiet &&
	check_json smallfile $SF &&
	python3 - "$OUT" <<'PY' || fail "direct: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["handoff"] is False, d
irqs = sum(p["interrupts"] for p in d["phases"])
forgets = sum(p["forgets"] for p in d["phases"])
assert irqs <= forgets, d["phases"]
PY
check_dir "direct"
expect 0 "handoff" run --shared "$D" --files 10 --handoff --json --quiet &&
	check_json smallfile $SF &&
	python3 - "$OUT" <<'PY' || fail "handoff: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["handoff"] is True, d
for p in d["phases"]:
	assert p["interrupts"] >= 1, p
PY
check_dir "handoff"

# One cache mode: named in the JSON; writeback with none is accepted (and
# does nothing: direct I/O).
expect 0 "cache auto" run --shared "$D" --files 10 --cache=auto \
	--timeout 0.5 --json --quiet && check_json smallfile $SF
check_dir "cache auto"
expect 0 "cache none writeback" run --shared "$D" --files 10 --cache none \
	--writeback --json --quiet && check_json smallfile $SF &&
	python3 - "$OUT" <<'PY' || fail "cache none writeback: JSON mode"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["mode"], d["cache"], d["writeback"]) == \
	("none+wb", "none", True), d
assert d["timeout_seconds"] == 1, d
PY
check_dir "cache none writeback"

# Several guests on one backend: jobs spread over them, all succeed, and
# the shared version table is negotiated.
expect_usage "--guests" run --shared "$D" --guests 0
expect_usage "--guests" run --shared "$D" --guests 17
expect 0 "guests 3 shared" run --shared "$D" --files 30 --guests 3 \
	--cache shared --inline --json --quiet &&
	python3 - "$OUT" <<'PY' || fail "guests 3 shared: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["guests"] == 3 and d["jobs"] == 3, d
assert d["cache"] == "shared", d
for p in d["phases"]:
	assert p["ops"] == 90, p
PY
check_dir "guests 3 shared"

# The matrix: every mode, every phase, and what the caches save.  The
# auto modes' entries must outlive every phase however slow the machine
# (valgrind at load 10 once took more than the default 1 s): "no LOOKUP
# after create" is about the cache, not about speed.
expect 0 "cache=all json" run --shared "$D" --files 20 --cache=all \
	--timeout 86400 --json --quiet &&
	python3 - "$OUT" $SF <<'PY' || fail "cache=all JSON"
import json, sys
path, phases = sys.argv[1], sys.argv[2:]
d = json.load(open(path))
assert d["ok"] is True, d
modes = {m["mode"]: m for m in d["modes"]}
assert [m["mode"] for m in d["modes"]] == \
	["none", "auto", "always", "auto+wb", "always+wb", "shared"], \
	list(modes)
for m in d["modes"]:
	assert m["ok"] is True, m
	assert m["writeback"] == m["mode"].endswith("+wb"), m
	assert m["cache"] == m["mode"].split("+")[0], m
	assert [p["name"] for p in m["phases"]] == phases, m["mode"]
	for p in m["phases"]:
		assert p["ops"] == 20 and p["ops_per_sec"] > 0, p
		# Every operation but ls-l's cached entries costs a request.
		assert p["requests_per_op"] >= 1, (m["mode"], p)
		# With EVENT_IDX a request added while the device thread
		# has not yet re-armed its event index needs no kick: a whole
		# phase may go without one when the device lags (ASan).
		# Forgets go on hiprio with kicks of their own.
		assert p["kicks"] <= p["requests"] + p["forgets"], (m["mode"], p)
		# Direct kicks (the default): a caller reaps its own reply,
		# only what nobody waits for may signal; never more than one
		# interrupt per buffer.
		assert p["interrupts"] <= p["requests"] + p["forgets"], \
			(m["mode"], p)
	assert sum(p["kicks"] for p in m["phases"]) > 0, m["mode"]
ph = lambda mode, name: next(p for p in modes[mode]["phases"]
			     if p["name"] == name)
for name in phases:
	none = ph("none", name)
	# cache=none walks every path component with LOOKUP.
	assert none["lookups_per_op"] >= 2, none
	for mode in ("auto", "always", "auto+wb", "always+wb", "shared"):
		c = ph(mode, name)
		assert c["requests"] < none["requests"], (mode, c, none)
		assert c["lookups"] < none["lookups"], (mode, c, none)
		# After create, every name is in the dentry cache (ls -l's
		# READDIRPLUS fills it, rename moves it): no LOOKUP at all.
		# Shared: the host directory's watch sees the guest's own
		# changes too and bumps the directory again, whenever its
		# thread gets to the events (a phase later on a busy
		# machine): at most one revalidation per name.
		if name != "create" and mode == "shared":
			assert c["lookups"] <= c["ops"], (mode, c)
		elif name != "create":
			assert c["lookups"] == 0, (mode, c)
# ls -l with a cache: one GETXATTR per entry plus the listing.
for mode in ("auto", "always"):
	assert ph(mode, "ls-l")["requests_per_op"] < 1.5, ph(mode, "ls-l")
# Writeback batches the small appends: never more requests.
for mode in ("auto", "always"):
	assert ph(mode + "+wb", "append")["requests"] <= \
		ph(mode, "append")["requests"], mode
PY
check_dir "cache=all json"
expect 0 "cache=all table" run --shared "$D" --files 5 --cache=all \
	--inline --quiet &&
	for t in "ops/s" "req/op" "lkp/op" "kick/op" "irq/op" "intr/op"; do
		grep -q "^$t  *none  *auto  *always  *auto+wb  *always+wb  *shared$" \
			"$OUT" || fail "cache=all table lacks $t"
	done
check_dir "cache=all table"

# --plot: a PNG, nothing left in TMPDIR; a clear error without gnuplot,
# before anything runs.
mkdir "$T/tmp"
if command -v gnuplot > /dev/null; then
	TMPDIR=$T/tmp expect 0 "plot" run --shared "$D" --files 5 \
		--cache=all --quiet --plot "$T/p.png" &&
		if [ "$(head -c 4 "$T/p.png" | od -An -c | tr -d ' ')" != \
		     '211PNG' ]; then
			fail "plot: $T/p.png is not a PNG"
		fi
	[ -z "$(ls -A "$T/tmp")" ] || fail "plot left files in TMPDIR"
	TMPDIR=$T/tmp expect 0 "plot one mode" run --shared "$D" --files 5 \
		--quiet --json --plot "$T/q.png" && [ -s "$T/q.png" ] ||
		fail "plot one mode: no PNG"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT" ||
		fail "plot one mode: gnuplot's output in the JSON"
	check_dir "plot"
else
	echo "SKIP: --plot (no gnuplot)"
fi
VQF_GNUPLOT=$T/no/gnuplot expect 1 "plot without gnuplot" run \
	--shared "$D" --files 5 --quiet --plot "$T/r.png" &&
	grep -q "needs gnuplot" "$ERR" || fail "plot without gnuplot: message"
[ ! -e "$T/r.png" ] || fail "plot without gnuplot: a PNG anyway"
expect 1 "plot into a missing directory" run --shared "$D" --files 5 \
	--quiet --plot "$T/no/such/dir.png" &&
	grep -q "cannot write" "$ERR" || fail "plot missing dir: message"
check_dir "plot errors"

# --trace: Chrome trace-event JSON, every slice closed, the opcodes and
# the stages there; refused with the matrix; a bad path fails the run.
expect 0 "trace" run --shared "$D" --files 10 --quiet --trace "$T/t.json" &&
	python3 - "$T/t.json" <<'PY' || fail "trace: $T/t.json"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
b = [e for e in ev if e["ph"] == "b"]
e = [e for e in ev if e["ph"] == "e"]
assert len(b) == len(e) and b, (len(b), len(e))
names = {x["name"] for x in b}
for n in ("INIT", "LOOKUP", "CREATE", "WRITE", "READ", "RENAME", "UNLINK",
	  "pending", "ring", "device", "reply"):
	assert n in names, n
assert any(x["name"] == "kicked" for x in ev)
PY
check_dir "trace"
expect_usage "--trace" run --shared "$D" --trace "$T/u.json" --cache=all
expect_usage "--trace" run --shared "$D" --trace=
expect 1 "trace into a missing directory" run --shared "$D" --files 2 \
	--quiet --trace "$T/no/such/t.json" &&
	grep -q -- "--trace" "$ERR" || fail "trace missing dir: message"

# --dax=always: data through the cache window, no READ/WRITE requests; a
# window smaller than the file (reclaim).
expect 0 "dax seqwrite" run --shared "$D" --workload seqwrite --size 8M \
	--dax=always --dax-window 4M --quiet
check_dir "dax seqwrite"
expect 0 "dax randread" run --shared "$D" --workload randread --size 8M \
	--dax-window 4M --quiet --json &&
	python3 - "$OUT" <<'PY' || fail "dax randread JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"], d
PY
expect_usage "--dax-window" run --shared "$D" --dax-window 3M
expect_usage "--dax" run --shared "$D" --dax --backend passthrough_ll
# --dax=auto (the policy, as --dax and --dax-window alone), --dax=always;
# nothing else.  The JSON names the mode and the window.
for a in "off 0:" "auto 67108864:--dax" "auto 8388608:--dax-window 8M" \
	"always 67108864:--dax=always" "auto 67108864:--dax=auto" \
	"always 4194304:--dax=always --dax-window 4M"; do
	dmode=${a%%:*} got=
	# shellcheck disable=SC2086
	expect 0 "dax mode '${a#*:}'" run --shared "$D" --files 2 --quiet \
		--json ${a#*:} &&
		got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["dax"], d["dax_window"])' "$OUT") &&
		[ "$got" = "$dmode" ] ||
		fail "dax mode '${a#*:}': JSON says '${got:-}', not '$dmode'"
done
expect 0 "dax=auto randread" run --shared "$D" --workload randread \
	--size 8M --dax=auto --dax-window 4M --quiet
check_dir "dax=auto randread"
expect 0 "dax=always smallfile" run --shared "$D" --files 5 \
	--dax=always --quiet
expect_usage "unknown mode 'sometimes'" run --shared "$D" --dax=sometimes
expect_usage "unknown mode ''" run --shared "$D" --dax=
expect_usage "unexpected argument 'auto'" run --shared "$D" --dax auto
# --dax-stale N: evicted files' ranges stay mapped until reused (at most
# N; 0: none).  40 files through 32 ranges: at delete-renamed some 26
# are mapped; without deferral each costs a REMOVEMAPPING, with the
# default bound (8) a flush every 8 evictions.
for n in 0 default; do
	a=; [ "$n" = default ] || a="--dax-stale $n"
	# shellcheck disable=SC2086
	expect 0 "dax-stale $n" run --shared "$D" --files 40 --dax=always \
		--quiet --json $a &&
		python3 - "$OUT" "$n" > "$T/stale-$n" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
want = None if sys.argv[2] == "default" else int(sys.argv[2])
assert d["dax_stale"] == want, d["dax_stale"]
print([p["requests"] for p in d["phases"]
       if p["name"] == "delete-renamed"][0])
PY
		fail "dax-stale $n: JSON"
done
if [ -s "$T/stale-0" ] && [ -s "$T/stale-default" ] &&
	[ $(($(cat "$T/stale-0") - $(cat "$T/stale-default"))) -lt 15 ]; then
	fail "dax-stale: delete-renamed sent $(cat "$T/stale-0") requests without deferral, $(cat "$T/stale-default") with it"
fi
expect_usage "--dax-stale: the guest has no window" run --shared "$D" \
	--dax-stale 4
expect_usage "--dax-stale: invalid value '40000'" run --shared "$D" --dax \
	--dax-stale 40000
expect_usage "--inline takes no value" run --shared "$D" --inline=yes

# An empty shared directory stays empty.
mkdir "$T/empty"
expect 0 "empty directory" run --shared "$T/empty" --files 3 --quiet
[ -z "$(ls -A "$T/empty")" ] || fail "empty directory not left empty"

# libfuse3's passthrough_ll as the backend (when it was built in).
if $WRAP "$SIM" run --shared "$D" --backend passthrough_ll --files 1 --quiet \
	> /dev/null 2>&1; then
	expect 0 "smallfile ptll" run --shared "$D" --backend passthrough_ll \
		--files 30 --jobs 2 --json --quiet && check_json smallfile $SF
	check_dir "smallfile ptll"
	expect 0 "randread ptll" run --shared "$D" --backend passthrough_ll \
		--workload randread --size 128K --json --quiet &&
		check_json randread randread
	check_dir "randread ptll"
else
	echo "SKIP: passthrough_ll backend not available"
fi

# A failing workload exits 1 and names the operation, path and errno: a
# directory the caller cannot write to.
RO=$T/ro
mkdir "$RO"
chmod 555 "$RO"
if [ "$(id -u)" -ne 0 ]; then
	RUNAS=
elif command -v setpriv > /dev/null; then
	chmod 755 "$T"
	RUNAS="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
	RUNAS=skip
fi
if [ "$RUNAS" != skip ]; then
	timeout 300 $RUNAS $WRAP "$SIM" run --shared "$RO" --files 2 --quiet \
		> "$OUT" 2> "$ERR"
	rc=$?
	if [ $rc -ne 1 ]; then
		fail "read-only directory: exit $rc, expected 1"
	elif ! grep -q "mkdir(vqf-wl.*Permission denied (errno 13)" "$ERR"
	then
		fail "read-only directory: stderr does not name op and errno"
		sed 's/^/  | /' "$ERR"
	else
		pass
	fi
	[ -z "$(ls -A "$RO")" ] || fail "read-only directory not left empty"
else
	echo "SKIP: failure case (root without setpriv)"
fi

echo "$checks checks passed, $fails failed"
[ "$fails" -eq 0 ]
