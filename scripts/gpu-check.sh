#!/usr/bin/env bash
# owt's long GPU check (for a GPU lent for longer than 15 minutes; scripts/gpu-run.sh is the
# 15-minute run, and writes its results as it goes): runs a prebuilt `owt` (built elsewhere with --features cuda) on this machine,
# which needs no Rust toolchain and no network, and writes one JSON with what it measured:
#   - cold and warm starts (the first step with an empty kernel cache, then with a warm one);
#   - `owt bench` for AlexNetOwt at batch 128 on one GPU (Cuda with fusion, and plain
#     CubeBackend) and for AlexNetSmall;
#   - Hybrid on K = 1, 2, 4 virtual ranks of GPU 0 for weird-trick a/b/c and data-parallel,
#     and two-tower on AlexNet2012 at K = 2, each with its loss after 5 steps against the
#     single-device run (relative difference);
#   - the same AlexNet in PyTorch on the same GPU, strict fp32, when `import torch` works,
#     and owt's images/s as a ratio of it;
#   - two processes under mpirun (one rank each, data-parallel and weird trick a) when a build
#     with the mpi feature is given (--owt-mpi) and mpirun is on the machine: NCCL across the
#     processes where each has its own GPU, host staging over MPI where they share one (the
#     JSON says which ran), losses against the single-device run.
# `--backend flex` runs the same cases on the CPU at reduced sizes (to try the script itself).
#
# Usage: scripts/gpu-check.sh [--owt PATH] [--owt-mpi PATH] [--backend cuda|flex] [--out FILE] [--quick]
#   --owt PATH   the owt binary (default: ./owt, else ./owt.gz unpacked next to it)
#   --owt-mpi PATH  an owt built with --features cuda,mpi (links libmpi: a separate binary, so
#                the rest runs where Open MPI is absent); default ./owt-mpi(.gz) if present
#   --out FILE   where the JSON goes (default: gpu-check.json)
#   --quick      fewer cases (K = 2 only, scheme a, no two-tower): each new per-rank batch
#                size is tuned on first use, so on a cold kernel cache the full set takes
#                much longer than a 15-minute GPU slot
#   --case-timeout S  seconds one case may run (default 600)
#   --only REGEX      run only the cases whose names match (e.g. 'cold|warm|owt_'), to split
#                     the check over several calls of at most 10 minutes each
#   --cache DIR       kernel cache to use and keep (default: a fresh one in the work dir);
#                     pass the same DIR to every split call so later calls start warm
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
owt=""
owt_mpi=""
backend=cuda
out=gpu-check.json
quick=0
case_timeout=600
only='.'
cache=
while [ $# -gt 0 ]; do
    case "$1" in
        --owt) owt=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --case-timeout) case_timeout=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        --owt-mpi) owt_mpi=$2; shift 2 ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ -z "$owt" ]; then
    if [ -x ./owt ]; then owt=./owt
    elif [ -f ./owt.gz ]; then gunzip -kf ./owt.gz && chmod +x ./owt && owt=./owt
    else echo "gpu-check: no owt binary: pass --owt PATH (a release build with --features cuda)" >&2; exit 2
    fi
fi
if [ -z "$owt_mpi" ]; then
    if [ -x ./owt-mpi ]; then owt_mpi=./owt-mpi
    elif [ -f ./owt-mpi.gz ]; then gunzip -kf ./owt-mpi.gz && chmod +x ./owt-mpi && owt_mpi=./owt-mpi
    fi
fi
command -v python3 >/dev/null || { echo "gpu-check: python3 is needed to write the JSON" >&2; exit 2; }

work=$(mktemp -d /tmp/owt-gpu-check.XXXXXX)
export OWT_CACHE_DIR=${cache:-$work/cache}
touch "$work/cases.txt"
echo "gpu-check: owt $owt, backend $backend, work in $work, kernel cache in $OWT_CACHE_DIR" >&2

if [ "$backend" = cuda ]; then
    . "$here/gpu-env.sh"
    nvrtc=$GPU_ENV_NVRTC
    echo "gpu-check: NVRTC ${nvrtc:-not found}, CUDA_PATH ${CUDA_PATH:-unset}" >&2
    big="--model alexnet-owt --classes 10"; side=224; batch=128; small_batch=128; warm=3; steps=16
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$work/gpu.txt" 2>/dev/null
else
    big="--model alexnet-owt --classes 10 --input 67"; side=67; batch=8; small_batch=32; warm=1; steps=4
    echo "$backend (CPU try-out)" > "$work/gpu.txt"
