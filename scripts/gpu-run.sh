#!/usr/bin/env bash
# owt's GPU run: one command of at most ~9 minutes for a GPU lent for 15 (machine start
# included), leaving room for one rerun. It runs a prebuilt `owt` (built elsewhere with
# --features cuda: the GPU machine has no Rust toolchain) and writes what it found to $OUT after
# every step, so a run stopped at its limit still returns what it did. In this order, each step
# under its own timeout and all of them under --budget (what comes last is what a short budget
# leaves out):
#   a. environment: nvidia-smi, NVRTC, the CUDA headers, cuDNN and cuBLASLt (paths, versions);
#      starts sampling the GPU's utilisation;
#   b. owt_cold, owt_warm, owt_warm_resident: AlexNetOwt at batch 128, fused, with owt's default
#      kernels (cuDNN's convolutions, cuBLASLt's matmuls, TF32 where the libraries load), on an
#      empty kernel cache (compilation, cuDNN's algorithm search), then warm, each batch uploaded,
#      then with the batches kept on the GPU (`--resident`, compute alone);
#   c. torch: the same AlexNet in PyTorch, TF32 and strict fp32, resident and uploaded;
#   d. owt_strict_resident, owt_strict: the warm case in strict f32 (`--tf32 off`);
#   e. owt_profile: the warm step layer by layer (`owt bench --profile`) with owt's default
#      kernels;
#   f. small_one_device, small_2ranks_data_parallel, small_2ranks_weird_trick_a: AlexNetSmall on
#      one GPU and on 2 virtual ranks of it, default kernels: losses and each parameter's
#      gradient norm on the first batch against one device's (the 2026-12-04 run found 2 ranks
#      1.03% off with CubeCL's kernels); cubecl_small_one_device: the one-device steps on
#      CubeCL's kernels alone, the libraries' numbers against CubeCL's; owt_warm_resident_packed:
#      cuDNN on packed copies of its inputs (OWT_CUDNN_PACKED=1);
#   g. owt_profile_cubecl, owt_profile_owt: the layer profile with CubeCL's kernels alone
#      (`--conv cubecl --matmul cubecl`, as on 2026-12-04) and with owt's unfolded weight
#      gradient for conv1 (`--conv owt`), each lever's share of the step;
#   h. owt_cubecl_resident: the resident case on CubeCL's kernels alone (the 2026-12-04 figure);
#   i. cubecl_small_*: the AlexNetSmall meshes of (f) on CubeCL's kernels alone (the mesh gap of
#      2026-12-04: the one-rank mesh and the resident 2-rank case too);
#   j. owt_warm_bf16: AlexNetOwt in bf16 on f32 masters.
#   k. owt_profile_step_ops_off: the layer profile of (e) with dropout and the SGD step on
#      Burn's tensor ops instead of owt's one-pass kernels (OWT_STEP_KERNELS=off).
# $OUT holds at most 6 files, none deeper than $OUT/x:
#   summary.json      the checks and every case's JSON (rewritten after each step)
#   environment.txt   step a's findings
#   stderr.txt        every case's whole stderr, one section per case
#   utilisation.csv   unix time, busy %, memory MiB (nvidia-smi, every 0.25 s)
#   caches.tar.gz     CubeCL's autotune results and compiled kernels (the seeds of the next run:
#                     see kernel-cache/README.md)
#   run.log           what this script did, step by step
# `--backend flex` or `--backend wgpu` runs the same steps on the CPU at small sizes, to try
# the script itself (`--cpu-sizes` is implied).
#
# Usage: scripts/gpu-run.sh [--owt PATH] [--backend cuda|flex|wgpu] [--out DIR] [--budget S]
#   --owt PATH    the owt binary, or it gzipped as PATH.gz (default ./owt, else ./owt.gz)
#   --out DIR     where results go (default $OUT, else ./gpu-run-out)
#   --budget S    seconds for all steps together (default 540)
#   --cache DIR   kernel cache to start from and keep (default: an empty one, so step b's
#                 first case is a cold start)
#   --only REGEX  run only the cases whose names match (the others are recorded as not
#                 selected), to split the run over two calls on one warm machine with one --cache
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
owt=""
backend=cuda
out=${OUT:-./gpu-run-out}
budget=540
cache=
only='.'
while [ $# -gt 0 ]; do
    case "$1" in
        --owt) owt=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --budget) budget=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        -h|--help) sed -n '2,47p' "$0"; exit 0 ;;
        *) echo "gpu-run: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$backend" in cuda|flex|wgpu) ;; *) echo "gpu-run: --backend is cuda, flex or wgpu, not $backend" >&2; exit 2 ;; esac
