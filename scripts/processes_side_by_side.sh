#!/usr/bin/env bash
# Two processes of one rank (mpirun -np 2, loopback) against one process of 2 virtual ranks,
# side by side: ROUNDS interleaved rounds of `owt bench` (AlexNetSmall, batch 64) under data
# parallelism and the weird trick, images/s and bytes per step, then the medians (issue 24).
# Each process gets one Flex thread when two share the 2 cores (RAYON_NUM_THREADS=1), the
# one-process runs keep both (their two ranks run side by side).
#
#   scripts/processes_side_by_side.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-4}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}"
cargo build --locked --quiet --features mpi --bin owt
OWT="$CARGO_TARGET_DIR/debug/owt"
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo
  --mca oob_tcp_if_include lo -x RAYON_NUM_THREADS=1)
BENCH=(bench --model alexnet-small --batch 64 --steps 20)
rate() { grep -o '[0-9.]* images/s' | head -1 | cut -d' ' -f1; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
for plan in data-parallel weird-trick; do
  one=(); two=()
  for i in $(seq 1 "$ROUNDS"); do
    a=$("$OWT" "${BENCH[@]}" --devices 2 --plan "$plan" | rate)
    b=$("${MPI[@]}" "$OWT" "${BENCH[@]}" --devices 1 --plan "$plan" 2>/dev/null | rate)
    one+=("$a"); two+=("$b")
    echo "$plan round $i: 1 process x 2 ranks $a, 2 processes x 1 rank $b images/s"
  done
  echo "$plan medians: 1 process x 2 ranks $(median "${one[@]}"), 2 processes x 1 rank $(median "${two[@]}") images/s"
done
echo "one step's traffic, from process 0's report of the whole job:"
"${MPI[@]}" "$OWT" "${BENCH[@]}" --devices 1 --plan weird-trick --steps 3 2>/dev/null | grep -o "[0-9]* bytes and.*"
