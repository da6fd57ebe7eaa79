#!/usr/bin/env bash
# owt against PyTorch on the CPU, side by side: ROUNDS interleaved rounds of `owt bench`
# (AlexNetSmall, batch 64) on one rank and on 2 virtual ranks under data parallelism, and
# scripts/torch_alexnet_small_cpu.py (2 threads), each round's ratios, then the
# median ratio of each. Interleaving lets a noisy neighbour hit all three alike; read the
# medians, not one round (issue 23).
#
#   scripts/side_by_side.sh [ROUNDS] [PYTHON]
#
# PYTHON (default python3) must have torch; the owt binary is built first (dev profile).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
PYTHON=${2:-python3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}"
cargo build --locked --quiet --bin owt
OWT="$CARGO_TARGET_DIR/debug/owt"
TORCH=scripts/torch_alexnet_small_cpu.py
rate() { grep -o '[0-9.]* images/s' | head -1 | cut -d' ' -f1; }
one=(); two=()
for i in $(seq 1 "$ROUNDS"); do
  a=$("$OWT" bench --model alexnet-small --batch 64 --steps 30 | rate)
  b=$("$OWT" bench --model alexnet-small --batch 64 --steps 30 --devices 2 --plan data-parallel | rate)
  t=$("$PYTHON" "$TORCH" 64 30 2 2>/dev/null | grep -o '[0-9.]* img/s' | cut -d' ' -f1)
  r1=$("$PYTHON" -c "print(f'{$a / $t:.2f}')"); r2=$("$PYTHON" -c "print(f'{$b / $t:.2f}')")
  one+=("$r1"); two+=("$r2")
  echo "round $i: owt one rank $a, owt 2 ranks data-parallel $b, PyTorch $t images/s; ratios $r1, $r2"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "median ratio to PyTorch: one rank $(median "${one[@]}"), 2 ranks data-parallel $(median "${two[@]}")"