begin=$(date +%s)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
log() { echo "gpu-run +$(( $(date +%s) - begin ))s: $*" | tee -a "$out/run.log" >&2; }

if [ -z "$owt" ]; then
    if [ -x ./owt ]; then owt=./owt
    elif [ -f ./owt.gz ]; then gunzip -kf ./owt.gz && chmod +x ./owt && owt=./owt
    else echo "gpu-run: no owt binary: pass --owt PATH (a release build with --features cuda)" >&2; exit 2
    fi
fi
command -v python3 >/dev/null || { echo "gpu-run: python3 is needed to write the summary" >&2; exit 2; }

work=$(mktemp -d /tmp/owt-gpu-run.XXXXXX)
case "$owt" in
    *.gz) gunzip -c "$owt" > "$work/owt" && chmod +x "$work/owt" && owt=$work/owt || exit 2 ;;
esac
export OWT_CACHE_DIR=${cache:-$work/cache}
mkdir -p "$OWT_CACHE_DIR"
: > "$work/cases.tsv"
: > "$out/stderr.txt"
if [ "$backend" = cuda ]; then
    tolerance=5e-3   # TF32 rounding between differently tuned kernels (one device against 2 ranks)
    small="--model alexnet-small --batch 64"; small_steps="--warmup 1 --steps 4"
    big="--model alexnet-owt --classes 10 --batch 128"; big_steps="--warmup 3 --steps 16"
    torch_args="--batch 128 --steps 16 --input 224"
elif [ "$backend" = flex ]; then
    tolerance=1e-4   # f32 on the CPU: the same kernels on both sides
    small="--model alexnet-small --batch 16"; small_steps="--warmup 1 --steps 3"
    big="--model alexnet-owt --classes 10 --input 67 --batch 8"; big_steps="--warmup 1 --steps 3"
    torch_args="--batch 8 --steps 3 --input 67 --cpu"
else
    # wgpu on Mesa lavapipe: the batch its built-in autotune seeds were recorded at (an unseeded
    # shape spends minutes tuning), and AlexNetSmall for step d too: AlexNetOwt's fc6 weight
    # (over 128 MiB) fails lavapipe's storage-binding validation.
    tolerance=1e-4
    small="--model alexnet-small --batch 64"; small_steps="--warmup 1 --steps 3"
    big="--model alexnet-small --batch 64"; big_steps="--warmup 1 --steps 3"
    torch_args="--batch 8 --steps 3 --input 67 --cpu"
fi

left() { echo $(( budget - ($(date +%s) - begin) )); }
summarise() { python3 "$here/gpu_run.py" summary "$work" "$out" "$backend" "$tolerance" 2>>"$out/run.log"; }

# run_case NAME LIMIT COMMAND...: one step, its JSON to $work/NAME.json, its stderr appended
# whole to stderr.txt, the summary rewritten. Skipped when less than 20 s of the budget is left.
run_case() {
    local name=$1 limit=$2; shift 2
    local remaining; remaining=$(left)
    local t0; t0=$(date +%s.%N)
    if ! [[ $name =~ $only ]]; then
        printf '%s\t-1\t%s\t%s\tnot selected (--only %s)\n' "$name" "$t0" "$t0" "$only" >> "$work/cases.tsv"
        return
    fi
    if [ "$remaining" -lt 20 ]; then
        printf '%s\t-1\t%s\t%s\tout of budget (%ss left)\n' "$name" "$t0" "$t0" "$remaining" >> "$work/cases.tsv"
        log "$name: skipped, ${remaining}s of the budget left"
        summarise
        return
    fi
    [ "$limit" -gt $(( remaining - 5 )) ] && limit=$(( remaining - 5 ))
    log "$name (limit ${limit}s): $*"
    timeout -k 5 "$limit" "$@" > "$work/$name.json" 2> "$work/$name.err"
    local rc=$?
    local t1; t1=$(date +%s.%N)
    { echo "===== $name (rc $rc, $(python3 -c "print(round($t1 - $t0, 1))") s): $*"; cat "$work/$name.err"; echo; } >> "$out/stderr.txt"
    local IFS=$'\t'
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$t0" "$t1" "$*" >> "$work/cases.tsv"
    log "$name: rc $rc"
    summarise
}

