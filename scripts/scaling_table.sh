#!/usr/bin/env bash
# The 2014 paper's scaling table at small scale (issue 26, point 3): AlexNetSmall on a subset of
# Fashion-MNIST, 128 images per rank on K = 1, 2, 4, 8 virtual ranks under the weird trick,
# per-step against per-chunk FC updates and linear against square-root learning-rate scaling
# (base rate 0.01 at batch 128), the same seed, subset and epochs for every row. Prints a
# Markdown table of the last epoch's test accuracy (top-1 and top-5) and losses.
#
# usage: scripts/scaling_table.sh [OWT_BINARY] [OUT_DIR]   (LIMIT, EPOCHS from the environment)
set -euo pipefail
owt="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}/debug/owt}"
out="${2:-runs/scaling}"
limit="${LIMIT:-8192}"
epochs="${EPOCHS:-3}"
mkdir -p "$out"
run() { # K fc-update lr-scaling
    local k=$1 update=$2 scaling=$3 dir="$out/k$1-$2-$3"
    if [ ! -f "$dir/metrics.json" ]; then
        "$owt" train --model alexnet-small --dataset fashion-mnist --limit "$limit" --epochs "$epochs" \
            --batch $((128 * k)) --lr 0.01 --base-batch 128 --lr-scaling "$scaling" --seed 0 \
            --devices "$k" --plan weird-trick --fc-update "$update" --out "$dir" --overwrite \
            > "$dir.log" 2>&1 || echo "k=$k $update $scaling failed: $(tail -1 "$dir.log")" >&2
    fi
}
run 1 per-step linear
for k in 2 4 8; do
    run "$k" per-step linear
    run "$k" per-chunk linear
    run "$k" per-step sqrt
done
echo "| K | batch | FC update | lr scaling | lr | test accuracy | test top-5 | test loss | train loss |"
echo "|---|---|---|---|---|---|---|---|---|"
for dir in "$out"/k*-*-*/; do
    name=$(basename "$dir")
    python3 - "$dir/metrics.json" "$name" <<'PY' || echo "| $name | failed | | | | | | | |"
import json, sys
m = json.load(open(sys.argv[1]))[-1]
k, update, scaling = sys.argv[2][1:].split("-", 1)[0], *sys.argv[2].split("-", 1)[1].rsplit("-", 1)
top5 = m.get("test_top5_accuracy")
top5 = f"{100 * top5:.2f}%" if top5 is not None else "-"
print(f"| {k} | {128 * int(k)} | {update} | {scaling} | {m['lr']:.4g} | {100 * m['test_accuracy']:.2f}% | {top5} | {m['test_loss']:.4f} | {m['train_loss']:.4f} |")
PY
done | sort -t'|' -k2,2n -k4,4 -k5,5
