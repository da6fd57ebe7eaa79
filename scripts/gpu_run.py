"""Helpers of scripts/gpu-run.sh (standard library only: the GPU machine has python3, not
always anything else).

  python3 gpu_run.py sample FILE [--cpu]   appends "unix_time,busy_percent,memory_mib" lines
                                            every 0.25 s until killed: the GPU's utilisation
                                            from nvidia-smi, or with --cpu the CPUs' busy share
                                            from /proc/stat (to try the script without a GPU)
  python3 gpu_run.py summary RESULTS OUT BACKEND TOLERANCE
                                            (re)writes OUT/summary.json from the cases recorded
                                            in RESULTS/cases.tsv (both calls') and their JSON in
                                            RESULTS
"""
import json
import os
import subprocess
import sys
import time


def sample(path, cpu):
    def cpu_times():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle

    last = cpu_times() if cpu else None
    with open(path, "a", buffering=1) as out:
        while True:
            time.sleep(0.25)
            now = time.time()
            if cpu:
                total, idle = cpu_times()
                dt, di = total - last[0], idle - last[1]
                last = (total, idle)
                busy = 100.0 * (dt - di) / dt if dt > 0 else 0.0
                out.write(f"{now:.3f},{busy:.1f},0\n")
                continue
            try:
                line = subprocess.run(
                    ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=5,
                ).stdout.strip().splitlines()[0]
                util, mem = [x.strip() for x in line.split(",")[:2]]
                out.write(f"{now:.3f},{util},{mem}\n")
            except Exception as e:  # no nvidia-smi, or it failed: say so once a second
                out.write(f"{now:.3f},,,{type(e).__name__}\n")
                time.sleep(0.75)


def load_json(path):
    try:
        with open(path) as f:
            text = f.read()
        # `owt bench --json` prints one JSON document; anything before it is not JSON.
        start = min([i for i in (text.find("{"), text.find("[")) if i >= 0], default=-1)
        return json.loads(text[start:]) if start >= 0 else None
    except Exception:
        return None


def samples(work):
    rows = []
    try:
        with open(os.path.join(work, "utilisation.csv")) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) >= 2 and parts[1]:
                    rows.append((float(parts[0]), float(parts[1]), float(parts[2] or 0)))
    except FileNotFoundError:
        pass
    return rows


def mean_in(rows, t0, t1):
    inside = [u for t, u, _ in rows if t0 <= t <= t1]
    return (round(sum(inside) / len(inside), 1), len(inside)) if inside else (None, 0)