# caches.tar.gz: what CubeCL tuned and compiled (rewritten after each owt step that fills it).
keep_caches() {
    tar -czf "$out/.caches.tar.gz.tmp" -C "$OWT_CACHE_DIR" . 2>>"$out/run.log" \
        && mv "$out/.caches.tar.gz.tmp" "$out/caches.tar.gz"
    local size; size=$(stat -c %s "$out/caches.tar.gz" 2>/dev/null || echo 0)
    if [ "$size" -gt $(( 15 * 1024 * 1024 )) ]; then
        # Over what comes back from $OUT: the autotune results only (the seeds).
        (cd "$OWT_CACHE_DIR" && find . -path '*autotune*' -type f -print0 | tar -czf "$out/caches.tar.gz" --null -T -)
        log "caches.tar.gz: compiled kernels left out ($size bytes with them)"
    fi
}

# a. Environment, and the utilisation sampler.
{
    echo "date: $(date -u +%FT%TZ)"
    echo "owt: $owt ($("$owt" --version 2>&1))"
    echo "backend: $backend, budget ${budget}s, kernel cache $OWT_CACHE_DIR"
    if [ "$backend" = cuda ]; then
        . "$here/gpu-env.sh"
        echo "nvidia-smi:"; timeout 20 nvidia-smi 2>&1 | sed 's/^/  /'
        timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | sed 's/^/  /'
        echo "NVRTC: ${GPU_ENV_NVRTC:-not found}"
        [ -n "$GPU_ENV_NVRTC" ] && ls -l "$(dirname "$GPU_ENV_NVRTC")"/libnvrtc.so* 2>&1 | sed 's/^/  /'
        echo "CUDA headers: ${GPU_ENV_HEADER:-not found} (CUDA_PATH ${CUDA_PATH:-unset})"
        [ -n "${CUDA_PATH:-}" ] && grep -m1 'define CUDA_VERSION' "$CUDA_PATH/include/cuda.h" 2>/dev/null | sed 's/^/  /'
        echo "nvcc: $(command -v nvcc >/dev/null && nvcc --version | tail -n 2 | head -n 1 || echo none)"
        echo "/proc/driver/nvidia/version: $(cat /proc/driver/nvidia/version 2>/dev/null | head -n 1 || echo missing)"
        echo "NCCL: $(ldconfig -p 2>/dev/null | grep -m1 libnccl || find / -name 'libnccl.so*' 2>/dev/null | head -n 1)"
        echo "cuDNN: ${GPU_ENV_CUDNN:-not found}"
        [ -n "$GPU_ENV_CUDNN" ] && ls "$(dirname "$GPU_ENV_CUDNN")" 2>&1 | tr '\n' ' ' | sed 's/^/  /; s/$/\n/'
        echo "cuBLASLt: ${GPU_ENV_CUBLASLT:-not found}"
        echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
    else
        echo "CPU try-out: $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    fi
    echo "python: $(python3 --version 2>&1); torch: $(timeout 60 python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -n 1)"
} > "$out/environment.txt" 2>&1
log "environment: $(wc -l < "$out/environment.txt") lines"
if [ "$backend" = cuda ]; then
    python3 "$here/gpu_run.py" sample "$out/utilisation.csv" &
else
    python3 "$here/gpu_run.py" sample "$out/utilisation.csv" --cpu &
fi
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
summarise

# b. AlexNetOwt at batch 128, fused, owt's default kernels: cold (nothing compiled or searched
#    for its shapes yet), warm, warm with the batches on the GPU.
run_case owt_cold 210 "$owt" bench --backend "$backend" --json $big $big_steps
keep_caches
run_case owt_warm 60 "$owt" bench --backend "$backend" --json $big $big_steps
keep_caches
run_case owt_warm_resident 60 "$owt" bench --backend "$backend" --json $big $big_steps --resident
# c. PyTorch on the same shapes: TF32 and strict fp32, resident and uploaded.
if ! [[ torch =~ $only ]]; then
    printf '%s\t-1\t%s\t%s\tnot selected (--only %s)\n' torch "$(date +%s.%N)" "$(date +%s.%N)" "$only" >> "$work/cases.tsv"
elif timeout 60 python3 -c 'import torch' 2>/dev/null; then
    run_case torch 100 python3 "$here/torch_alexnet.py" $torch_args
else
    printf '%s\t-1\t%s\t%s\timport torch failed\n' torch "$(date +%s.%N)" "$(date +%s.%N)" >> "$work/cases.tsv"
    log "torch: import torch failed, skipped"
