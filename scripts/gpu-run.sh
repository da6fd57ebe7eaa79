#!/usr/bin/env bash
# owt's GPU run: two prepared calls, each of at most 8 minutes (--budget 475 and the device
# tool's own seconds), for a GPU lent for 15 minutes with the machine's start included. Run
# call 1 first, whatever else the session means to do; call 2 right after it on the same warm
# machine (its kernel cache, --cache, is still there), if time remains. Each runs a prebuilt
# `owt` (built elsewhere with --features cuda: the GPU machine has no Rust toolchain), every
# case under its own timeout and all of them under --budget, in priority order (what comes last
# is what a short budget leaves out), and writes what it found to $OUT after every case, so a
# call stopped at its limit still returns what it did.
#
# Call 1, the headline (owt against PyTorch on one GPU; a mesh against one device):
#   a. environment: nvidia-smi, NVRTC, the CUDA headers, cuDNN and cuBLASLt (the libraries
#      found, paths and versions); starts sampling the GPU's utilisation;
#   torch: PyTorch's AlexNet (torchvision layout) at batch 128, TF32 and strict fp32, the batch
#      resident on the GPU;
#   owt_resident: AlexNetOwt at batch 128, fused, owt's default kernels (cuDNN's convolutions,
#      cuBLASLt's matmuls, TF32), resident: on an empty cache, its first step is the cold start
#      (compilation, cuDNN's searches), its timed steps the headline figure;
#   owt_strict_resident: the same in strict f32 (`--tf32 off`), PyTorch's other figure;
#   mesh_one_device, mesh_2ranks: AlexNetOwt at batch 128 on the plain backend (the kernels a
#      mesh runs) and on 2 virtual ranks of the GPU (data parallel), both `--deterministic`,
#      resident, with each parameter's gradient norm on the first batch: the mesh's losses and
#      gradients against one device's (2026-12-04: 1% apart, unexplained).
# Call 2, everything else (warm):
#   owt_warm, owt_strict: the headline cases with each batch uploaded (training's way);
#   owt_profile: the warm step layer by layer (`owt bench --profile`);
#   mesh_one_device_tf32, mesh_2ranks_tf32: the mesh pair without --deterministic (cuDNN's
#      fastest algorithms by timing), against the deterministic pair;
#   mesh_1rank: the mesh's code on the whole batch (one rank), deterministic;
#   mesh_2ranks_weird_trick_a: 2 ranks under the weird trick (scheme a), deterministic;
#   owt_profile_step_ops_off: the profile with dropout and the SGD step on Burn's tensor ops;
#   owt_cubecl_resident: the headline case on CubeCL's kernels alone (2026-12-04's
#      configuration; cold where the GPU has no autotune seeds): the libraries against CubeCL.
# What each case costs is in scripts/gpu-run-durations.tsv, from the run of 2026-12-04: a dry
# run (tests/owt/gpu_script.rs) replays both calls with stubs that sleep for those durations
# and holds each inside its limit.
#
# $OUT holds at most 6 files, none deeper than $OUT/x:
#   summary.json      the checks and every case's JSON, this call's and call 1's (rewritten
#                     after each case)
#   environment.txt   step a's findings
#   stderr.txt        every case's whole stderr, one section per case
#   utilisation.csv   unix time, busy %, memory MiB (nvidia-smi, every 0.25 s)
#   caches.tar.gz     CubeCL's autotune results, compiled kernels and cuDNN's algorithm choices
#                     (the seeds of the next run: see kernel-cache/README.md)
#   run.log           what this script did, step by step
# `--backend flex` or `--backend wgpu` runs the same steps on the CPU at small sizes, to try
# the script itself.
#
# Usage: scripts/gpu-run.sh --call 1|2 [--owt PATH] [--backend cuda|flex|wgpu] [--out DIR]
#                           [--budget S] [--cache DIR] [--only REGEX] [--time-scale F]
#   --call N        which call (1: the headline; 2: everything else)
#   --owt PATH      the owt binary, or it gzipped as PATH.gz (default ./owt, else ./owt.gz)
#   --out DIR       where results go (default $OUT, else ./gpu-run-out)
#   --budget S      seconds for all of the call's steps together (default 475)
#   --cache DIR     the kernel cache and the calls' results, kept between the calls (default
#                   ./gpu-run-cache, which git ignores: the device tool keeps it between calls
#                   on one machine, and a fresh machine starts without it, cold)
#   --only REGEX    run only the cases whose names match (the others are recorded as not
#                   selected)
#   --time-scale F  a dry run with stub binaries, which sleep for a case's duration divided
#                   by F: the cases' time counts F times over against the budget and the
#                   limits, the script's own once (the environment is not probed)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
owt=""
backend=cuda
out=${OUT:-./gpu-run-out}
budget=475
cache=./gpu-run-cache
only='.'
call=
scale=1
while [ $# -gt 0 ]; do
    case "$1" in
        --call) call=$2; shift 2 ;;
        --owt) owt=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --budget) budget=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --time-scale) scale=$2; shift 2 ;;
        -h|--help) sed -n '2,61p' "$0"; exit 0 ;;
        *) echo "gpu-run: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$call" in 1|2) ;; *) echo "gpu-run: --call is 1 (the headline) or 2 (everything else), not '${call}'" >&2; exit 2 ;; esac
