"""PyTorch reference for owt's AlexNetOwt training step (torchvision layout, 10 classes, SGD
momentum 0.9, weight decay 5e-4, one loss.item() per step, 5 warmup steps), adapted from the
team's shared/bench/torch_alexnet_gpu.py so scripts/gpu-check.sh can carry it. Prints one JSON
object: images/s and ms/step for strict fp32 and for TF32 (convolutions and matmuls), each
with the batch on the device and with each batch converted from u8 on the host.

Usage: python3 torch_alexnet.py [--batch 128] [--steps 16] [--input 224] [--cpu] [--resident-only]
  --resident-only  the two figures with the batch on the device only (TF32 and strict fp32)
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def alexnet(classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d(6), nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(9216, 4096), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
        nn.Linear(4096, classes))


def run(batch, steps, side, tf32, from_host, dev):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)
    m = alexnet().to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    host = torch.randint(0, 256, (batch, 3, side, side), dtype=torch.uint8)
    labels = torch.randint(0, 10, (batch,))
    x_dev = (host.float() / 127.5 - 1).to(dev)
    y_dev = labels.to(dev)
    lossf = nn.CrossEntropyLoss()

    def step():
        if from_host:
            x, y = (host.float() / 127.5 - 1).to(dev), labels.to(dev)
        else:
            x, y = x_dev, y_dev
        opt.zero_grad(set_to_none=True)
        loss = lossf(m(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    sync = torch.cuda.synchronize if dev != "cpu" else (lambda: None)
    for _ in range(5):
        step()
    sync()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t)
    total = sum(times)
    times.sort()
    return {"images_per_s": batch * steps / total, "median_step_ms": 1000 * times[len(times) // 2]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--input", type=int, default=224)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--resident-only", action="store_true")
    a = p.parse_args()
    dev = "cuda" if torch.cuda.is_available() and not a.cpu else "cpu"
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu",
           "batch": a.batch, "steps": a.steps, "input": a.input}
    out["fp32_strict_device_resident"] = run(a.batch, a.steps, a.input, False, False, dev)
    if dev == "cuda":
        out["tf32_device_resident"] = run(a.batch, a.steps, a.input, True, False, dev)
        if not a.resident_only:
            out["fp32_strict_from_host_u8"] = run(a.batch, a.steps, a.input, False, True, dev)
            out["tf32_from_host_u8"] = run(a.batch, a.steps, a.input, True, True, dev)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
