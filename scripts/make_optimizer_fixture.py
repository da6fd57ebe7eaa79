"""PyTorch's side of owt's optimizer test (tests/owt/optimizer_vs_torch.rs), written to
tests/fixtures/optimizer/torch_sgd.json. Run from the repository root with PyTorch installed:

    python3 scripts/make_optimizer_fixture.py

Every number the test feeds both sides is drawn by the same counter-based generator
(splitmix64 of a seed, a tensor's index and an element's index, see `draw`), so the fixture
holds only PyTorch's results, never its inputs. All in float64. What it records:

- `sgd`: torch.optim.SGD (dampening 0, no Nesterov) on AlexNetSmall's parameters (two towers,
  owt's names and order, PyTorch's layouts), three steps on given gradients with the rate
  changing between them, under two settings (the paper's momentum 0.9 and weight decay 5e-4,
  and plain SGD, which keeps no momentum buffer); after each step, every parameter's and every momentum buffer's sum of
  absolute values, sum of squares and 17 values at fixed places.
- `schedules`: the rate of each epoch under MultiStepLR (gamma 0.1) and ReduceLROnPlateau
  (factor 0.1, threshold 0, cooldown 0) for a given sequence of test losses.
- `loss_scale`: torch.amp.GradScaler's scale after each of 2,010 steps, some of whose gradients
  overflow (its defaults: 2^16, doubled after 2,000 finite steps, halved on an overflow).
- `training`: five SGD steps of AlexNetSmall (two towers, no dropout) from drawn weights on
  drawn batches of 16 images, the loss of each (cross-entropy, mean over the batch).

Burn's optimizer holds its momentum as the backend's float element (f32 on Flex, whatever the
tensors' dtype) and its weight decay as an f32, as every f32 run uses them; so PyTorch is given
0.9 and 5e-4 rounded to f32. Everything else is the same f64 arithmetic on both sides.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_alexnet_small_cpu  # noqa: E402

MASK = (1 << 64) - 1


def splitmix(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(seed, tensor, n):
    """n values in [-1, 1): element i is splitmix64((seed << 40) | (tensor << 32) | i) scaled."""
    base = (seed << 40) | (tensor << 32)
    return [((splitmix(base | i) >> 11) * 2.0**-53) * 2.0 - 1.0 for i in range(n)]


def alexnet_small():
    """owt's AlexNetSmall (two towers), as the PyTorch CPU reference builds it, without dropout."""
    return torch_alexnet_small_cpu.small(2, dropout=0.0)


# owt's names for the Sequential's layers, in owt's parameter order.
NAMES = {0: "conv1", 4: "conv2", 8: "conv3", 10: "conv4", 12: "conv5", 16: "fc6", 19: "fc7", 22: "fc8"}


def named(model):
    out = []
    for key, p in model.named_parameters():
        index, kind = key.split(".")
        out.append((f"{NAMES[int(index)]}.{kind}", p))
    return out


