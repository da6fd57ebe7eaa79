#!/usr/bin/env python3
"""Krizhevsky 2014 ("one weird trick", arXiv 1404.5997) speedups on 2/4/8 GPUs:
(1) owt's current cost model (backend/src/analysis/cost_model.rs, gtx580-pcie), reconstructed op by op
    in ops.py, and (2) the same compute with the communication priced on a tiered PCIe
    topology (pairs behind PCIe switches, two switches per socket, host-staged QPI between
    sockets) with a per-link contention rule.  No constant is fitted, per K or otherwise.

Run: python3 scripts/tiers/topo.py  (a study for issue 25 point 5, not yet in cost_model.rs)
"""
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops

PAPER = {2: 1.95, 4: 3.74, 8: 6.25}
README = {2: (2.01, 2.03), 4: (4.01, 4.07), 8: (7.85, 8.12)}   # owt README, serial / overlapped

# ---------------------------------------------------------------- topology (assumptions)
# Level l is the uplink of a subtree of s_l consecutive GPUs (rank r on GPU r):
#   l=0  s=1  GPU <-> its PCIe switch, x16 PCIe 2.0, ~6 GB/s/dir effective (the preset's link_gbps)
#   l=1  s=2  PCIe switch upstream <-> CPU root complex, x16, ~6 GB/s/dir, shared by the pair
#   l=2  s=4  socket <-> socket: no GPU peer-to-peer across the CPUs' root complexes, so a copy
#             is staged through host memory (D2H, QPI, H2D): two PCIe copies in series, 6/2 GB/s
TIERS = [  # (subtree size, GB/s per direction, latency us, name)
    (1, 6.0, 10.0, "gpu-switch x16"),
    (2, 6.0, 10.0, "switch upstream x16"),
    (4, 3.0, 20.0, "QPI, host-staged"),
]

def crossed(K, tiers):
    """Tiers whose uplink a K-rank job (GPUs 0..K-1) uses: subtrees smaller than the job."""
    return [t for t in tiers if t[0] < K]

def contention(pattern, K, s):
    """Transfers sharing the uplink of one s-GPU subtree, per direction, in one round."""
    if pattern == "all_to_all":     # every rank's piece to every other rank at once
        return s * (K - s)
    if pattern == "one_to_all":     # one sender's piece to the K-1 others (no PCIe multicast)
        return K - s
    if pattern == "ring":           # each rank to its neighbour, ring in GPU order
        return 1
    raise ValueError(pattern)

def round_seconds(pattern, K, piece, tiers):
    ts = crossed(K, tiers)
    if not ts:
        return 0.0
    data = max(contention(pattern, K, s) * piece / (bw * 1e9) for s, bw, _, _ in ts)
    msgs = {"all_to_all": K - 1, "one_to_all": K - 1, "ring": 1}[pattern]  # busiest sender's messages
    return data + msgs * ts[-1][2] * 1e-6

def entry_seconds(kind, piece, rounds, K, scheme, tiers, ring_allreduce=False):
    """One ledger entry priced on the topology (what owt's collectives do, collectives.rs)."""
    if kind == "exchange":          # FC activities forward: scheme a / b / c
        if scheme == "a":
            return round_seconds("all_to_all", K, piece, tiers)
        if scheme == "b":
            return rounds * round_seconds("one_to_all", K, piece, tiers)
        if scheme == "c":
            return rounds * round_seconds("all_to_all", K, piece / K, tiers)
    if kind == "all_to_all" and ring_allreduce and rounds == 2 and piece > 0:
        return 2 * (K - 1) * round_seconds("ring", K, piece, tiers)
    return rounds * round_seconds("all_to_all", K, piece, tiers)

def tiered(K, scheme="b", tiers=TIERS, ring_allreduce=False):
    ph, ledger = ops.step(K)
    comm = {}
    for label, kind, piece, rounds, _ in ledger:
        comm[label] = comm.get(label, 0.0) + entry_seconds(kind, piece, rounds, K, scheme, tiers,
                                                          ring_allreduce and label.endswith(":sync"))
    compute = sum(v[0] for v in ph.values())
    c = sum(comm.values())
    over = sum(max(v[0], comm.get(l, 0.0)) for l, v in ph.items())
    return compute, c, compute + c, over

def main():
    c1, _, t1, o1, _ = ops.predict(1)
    print("owt cost model reconstructed (gtx580-pcie: 0.95 TFLOP/s, 192 GB/s, 6 GB/s, 10 us), "
          "alexnet-owt, weird trick, scheme b, 128 img/GPU")
    print(f"  T1 = {t1*1e3:.1f} ms")
    print(" K | compute ms  comm ms | speedup (README)  overlapped (README) | paper")
    for K in (2, 4, 8):
        c, m, s, ov, _ = ops.predict(K)
        print(f" {K} | {c*1e3:9.1f} {m*1e3:8.1f} | {K*t1/s:5.2f} ({README[K][0]:.2f})      "
              f"{K*o1/ov:5.2f} ({README[K][1]:.2f})        | {PAPER[K]:.2f}")
    print()
    print("tier model: " + "; ".join(f"{n} {bw:g} GB/s {lat:g} us (shared below {s} GPU{'s'*(s>1)})"
                                    for s, bw, lat, n in TIERS))
    print("contention per direction on each uplink (transfers at once):")
    for K in (2, 4, 8):
        row = [f"{n}: a2a {contention('all_to_all', K, s)}, bcast {contention('one_to_all', K, s)}"
               for s, _, _, n in crossed(K, TIERS)]
        print(f"  K={K}: " + " | ".join(row))
    for scheme in "abc":
        for ring in (False, True):
            tag = f"scheme {scheme}, conv all-reduce " + ("ring (NCCL order)" if ring else "direct (owt host path)")
            print(f"\n{tag}")
            print(" K | compute ms  comm ms | serial  gap vs paper | overlapped  gap")
            for K in (2, 4, 8):
                c, m, s, ov = tiered(K, scheme, ring_allreduce=ring)
                S, So = K*t1/s, K*o1/ov
                print(f" {K} | {c*1e3:9.1f} {m*1e3:8.1f} | {S:5.2f}  {100*(S/PAPER[K]-1):+6.1f}%     "
                      f"| {So:5.2f}   {100*(So/PAPER[K]-1):+6.1f}%")
    print("\nsensitivity, scheme b, direct all-reduce: host-staged QPI bandwidth (GB/s) -> K=8 speedup")
    for bx in (2.0, 3.0, 4.0, 6.0):
        tiers = TIERS[:2] + [(4, bx, 20.0, "QPI")]
        _, _, s, ov = tiered(8, "b", tiers)
        print(f"  {bx:3.1f}: serial {8*t1/s:.2f} ({100*(8*t1/s/6.25-1):+.1f}%), overlapped {8*o1/ov:.2f}")
    print("\nflat links (tiers all 6 GB/s, 10 us), i.e. contention only:")
    flat = [(1, 6.0, 10.0, "gpu"), (2, 6.0, 10.0, "up"), (4, 6.0, 10.0, "qpi")]
    for K in (2, 4, 8):
        _, _, s, ov = tiered(K, "b", flat)
        print(f"  K={K}: serial {K*t1/s:.2f}, overlapped {K*o1/ov:.2f}")

if __name__ == "__main__":
    main()