fi

# Runs `owt bench` for one case; its JSON (or its error) lands in $work/<name>.json/.err.
run_case() {
    local name=$1; shift
    [[ $name =~ $only ]] || return 0
    local start=$(date +%s%N)
    timeout "$case_timeout" "$owt" bench --backend "$backend" --json "$@" > "$work/$name.json" 2> "$work/$name.err"
    local rc=$?
    local end=$(date +%s%N)
    echo "$name $rc $(( (end - start) / 1000000 )) $*" >> "$work/cases.txt"
    echo "gpu-check: $name rc=$rc" >&2
}

# Cold, then warm: the same small run twice with one cache directory.
run_case cold_start --model alexnet-small --batch "$small_batch" --warmup 0 --steps 3
run_case warm_start --model alexnet-small --batch "$small_batch" --warmup 0 --steps 3

# One device.
run_case owt_fused $big --batch "$batch" --warmup "$warm" --steps "$steps"
run_case owt_plain $big --batch "$batch" --warmup "$warm" --steps "$steps" --no-fusion
run_case small_fused --model alexnet-small --batch "$small_batch" --warmup "$warm" --steps "$steps"

# Hybrid on virtual ranks of one device; 5 steps each are compared with owt_plain's first 5.
if [ "$quick" = 1 ]; then ks="2"; schemes="a"; else ks="1 2 4"; schemes="a b c"; fi
for k in $ks; do
    for s in $schemes; do
        run_case "hybrid_k${k}_weird_trick_${s}" $big --batch "$batch" --warmup "$warm" --steps "$steps" \
            --devices "$k" --plan weird-trick --scheme "$s" --virtual-ranks
    done
    run_case "hybrid_k${k}_data_parallel" $big --batch "$batch" --warmup "$warm" --steps "$steps" \
        --devices "$k" --plan data-parallel --virtual-ranks
done
if [ "$quick" = 0 ]; then
    tower="--model alexnet-2012 --classes 10"
    [ "$backend" = cuda ] || tower="$tower --input 67"
    run_case tower_single $tower --batch "$batch" --warmup "$warm" --steps "$steps" --no-fusion
    run_case hybrid_k2_two_tower $tower --batch "$batch" --warmup "$warm" --steps "$steps" \
        --devices 2 --plan two-tower --virtual-ranks
fi

# Two processes of one rank each under mpirun (loopback), when an mpi build and mpirun exist.
run_case_mpi() {
    local name=$1; shift
    [[ $name =~ $only ]] || return 0
    if [ -z "$owt_mpi" ] || ! command -v mpirun >/dev/null; then
        echo "not run: needs --owt-mpi (a build with --features cuda,mpi) and mpirun on this machine" > "$work/$name.err"
        echo "$name 0 0 skipped" >> "$work/cases.txt"
        return 0
    fi
    local start=$(date +%s%N)
    timeout "$case_timeout" mpirun -np 2 --allow-run-as-root --oversubscribe --mca btl self,tcp \
        --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
        -x OWT_CACHE_DIR -x LD_LIBRARY_PATH -x CUDA_PATH -x RAYON_NUM_THREADS=1 \
        "$owt_mpi" bench --backend "$backend" --json "$@" > "$work/$name.json" 2> "$work/$name.err"
    local rc=$?
    local end=$(date +%s%N)
    echo "$name $rc $(( (end - start) / 1000000 )) $*" >> "$work/cases.txt"
    echo "gpu-check: $name rc=$rc" >&2
}
run_case_mpi procs2_data_parallel $big --batch "$batch" --warmup "$warm" --steps "$steps" --devices 1 --plan data-parallel
run_case_mpi procs2_weird_trick_a $big --batch "$batch" --warmup "$warm" --steps "$steps" --devices 1 --plan weird-trick --scheme a

# PyTorch on the same device, when it is installed (case name: torch).
if ! [[ torch =~ $only ]]; then
    echo "not run (--only $only)" > "$work/torch.err"
