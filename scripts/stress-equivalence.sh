#!/usr/bin/env bash
# Runs owt's equivalence tests (a mesh against one device) many times, several at once and
# beside a load, and records every run's worst gap, to catch a result that is only sometimes
# wrong (a race, a buffer read before it is written, state shared between tests). Not a timed
# test: a tool for hunting non-determinism (issue 22).
#
#   scripts/stress-equivalence.sh [RUNS] [JOBS] [FILTER]
#
# RUNS runs of the test binary $TEST (default parallel_training) filtered by FILTER (default:
# the two-tower step, hybrid_step::alexnet_small_two_tower), JOBS at a time (default 2), while
# one more process runs the whole hybrid_step module in a loop as load. Every run's "worst gap" lines go to
# $OUT (default target/stress/), one file per run; the summary prints the largest gap seen
# per case and the runs that failed. Exit status 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-200}
JOBS=${2:-2}
FILTER=${3:-hybrid_step::alexnet_small_two_tower}
TEST=${TEST:-parallel_training}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}"
OUT=${OUT:-target/stress}
mkdir -p "$OUT"
rm -f "$OUT"/run-*.log

# The test binary holding the equivalence tests (f64: parallel_training), as the README's
# test command builds it.
bin=$(cargo test --locked --features wgpu --test "$TEST" --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and t.get("name") == sys.argv[1] and t.get("kind") == ["test"] and m.get("executable"):
        print(m["executable"])' "$TEST" | tail -1)
[ -x "$bin" ] || { echo "stress: no test binary built" >&2; exit 2; }
echo "stress: $RUNS runs of '$FILTER', $JOBS at a time, hybrid_step as load; logs in $OUT"

# The load: the other equivalence steps, over and over, until the runs are done.
( while :; do "$bin" hybrid_step --test-threads 2 >/dev/null 2>&1 || true; done ) &
load=$!
trap 'kill $load 2>/dev/null || true' EXIT

seq 1 "$RUNS" | xargs -P "$JOBS" -I{} sh -c \
    "'$bin' '$FILTER' --nocapture --test-threads 1 > '$OUT/run-{}.log' 2>&1 || echo FAILED >> '$OUT/run-{}.log'"
kill $load 2>/dev/null || true

python3 - "$OUT" "$RUNS" <<'EOF'
import glob, re, sys
out, runs = sys.argv[1], int(sys.argv[2])
worst, failed = {}, []
for f in sorted(glob.glob(f"{out}/run-*.log")):
    text = open(f).read()
    if "FAILED" in text or "panicked" in text:
        failed.append(f)
    for what, gap, name in re.findall(r"([^.\n]*): worst gap ([0-9.e+-]+) \((.*)\)$", text, re.M):
        what, g = what.strip(), float(gap)
        if g >= worst.get(what, (-1.0, ""))[0]:
            worst[what] = (g, name)
for what, (g, name) in sorted(worst.items()):
    print(f"{g:.3e}  {what} ({name})")
print(f"{runs} runs, {len(failed)} failed" + (": " + ", ".join(failed) if failed else ""))
sys.exit(1 if failed else 0)
EOF
