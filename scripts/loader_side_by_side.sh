#!/usr/bin/env bash
# owt's input pipeline against PyTorch's, side by side on this machine: makes its own folder of
# JPEG photographs as ImageNet's are (500 x 375, 4:2:0 chroma, about 100 KB each: crops of
# tests/fixtures/photos with a little sensor noise, saved by Pillow at quality 95; 600 training
# images), packs it (owt prepare), then ROUNDS interleaved rounds of
#   owt bench --loader on the folder with 1 and with 2 workers (bilinear, torchvision's filter),
#   the same with 2 workers and owt's own area filter,
#   owt bench --loader on the packed copy with 2 workers,
#   scripts/torch_loader.py: torchvision's ImageFolder and DataLoader, 2 workers,
# all with the same transforms (Resize(256), RandomCrop(224), RandomHorizontalFlip;
# torchvision's ToTensor besides), batches of 128, and prints each round's ratios and their
# medians. Interleaving lets a noisy neighbour hit all alike; read the medians.
#
#   scripts/loader_side_by_side.sh [ROUNDS] [PYTHON]
#
# PYTHON (default python3) must have torch, torchvision and Pillow; owt is built first (dev
# profile, the README's).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
PYTHON=${2:-python3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/owt-target}"
cargo build --locked --quiet --bin owt
OWT="$CARGO_TARGET_DIR/debug/owt"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" scripts/make_photo_folder.py "$WORK/jpeg"
"$OWT" prepare --data "$WORK/jpeg" --out "$WORK/packed" --side 256 --resize-filter bilinear >/dev/null 2>&1
bench() { "$OWT" bench --loader --batch 128 --warmup 1 "$@" | head -1 | grep -o '[0-9.]* images/s' | head -1 | cut -d' ' -f1; }
ratio() { "$PYTHON" -c "print(f'{($1) / ($2):.2f}')"; }
r2=(); ra=(); scale=(); rp=()
for i in $(seq 1 "$ROUNDS"); do
  one=$(bench --dataset folder --data "$WORK/jpeg" --workers 1 --steps 4 --resize-filter bilinear)
  two=$(bench --dataset folder --data "$WORK/jpeg" --workers 2 --steps 8 --resize-filter bilinear)
  area=$(bench --dataset folder --data "$WORK/jpeg" --workers 2 --steps 8 --resize-filter area)
  packed=$(bench --dataset packed --data "$WORK/packed" --workers 2 --steps 40 --resize-filter bilinear)
  torch=$("$PYTHON" scripts/torch_loader.py "$WORK/jpeg" 2 128 8 1 | grep -o '[0-9.]* images/s' | cut -d' ' -f1)
  r2+=("$(ratio "$two" "$torch")"); ra+=("$(ratio "$area" "$torch")")
  scale+=("$(ratio "$two" "2 * $one")"); rp+=("$(ratio "$packed" "$torch")")
  echo "round $i: owt JPEG 1 worker $one, 2 workers $two (area filter $area), packed 2 workers $packed," \
    "torchvision 2 workers $torch images/s; owt/torchvision ${r2[-1]} (area ${ra[-1]}), per worker 2/1 ${scale[-1]}," \
    "packed/torchvision ${rp[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "medians: owt JPEG / torchvision (2 workers, bilinear) $(median "${r2[@]}"), with owt's area filter" \
  "$(median "${ra[@]}"), owt per-worker rate 2 workers / 1 $(median "${scale[@]}"), packed / torchvision $(median "${rp[@]}")"