def summary(work, out, backend, tolerance):
    tolerance = float(tolerance)
    rows = samples(out)
    cases = {}
    order = []
    path = os.path.join(work, "cases.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                name, rc, t0, t1, *args = line.rstrip("\n").split("\t")
                t0, t1 = float(t0), float(t1)
                # Paths inside the checkout as the repository names them (the summary is kept there).
                shown = " ".join(args).replace(os.getcwd().rstrip("/") + "/", "")
                case = {"rc": int(rc), "wall_s": round(t1 - t0, 2), "args": shown}
                if int(rc) == 124 or int(rc) == 137:
                    case["timed_out"] = True
                if rc == "-1":
                    case["skipped"] = " ".join(args)
                result = load_json(os.path.join(work, name + ".json"))
                if isinstance(result, dict):
                    case["result"] = result
                util, n = mean_in(rows, t0, t1)
                case["busy_percent_mean"], case["busy_samples"] = util, n
                if isinstance(result, dict) and result.get("timed_window_unix_s"):
                    # The samples taken while the timed steps ran, as the benchmark clocked them.
                    w0, w1 = result["timed_window_unix_s"]
                    util, n = mean_in(rows, w0, w1)
                    case["busy_percent_timed_steps"], case["busy_samples_timed_steps"] = util, n
                elif isinstance(result, dict) and result.get("images_per_s"):
                    # Older owt: the timed steps are the case's last `steps * batch / images_per_s`
                    # seconds before the process reports (teardown is short next to them).
                    timed = result.get("steps", 0) * result.get("batch", 0) / result["images_per_s"]
                    util, n = mean_in(rows, t1 - timed - 0.5, t1 - 0.25)
                    case["busy_percent_timed_steps"], case["busy_samples_timed_steps"] = util, n
                cases[name] = case
                order.append(name)

    def result(name):
        return (cases.get(name) or {}).get("result") or {}

    checks = {}
    checks["cases_run"] = [n for n in order if "skipped" not in cases[n]]
    checks["cases_skipped"] = [n for n in order if "skipped" in cases[n]]
    checks["failed"] = [n for n in checks["cases_run"] if cases[n]["rc"] != 0 or not cases[n].get("result")]
    checks["empty_ops"] = {n: result(n).get("empty_ops") for n in order if "empty_ops" in result(n)}
    checks["fallbacks"] = {n: result(n).get("fallbacks") for n in order if "fallbacks" in result(n)}
    # Each mesh case against the one-device case it is compared with: the deterministic pair,
    # the pair without --deterministic, the one-rank mesh and the weird trick.
    pairs = (("mesh_2ranks", "mesh_one_device"), ("mesh_1rank", "mesh_one_device"),
             ("mesh_2ranks_weird_trick_a", "mesh_one_device"), ("mesh_2ranks_tf32", "mesh_one_device_tf32"),
             ("mesh_one_device_tf32", "mesh_one_device"))
    mesh = {}
    for name, one in pairs:
        losses, reference = result(name).get("losses") or [], result(one).get("losses") or []
        if not losses and not reference:
            continue
        gaps = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, reference)]
        mesh[name] = {"against": one, "losses": losses, "one_device_losses": reference,
                      "max_relative_gap": max(gaps) if gaps else None,
                      "within_tolerance": bool(gaps) and max(gaps) <= tolerance,
                      "bit_for_bit": bool(gaps) and losses == reference}
        # The first batch's gradient norms, parameter by parameter, largest gap first.
        norms = result(name).get("gradient_norms") or {}
        ref_norms = result(one).get("gradient_norms") or {}
        gaps = {p: abs(n - ref_norms[p]) / max(abs(ref_norms[p]), 1e-30) for p, n in norms.items() if p in ref_norms}
        mesh[name]["gradient_norm_gaps"] = dict(sorted(gaps.items(), key=lambda kv: -kv[1]))
    checks["mesh_against_one_device"] = mesh
    # The libraries' numbers against CubeCL's on the same steps (AlexNetOwt resident: losses).
    libraries = {}
    for ours, theirs in (("owt_resident", "owt_cubecl_resident"),):
        a, b = result(ours).get("losses") or [], result(theirs).get("losses") or []
        if not a or not b:
            continue
        gaps = [abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)]
        libraries[ours] = {"against": theirs, "max_relative_loss_gap": max(gaps),
                           "within_tolerance": max(gaps) <= tolerance}
    checks["libraries_against_cubecl"] = libraries
    checks["mesh_tolerance"] = tolerance
    # Every AlexNetOwt benchmark: its rate, step times, the GPU's busy share over its timed steps,
    # which kernels ran how many calls and why any went to CubeCL, the ops not strict under
    # --tf32 off, and what autotuning did.
    benches = {}
    for name in order:
        r, c = result(name), cases.get(name) or {}
        if not name.startswith(("owt_", "mesh_")) or "images_per_s" not in r:
            continue
        kernels = r.get("cuda_kernels") or {}
        benches[name] = {k: r.get(k) for k in ("images_per_s", "median_step_ms", "first_step_ms", "batch", "resident",
                                                "deterministic", "autotune", "fallbacks")} | {
            "busy_percent_timed_steps": c.get("busy_percent_timed_steps"), "wall_s": c.get("wall_s"),
            "kernel_calls": kernels.get("usage"), "declines": kernels.get("declines"),
            "not_strict": kernels.get("not_strict")}
    checks["benchmarks"] = benches
    checks["owt_cold"] = {"first_step_ms": result("owt_resident").get("first_step_ms"),
                          "wall_s": (cases.get("owt_resident") or {}).get("wall_s")}
    checks["autotune"] = {n: b.get("autotune") for n, b in benches.items() if b.get("autotune")}
    installed = (result("owt_resident").get("cuda_kernels") or result("owt_warm").get("cuda_kernels") or {}).get("installed")
    checks["kernels"] = installed
    torch = result("torch")
    against = {}
    for case, key in (("owt_resident", "tf32_device_resident"), ("owt_strict_resident", "fp32_strict_device_resident"),
                      ("owt_warm", "tf32_from_host_u8"), ("owt_strict", "fp32_strict_from_host_u8"),
                      ("owt_cubecl_resident", "tf32_device_resident")):
        ours = (benches.get(case) or {}).get("images_per_s")
        theirs = (torch.get(key) or {}).get("images_per_s")
        against[case] = {"owt_images_per_s": ours, "torch": key, "torch_images_per_s": theirs,
                         "ratio": round(ours / theirs, 3) if ours and theirs else None}
    checks["against_torch"] = against
    versions = result("owt_resident").get("cuda") or result("owt_warm").get("cuda")
    report = {"backend": backend, "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "versions": versions, "checks": checks, "cases": cases, "utilisation_samples": len(rows)}
    tmp = os.path.join(out, ".summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, os.path.join(out, "summary.json"))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "sample":
        sample(sys.argv[2], "--cpu" in sys.argv[3:])
    elif len(sys.argv) == 6 and sys.argv[1] == "summary":
        summary(*sys.argv[2:])
    else:
        sys.exit(__doc__)