elif python3 -c 'import torch' 2>/dev/null; then
    if [ "$backend" = cuda ]; then
        timeout 600 python3 "$here/torch_alexnet.py" --batch "$batch" --steps "$steps" --input "$side" > "$work/torch.json" 2> "$work/torch.err"
    else
        timeout 600 python3 "$here/torch_alexnet.py" --batch "$batch" --steps "$steps" --input "$side" --cpu > "$work/torch.json" 2> "$work/torch.err"
    fi
else
    echo "import torch failed" > "$work/torch.err"
fi

python3 - "$work" "$out" "$backend" <<'PY'
import json, os, sys

work, out, backend = sys.argv[1], sys.argv[2], sys.argv[3]

def load(name):
    try:
        with open(os.path.join(work, name + ".json")) as f:
            return json.load(f)
    except Exception:
        try:
            err = open(os.path.join(work, name + ".err")).read().strip().splitlines()
        except Exception:
            err = []
        return {"error": err[-1] if err else "no output"}

cases = {}
for line in open(os.path.join(work, "cases.txt")):
    name, rc, millis, *args = line.split()
    if args == ["skipped"]:
        cases[name] = {"skipped": open(os.path.join(work, name + ".err")).read().strip()}
        continue
    case = load(name)
    if name.startswith("procs2_"):
        err = open(os.path.join(work, name + ".err")).read()
        case["gradients_across_processes"] = "MPI on the host" if "through MPI on the host" in err else 'NCCL'
    case["rc"] = int(rc)
    case["wall_s"] = int(millis) / 1000
    case["args"] = " ".join(args)
    cases[name] = case

def loss5(case):
    losses = case.get("losses") or []
    return losses[4] if len(losses) >= 5 else None

checks = {"crashes": sorted(n for n, c in cases.items() if "skipped" not in c and (c["rc"] != 0 or "error" in c))}
mesh = {}
for name, case in cases.items():
    if not name.startswith(("hybrid_", "procs2_")) or "skipped" in case:
        continue
    ref = cases.get("tower_single" if "two_tower" in name else "owt_plain", {})
    a, b = loss5(case), loss5(ref)
    mesh[name] = {"loss_step5": a, "single_device_loss_step5": b,
                  "relative_difference": abs(a - b) / abs(b) if a is not None and b else None,
                  "images_per_s": case.get("images_per_s"), "median_step_ms": case.get("median_step_ms"),
                  "bytes_per_step": case.get("bytes_per_step"), "empty_ops": case.get("empty_ops"),
                  "fallbacks": case.get("fallbacks"),
                  "gradients_across_processes": case.get("gradients_across_processes")}
diffs = [m["relative_difference"] for m in mesh.values() if m["relative_difference"] is not None]
checks["mesh_loss_max_relative_difference"] = max(diffs) if diffs else None
checks["mesh_losses_within_1e-3"] = bool(diffs) and max(diffs) <= 1e-3
k1 = cases.get("hybrid_k1_weird_trick_a", {}).get("median_step_ms")
plain = cases.get("owt_plain", {}).get("median_step_ms")
checks["hybrid_k1_over_plain_step_time"] = k1 / plain if k1 and plain else None
cold = cases.get("cold_start", {}).get("first_step_ms")
warm = cases.get("warm_start", {}).get("first_step_ms")
checks["cold_first_step_ms"], checks["warm_first_step_ms"] = cold, warm
checks["cold_start_wall_s"] = cases.get("cold_start", {}).get("wall_s")
checks["warm_start_wall_s"] = cases.get("warm_start", {}).get("wall_s")

torch = None
try:
    torch = json.load(open(os.path.join(work, "torch.json")))
except Exception:
    torch = {"error": open(os.path.join(work, "torch.err")).read().strip()[-300:]}
ratio = None
fused = cases.get("owt_fused", {}).get("images_per_s")
if torch and "fp32_strict_device_resident" in torch and fused:
    ratio = fused / torch["fp32_strict_device_resident"]["images_per_s"]
checks["owt_over_torch_fp32_strict"] = ratio

report = {"backend": backend, "device": open(os.path.join(work, "gpu.txt")).read().strip(),
          "checks": checks, "mesh": mesh, "cases": cases, "torch": torch}
with open(out, "w") as f:
    json.dump(report, f, indent=2)
print(json.dumps(checks, indent=2))
PY
echo "gpu-check: wrote $out" >&2
