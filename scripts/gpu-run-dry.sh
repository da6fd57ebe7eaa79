#!/usr/bin/env bash
# A dry run of scripts/gpu-run.sh: both calls, one after the other on one cache as on a GPU
# machine, with a stub `owt` and a stub `python3` (for PyTorch's case; the summary's python3 is
# the real one) that sleep for the durations the cases took on 2026-12-04
# (scripts/gpu-run-durations.tsv, or the DURATIONS file given), every duration divided by SCALE. Checks that each
# call ran every one of its cases to the end (no timeout, no case left out of its budget) and
# ended within 480 s (the device tool's limit of 8 minutes a call), as the durations make it.
# Exits non-zero naming what does not hold. No GPU, owt build or PyTorch is needed.
#
# Usage: scripts/gpu-run-dry.sh [SCALE [DURATIONS [CALLS]]]  (CALLS: "1 2", the default, or one)   (default 20: the two calls take about 45 s; the
# script's own time counts once, as on the GPU machine, so the load of this machine does not
# change the verdict)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scale=${1:-20}
durations=${2:-$here/gpu-run-durations.tsv}
calls=${3:-1 2}
limit_s=480
tmp=$(mktemp -d /tmp/owt-gpu-run-dry.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
real_python=$(command -v python3)

# A case's duration divided by the scale, from the durations file.
cat > "$tmp/duration" <<EOF
#!/usr/bin/env bash
awk -F'\t' -v c="\$1" -v s="$scale" '!/^#/ && \$1 == c { print \$2 / s; found = 1 } END { if (!found) exit 1 }' "$durations"
EOF
# The stub owt: sleeps for its case's duration, then prints what `owt bench --json` prints.
cat > "$tmp/owt" <<EOF
#!/usr/bin/env bash
d=\$("$tmp/duration" "\${GPU_RUN_CASE:?the stub owt runs inside a case}") || { echo "no duration for \$GPU_RUN_CASE" >&2; exit 3; }
sleep "\$d"
now=\$(date +%s.%N)
det=false; case " \$* " in *" --deterministic "*) det=true ;; esac
echo "{\"images_per_s\": 1000.0, \"median_step_ms\": 10.0, \"first_step_ms\": 100.0, \"batch\": 128, \"steps\": 4,
 \"resident\": true, \"deterministic\": \$det, \"losses\": [2.302585, 2.25], \"fallbacks\": 0, \"empty_ops\": 0,
 \"timed_window_unix_s\": [\$now, \$now], \"autotune\": {\"fallback_runs\": 0, \"waits\": 0}}"
EOF
# The stub python3: PyTorch's case sleeps for its duration; `import torch` succeeds; anything
# else is the real python3 (the summary, the utilisation sampler).
cat > "$tmp/bin/python3" <<EOF
#!/usr/bin/env bash
if [ "\${GPU_RUN_CASE:-}" = torch ]; then
    sleep "\$("$tmp/duration" torch)"
    echo '{"torch": "stub", "tf32_device_resident": {"images_per_s": 2000.0}, "fp32_strict_device_resident": {"images_per_s": 1000.0}}'
elif [ "\${1:-}" = -c ] && [ "\${2:-}" = "import torch" ]; then
    exit 0
else
    exec "$real_python" "\$@"
fi
EOF
chmod +x "$tmp/duration" "$tmp/owt" "$tmp/bin/python3"

status=0
for call in $calls; do
    PATH="$tmp/bin:$PATH" bash "$here/gpu-run.sh" --call "$call" --owt "$tmp/owt" --out "$tmp/out$call" \
        --cache "$tmp/cache" --time-scale "$scale" > "$tmp/call$call.log" 2>&1 || true
    # The call's own clock: its cases' time at 2026-12-04's durations, the script's own as it ran.
    took_ms=$(sed -n 's/.*done in [0-9]*s (\([0-9]*\) ms).*/\1/p' "$tmp/out$call/run.log" | tail -n 1)
    took_ms=${took_ms:-999999999}
    "$real_python" - "$tmp/out$call/summary.json" "$call" "$took_ms" "$scale" "$limit_s" "$here/gpu-run.sh" <<'PY' || status=1
import json, re, sys
path, call, took_ms, scale, limit_s, script = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
# The call's cases, in order, as the script lists them for it.
text = open(script).read()
branch = text.split('if [ "$call" = 1 ]; then', 1)[1].split("\nelse\n", 1)
body = branch[0] if call == "1" else branch[1].split("\nfi\n", 1)[0]
listed = re.findall(r"run_case (\w+) ", body)
cases = json.load(open(path))["cases"]
problems = []
for name in listed:
    case = cases.get(name)
    if case is None:
        problems.append(f"{name}: not run")
    elif case.get("skipped"):
        problems.append(f"{name}: {case['skipped']}")
    elif case.get("rc") != 0:
        problems.append(f"{name}: rc {case.get('rc')}" + (" (timed out at its limit)" if case.get("timed_out") else ""))
as_measured = took_ms / 1000
print(f"call {call}: {len(listed)} cases ({', '.join(listed)}), {as_measured:.0f} s as measured on 2026-12-04 "
      f"(limit {limit_s:.0f} s)")
if as_measured > limit_s:
    problems.append(f"the call took {as_measured:.0f} s at 2026-12-04's durations, over {limit_s:.0f} s")
for p in problems:
    print(f"call {call}: {p}")
sys.exit(1 if problems else 0)
PY
done
if [ "$status" != 0 ]; then
    for call in $calls; do echo "---- call $call's log:"; cat "$tmp/call$call.log"; done
fi
exit "$status"
