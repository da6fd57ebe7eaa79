"""PyTorch's side of scripts/loader_side_by_side.sh: torchvision's ImageFolder and DataLoader
on DIR/train with the transforms owt's loader applies (Resize(256) bilinear, RandomCrop(224),
RandomHorizontalFlip, ToTensor), WORKERS worker processes, batches of BATCH; prints the
images/s over BATCHES batches after WARMUP (the workers' start-up and first batches).

    python3 scripts/torch_loader.py DIR WORKERS [BATCH BATCHES WARMUP]
"""

import sys
import time

import torch
from torchvision import datasets, transforms


def main():
    root, workers = sys.argv[1], int(sys.argv[2])
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    batches = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    torch.set_num_threads(1)
    transform = transforms.Compose(
        [transforms.Resize(256), transforms.RandomCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor()]
    )
    data = datasets.ImageFolder(f"{root}/train", transform=transform)
    sampler = torch.utils.data.RandomSampler(data, replacement=True, num_samples=batch * (batches + warmup))
    loader = torch.utils.data.DataLoader(data, batch_size=batch, sampler=sampler, num_workers=workers)
    it = iter(loader)
    for _ in range(warmup):
        next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    seconds = time.perf_counter() - start
    print(f"torchvision DataLoader, {workers} workers: {batch * batches / seconds:.1f} images/s")


if __name__ == "__main__":
    main()