case "$backend" in cuda|flex|wgpu) ;; *) echo "gpu-run: --backend is cuda, flex or wgpu, not $backend" >&2; exit 2 ;; esac
command -v python3 >/dev/null || { echo "gpu-run: python3 is needed to write the summary" >&2; exit 2; }
awk -v f="$scale" 'BEGIN { exit !(f + 0 > 0 && f ~ /^[0-9]*\.?[0-9]+$/) }' \
    || { echo "gpu-run: --time-scale is a positive number, not $scale" >&2; exit 2; }

now_ms() { date +%s%3N; }
begin=$(now_ms)
# The call's clock, in milliseconds since it began. In a dry run (--time-scale F) the cases'
# stubs sleep 1/F of their durations, so their time counts F times over, and the script's own
# time once, as on the GPU machine.
cases_ms=0
elapsed_ms() {
    local real=$(( $(now_ms) - begin ))
    awk -v r="$real" -v c="$cases_ms" -v f="$scale" 'BEGIN { printf "%d", r - c + c * f }'
}
budget_ms=$(awk -v b="$budget" 'BEGIN { printf "%d", b * 1000 }')
left_ms() { echo $(( budget_ms - $(elapsed_ms) )); }
scaled() { awk -v s="$1" -v f="$scale" 'BEGIN { printf "%.3f", s / f }'; }
mkdir -p "$out" "$cache" || exit 2
out=$(cd "$out" && pwd)
cache=$(cd "$cache" && pwd)
log() { echo "gpu-run call $call +$(( $(elapsed_ms) / 1000 ))s: $*" | tee -a "$out/run.log" >&2; }

if [ -z "$owt" ]; then
    if [ -x ./owt ]; then owt=./owt
    elif [ -f ./owt.gz ]; then gunzip -kf ./owt.gz && chmod +x ./owt && owt=./owt
    else echo "gpu-run: no owt binary: pass --owt PATH (a release build with --features cuda)" >&2; exit 2
    fi
fi
work=$(mktemp -d /tmp/owt-gpu-run.XXXXXX)
case "$owt" in
    *.gz) gunzip -c "$owt" > "$work/owt" && chmod +x "$work/owt" && owt=$work/owt || exit 2 ;;
esac
# The kernel cache, and every call's results (call 2's summary compares with call 1's cases).
export OWT_CACHE_DIR=$cache/kernels
results=$cache/results
mkdir -p "$OWT_CACHE_DIR" "$results"
touch "$results/cases.tsv"
: > "$out/stderr.txt"
if [ "$backend" = cuda ]; then
    tolerance=5e-3   # TF32 rounding between differently tuned kernels (one device against 2 ranks)
    big="--model alexnet-owt --classes 10 --batch 128"; big_steps="--warmup 3 --steps 16"; mesh_steps="--warmup 1 --steps 4"
    torch_args="--batch 128 --steps 16 --input 224"
elif [ "$backend" = flex ]; then
    tolerance=1e-4   # f32 on the CPU: the same kernels on both sides
    big="--model alexnet-owt --classes 10 --input 67 --batch 8"; big_steps="--warmup 1 --steps 3"; mesh_steps="--warmup 1 --steps 2"
    torch_args="--batch 8 --steps 3 --input 67 --cpu"