def stats(t):
    flat = t.detach().reshape(-1)
    n = flat.numel()
    places = sorted({k * n // 16 for k in range(16)} | {n - 1})
    return {
        "sum_abs": flat.abs().sum().item(),
        "sum_sq": (flat * flat).sum().item(),
        "samples": [[i, flat[i].item()] for i in places],
    }


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


WEIGHT_DECAY = f32(5e-4)
MOMENTUM = f32(0.9)


def sgd_case(momentum, weight_decay, lrs):
    model = alexnet_small().double()
    params = named(model)
    with torch.no_grad():
        for t, (_, p) in enumerate(params):
            p.copy_(torch.tensor(draw(0, t, p.numel()), dtype=torch.float64).reshape(p.shape) * 0.1)
    opt = torch.optim.SGD([p for _, p in params], lr=lrs[0], momentum=momentum, dampening=0,
                          weight_decay=weight_decay, nesterov=False)
    steps = []
    for s, lr in enumerate(lrs):
        for group in opt.param_groups:
            group["lr"] = lr
        for t, (_, p) in enumerate(params):
            p.grad = torch.tensor(draw(1000 + s, t, p.numel()), dtype=torch.float64).reshape(p.shape) * 0.01
        opt.step()
        after = {}
        for name, p in params:
            entry = {"weight": stats(p)}
            buf = opt.state[p].get("momentum_buffer")
            if buf is not None:
                entry["momentum"] = stats(buf)
            after[name] = entry
        steps.append(after)
    return {"momentum": momentum, "weight_decay": weight_decay, "lrs": lrs, "steps": steps}


def schedules():
    losses = [2.0, 1.5, 1.6, 1.4, 1.45, 1.47, 1.3, 1.31, 1.32, 1.2]
    out = {"test_losses": losses, "base_lr": 0.01, "cases": []}
    p = nn.Parameter(torch.zeros(1))

    def run(make, step):
        opt = torch.optim.SGD([p], lr=0.01)
        sched = make(opt)
        lrs = []
        for epoch in range(len(losses)):
            lrs.append(opt.param_groups[0]["lr"])
            step(sched, losses[epoch])
        return lrs

    for milestones in [[2, 4], [3]]:
        lrs = run(lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones, gamma=0.1), lambda s, _: s.step())
        out["cases"].append({"schedule": "step:" + ",".join(map(str, milestones)), "lrs": lrs})
    for patience in [1, 2]:
        make = lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(  # noqa: E731
            o, mode="min", factor=0.1, patience=patience - 1, threshold=0.0, cooldown=0)
        lrs = run(make, lambda s, loss: s.step(loss))
        out["cases"].append({"schedule": f"plateau:{patience}", "lrs": lrs})
    return out


def loss_scale():
    overflow = {3, 4, 2008}
    p = nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([p], lr=0.0)
    scaler = torch.amp.GradScaler("cpu")
    scales = []
    for step in range(2010):
        opt.zero_grad()
        loss = (p * (float("inf") if step in overflow else 1.0)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return {"overflow_steps": sorted(overflow), "scales": scales}


def training():
    torch.manual_seed(0)
    model = alexnet_small().double()
    params = named(model)
    with torch.no_grad():
        for t, (name, p) in enumerate(params):
            fan_in = p[0].numel() if name.endswith("weight") else 1
            scale = 1.0 / math.sqrt(fan_in) if name.endswith("weight") else 0.01
            p.copy_(torch.tensor(draw(3000, t, p.numel()), dtype=torch.float64).reshape(p.shape) * scale)
    lr = 0.01
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM, dampening=0, weight_decay=WEIGHT_DECAY)
    loss_fn = nn.CrossEntropyLoss()
    batch, losses = 16, []
    for step in range(5):
        x = torch.tensor(draw(2000 + step, 0, batch * 784), dtype=torch.float64).reshape(batch, 1, 28, 28)
        y = torch.tensor([(n * 7 + step * 3) % 10 for n in range(batch)])
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"batch": batch, "lr": lr, "momentum": MOMENTUM, "weight_decay": WEIGHT_DECAY, "losses": losses}


def main():
    model = alexnet_small()
    fixture = {
        "made_by": "scripts/make_optimizer_fixture.py, torch " + torch.__version__,
        "params": [{"name": n, "torch_shape": list(p.shape)} for n, p in named(model)],
        "sgd": [sgd_case(MOMENTUM, WEIGHT_DECAY, [0.01, 0.01, 0.001]), sgd_case(0.0, 0.0, [0.05, 0.02, 0.02])],
        "schedules": schedules(),
        "loss_scale": loss_scale(),
        "training": training(),
    }
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/optimizer/torch_sgd.json"
    with open(path, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print("wrote", path, "losses", fixture["training"]["losses"])


if __name__ == "__main__":
    main()