fi
# d. Strict f32 (cuDNN in FMA math, cuBLASLt in f32): PyTorch's other figure.
run_case owt_strict_resident 60 "$owt" bench --backend "$backend" --json $big $big_steps --resident --tf32 off
keep_caches
run_case owt_strict 60 "$owt" bench --backend "$backend" --json $big $big_steps --tf32 off
# e. Where the warm step's time goes, layer by layer (medians of 5 runs of each layer).
run_case owt_profile 60 "$owt" bench --backend "$backend" --json $big --warmup 1 --steps 5 --profile
# f. AlexNetSmall on one device (the plain backend: the kernels the meshes use) and on two
#    virtual ranks of it, owt's default kernels.
run_case small_one_device 90 "$owt" bench --backend "$backend" --json $small $small_steps --no-fusion --gradient-norms
run_case small_2ranks_data_parallel 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 2 --virtual-ranks --plan data-parallel --gradient-norms
run_case small_2ranks_weird_trick_a 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 2 --virtual-ranks --plan weird-trick --scheme a --gradient-norms
# The same one-device steps on CubeCL's kernels alone: the libraries' numbers against CubeCL's
# (losses and first-batch gradient norms within TF32's tolerance).
cubecl="--conv cubecl --matmul cubecl"
run_case cubecl_small_one_device 90 "$owt" bench --backend "$backend" --json $small $small_steps --no-fusion \
    --gradient-norms $cubecl
keep_caches
# cuDNN on packed copies of its inputs (CubeCL pads rows; some of cuDNN's algorithms take
# packed tensors only): whether the copies pay.
run_case owt_warm_resident_packed 60 env OWT_CUDNN_PACKED=1 "$owt" bench --backend "$backend" --json $big $big_steps --resident
# g. The layer profile without the libraries: CubeCL's kernels alone, then with owt's unfolded
#    GEMM for conv1's weight gradient.
run_case owt_profile_cubecl 120 "$owt" bench --backend "$backend" --json $big --warmup 1 --steps 5 --profile \
    --conv cubecl --matmul cubecl
keep_caches
run_case owt_profile_owt 60 "$owt" bench --backend "$backend" --json $big --warmup 1 --steps 5 --profile \
    --conv owt --matmul cubecl
# h. The resident case on CubeCL's kernels alone (2026-12-04's configuration).
run_case owt_cubecl_resident 90 "$owt" bench --backend "$backend" --json $big $big_steps --resident \
    --conv cubecl --matmul cubecl
keep_caches
# i. The AlexNetSmall meshes on CubeCL's kernels alone: the 2026-12-04 mesh gap.
run_case cubecl_small_1rank_mesh 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 1 --virtual-ranks --plan data-parallel --gradient-norms $cubecl
run_case cubecl_small_2ranks_data_parallel 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 2 --virtual-ranks --plan data-parallel --gradient-norms $cubecl
run_case cubecl_small_2ranks_weird_trick_a 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 2 --virtual-ranks --plan weird-trick --scheme a --gradient-norms $cubecl
run_case cubecl_small_2ranks_data_parallel_resident 60 "$owt" bench --backend "$backend" --json $small $small_steps \
    --devices 2 --virtual-ranks --plan data-parallel --resident --gradient-norms $cubecl
keep_caches
# j. AlexNetOwt in bf16 on f32 masters (issue 42 point 3), if the budget allows.
run_case owt_warm_bf16 60 "$owt" bench --backend "$backend" --json $big $big_steps --precision bf16
# k. The layer profile with the step's small ops on Burn's tensor ops (OWT_STEP_KERNELS=off):
#    dropout's and the optimizer's rows against (e)'s one-pass kernels, if the budget allows.
run_case owt_profile_step_ops_off 60 env OWT_STEP_KERNELS=off "$owt" bench --backend "$backend" --json $big --warmup 1 --steps 5 --profile
kill $sampler 2>/dev/null
summarise
python3 - "$out/summary.json" <<'PY'
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
print(json.dumps({k: checks.get(k) for k in ("failed", "cases_skipped", "empty_ops", "kernels", "owt_cold", "owt_warm",
                                             "against_torch")}, indent=1))
for name, m in checks["mesh_against_one_device"].items():
    print(name, "max relative gap", m["max_relative_gap"], "within", checks["mesh_tolerance"], m["within_tolerance"])
for name, m in checks.get("libraries_against_cubecl", {}).items():
    print(name, "against", m["against"], "max relative loss gap", m["max_relative_loss_gap"], "within", m["within_tolerance"])
PY
log "done in $(( $(date +%s) - begin ))s; $(ls "$out" | wc -l) files in $out"
rm -rf "$work"