else
    # wgpu on Mesa lavapipe: AlexNetSmall at the batch its built-in autotune seeds were
    # recorded at (an unseeded shape spends minutes tuning; AlexNetOwt's fc6 weight, over 128
    # MiB, fails lavapipe's storage-binding validation).
    tolerance=1e-4
    big="--model alexnet-small --batch 64"; big_steps="--warmup 1 --steps 3"; mesh_steps="--warmup 1 --steps 2"
    torch_args="--batch 8 --steps 3 --input 67 --cpu"
fi

summarise() { python3 "$here/gpu_run.py" summary "$results" "$out" "$backend" "$tolerance" 2>>"$out/run.log"; }

# run_case NAME LIMIT COMMAND...: one case, its JSON to the results, its stderr appended whole
# to stderr.txt, the summary rewritten. Skipped when less than 20 s of the budget is left (both
# scaled by --time-scale). The stub binaries of a dry run read the case's name from GPU_RUN_CASE.
run_case() {
    local name=$1 limit=$2; shift 2
    local remaining; remaining=$(left_ms)
    local t0; t0=$(date +%s.%N)
    if ! [[ $name =~ $only ]]; then
        printf '%s\t-1\t%s\t%s\tnot selected (--only %s)\n' "$name" "$t0" "$t0" "$only" >> "$results/cases.tsv"
        return
    fi
    if [ "$remaining" -lt 20000 ]; then
        printf '%s\t-1\t%s\t%s\tout of budget (%s ms left)\n' "$name" "$t0" "$t0" "$remaining" >> "$results/cases.tsv"
        log "$name: skipped, ${remaining} ms of the budget left"
        summarise
        return
    fi
    # The case's limit, within the budget less 5 s (timeout's grace after its signal).
    local limit_s; limit_s=$(awk -v l="$limit" -v r="$remaining" 'BEGIN { b = (r - 5000) / 1000; printf "%.3f", (l < b ? l : b) }')
    log "$name (limit ${limit_s}s): $*"
    local started; started=$(now_ms)
    GPU_RUN_CASE=$name timeout -k "$(scaled 5)" "$(scaled "$limit_s")" "$@" > "$results/$name.json" 2> "$work/$name.err"
    local rc=$?
    cases_ms=$(( cases_ms + $(now_ms) - started ))
    local t1; t1=$(date +%s.%N)
    { echo "===== $name (rc $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s): $*"; cat "$work/$name.err"; echo; } >> "$out/stderr.txt"
    local IFS=$'\t'
    # A case run again (a rerun of the call) replaces its earlier line.
    grep -v "^$name	" "$results/cases.tsv" > "$work/cases.tsv"; cp "$work/cases.tsv" "$results/cases.tsv"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$t0" "$t1" "$*" >> "$results/cases.tsv"
    log "$name: rc $rc"
    summarise
}

# caches.tar.gz: what CubeCL tuned and compiled and cuDNN chose (rewritten after each owt case).
keep_caches() {
    tar -czf "$out/.caches.tar.gz.tmp" -C "$OWT_CACHE_DIR" . 2>>"$out/run.log" \
        && mv "$out/.caches.tar.gz.tmp" "$out/caches.tar.gz"
    local size; size=$(stat -c %s "$out/caches.tar.gz" 2>/dev/null || echo 0)
    if [ "$size" -gt $(( 15 * 1024 * 1024 )) ]; then
        # Over what comes back from $OUT: the autotune results and cuDNN's choices only (the seeds).
        (cd "$OWT_CACHE_DIR" && find . \( -path '*autotune*' -o -name 'cudnn-algorithms.json' \) -type f -print0 \
            | tar -czf "$out/caches.tar.gz" --null -T -)
        log "caches.tar.gz: compiled kernels left out ($size bytes with them)"
    fi
}

# a. Environment, and the utilisation sampler. A dry run (--time-scale) probes nothing: it
#    sleeps for what the probing took on 2026-12-04.
if [ "$scale" != 1 ]; then
    started=$(now_ms)
    sleep "$(scaled 7)"
    cases_ms=$(( cases_ms + $(now_ms) - started ))
    echo "dry run (--time-scale $scale): nothing probed" > "$out/environment.txt"
else
{
    echo "date: $(date -u +%FT%TZ), call $call"
    echo "owt: $owt ($("$owt" --version 2>&1))"
    echo "backend: $backend, budget ${budget}s, cache $cache"
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
fi
log "environment: $(wc -l < "$out/environment.txt") lines"
if [ "$backend" = cuda ] && [ "$scale" = 1 ]; then
    python3 "$here/gpu_run.py" sample "$out/utilisation.csv" &
else
    python3 "$here/gpu_run.py" sample "$out/utilisation.csv" --cpu &
fi
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
summarise

bench=("$owt" bench --backend "$backend" --json)
mesh_one="--no-fusion --resident --gradient-norms"
mesh_two="--devices 2 --virtual-ranks --plan data-parallel --resident --gradient-norms"
if [ "$call" = 1 ]; then
    # PyTorch's figures first: owt's are read against them.
    if ! [[ torch =~ $only ]]; then
        printf '%s\t-1\t%s\t%s\tnot selected (--only %s)\n' torch "$(date +%s.%N)" "$(date +%s.%N)" "$only" >> "$results/cases.tsv"
    elif timeout 60 python3 -c 'import torch' 2>/dev/null; then
        run_case torch 60 python3 "$here/torch_alexnet.py" $torch_args --resident-only
    else
        printf '%s\t-1\t%s\t%s\timport torch failed\n' torch "$(date +%s.%N)" "$(date +%s.%N)" >> "$results/cases.tsv"
        log "torch: import torch failed, skipped"
    fi
    run_case owt_resident 300 "${bench[@]}" $big $big_steps --resident
    keep_caches
    run_case owt_strict_resident 40 "${bench[@]}" $big $big_steps --resident --tf32 off
    run_case mesh_one_device 90 "${bench[@]}" $big $mesh_steps $mesh_one --deterministic
    run_case mesh_2ranks 90 "${bench[@]}" $big $mesh_steps $mesh_two --deterministic
    keep_caches
else
    run_case owt_warm 40 "${bench[@]}" $big $big_steps
    run_case owt_strict 40 "${bench[@]}" $big $big_steps --tf32 off
    run_case owt_profile 75 "${bench[@]}" $big --warmup 1 --steps 5 --profile
    run_case mesh_one_device_tf32 40 "${bench[@]}" $big $mesh_steps $mesh_one
    run_case mesh_2ranks_tf32 40 "${bench[@]}" $big $mesh_steps $mesh_two
    run_case mesh_1rank 40 "${bench[@]}" $big $mesh_steps --devices 1 --virtual-ranks --plan data-parallel --resident \
        --gradient-norms --deterministic
    run_case mesh_2ranks_weird_trick_a 90 "${bench[@]}" $big $mesh_steps --devices 2 --virtual-ranks --plan weird-trick \
        --scheme a --resident --gradient-norms --deterministic
    keep_caches
    run_case owt_profile_step_ops_off 60 env OWT_STEP_KERNELS=off "${bench[@]}" $big --warmup 1 --steps 5 --profile
    run_case owt_cubecl_resident 300 "${bench[@]}" $big $big_steps --resident --conv cubecl --matmul cubecl
    keep_caches
fi
kill $sampler 2>/dev/null
summarise
python3 - "$out/summary.json" <<'PY'
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
print(json.dumps({k: checks.get(k) for k in ("failed", "cases_skipped", "empty_ops", "kernels", "against_torch",
                                             "autotune")}, indent=1))
for name, m in checks["mesh_against_one_device"].items():
    print(name, "against", m["against"], "max relative gap", m["max_relative_gap"], "within", checks["mesh_tolerance"],
          m["within_tolerance"])
for name, m in checks.get("libraries_against_cubecl", {}).items():
    print(name, "against", m["against"], "max relative loss gap", m["max_relative_loss_gap"], "within", m["within_tolerance"])
PY
log "done in $(( $(elapsed_ms) / 1000 ))s ($(elapsed_ms) ms); $(ls "$out" | wc -l) files in $out"
rm -rf "$work"
