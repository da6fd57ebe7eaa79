# PyTorch's side of `owt bench --model alexnet-small --profile`: the same AlexNetSmall (two
# towers, 28x28x1, the paper's LRN within each tower) as scripts/torch_alexnet_small_cpu.py,
# each layer run alone on the activations of one batch (forward, then backward from a fixed
# random upstream gradient), the loss, the SGD-momentum update and the whole step, medians over
# the runs; then torch.profiler's table of one whole step.
# Usage: python3 scripts/torch_profile_small.py [batch=64] [runs=10] [threads=2]
import sys, time, statistics, torch, torch.nn as nn

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 2)
torch.manual_seed(0)


class TowerLRN(nn.Module):  # the paper's summed form within each tower: torch alpha = 5 * 1e-4
    def __init__(self, towers):
        super().__init__(); self.t = towers; self.lrn = nn.LocalResponseNorm(5, alpha=5e-4, beta=0.75, k=2.0)

    def forward(self, x):
        return torch.cat([self.lrn(c) for c in x.chunk(self.t, 1)], 1)


t = 2
layers = [
    ("conv1", nn.Conv2d(1, 32, 5, padding=2)), ("relu1", nn.ReLU()), ("lrn1", TowerLRN(t)), ("pool1", nn.MaxPool2d(3, 2)),
    ("conv2", nn.Conv2d(32, 64, 5, padding=2, groups=t)), ("relu2", nn.ReLU()), ("lrn2", TowerLRN(t)), ("pool2", nn.MaxPool2d(3, 2)),
    ("conv3", nn.Conv2d(64, 96, 3, padding=1)), ("relu3", nn.ReLU()),
    ("conv4", nn.Conv2d(96, 96, 3, padding=1, groups=t)), ("relu4", nn.ReLU()),
    ("conv5", nn.Conv2d(96, 64, 3, padding=1, groups=t)), ("relu5", nn.ReLU()), ("pool5", nn.MaxPool2d(3, 2)),
    ("flatten", nn.Flatten()),
    ("fc6", nn.Linear(256, 256)), ("relu6", nn.ReLU()), ("dropout7", nn.Dropout(0.5)),
    ("fc7", nn.Linear(256, 256)), ("relu7", nn.ReLU()), ("dropout8", nn.Dropout(0.5)), ("fc8", nn.Linear(256, 10)),
]
model = nn.Sequential(*[m for _, m in layers])
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
loss_fn = nn.CrossEntropyLoss()
x0 = torch.rand(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))


def ms(t0):
    return 1000 * (time.perf_counter() - t0)


def time_op(f, x, leaf):
    fwd, bwd, out, g = [], [], None, None
    for run in range(runs + 1):
        xi = x.detach().requires_grad_(leaf)
        t0 = time.perf_counter(); out = f(xi); tf = ms(t0)
        if g is None:
            g = torch.randn_like(out)
        t0 = time.perf_counter(); (out * g).sum().backward(); tb = ms(t0)
        if run > 0:
            fwd.append(tf); bwd.append(tb)
    return statistics.median(fwd), statistics.median(bwd), out.detach()


rows, x = [], x0
for i, (name, m) in enumerate(layers):
    f, b, x = time_op(m, x, leaf=i > 0)  # the images need no gradient, as in training
    rows.append((name, "x".join(map(str, x.shape[1:])), f, b))
f, b, _ = time_op(lambda z: loss_fn(z, y).reshape(1), x, leaf=True)
rows.append(("loss (softmax)", "1", f, b))
upd, step = [], []
for run in range(runs + 1):
    t0 = time.perf_counter()
    opt.zero_grad(); loss_fn(model(x0), y).backward()
    t1 = time.perf_counter(); opt.step(); tu = ms(t1); ts = ms(t0)
    if run > 0:
        upd.append(tu); step.append(ts)
rows.append(("optimizer", str(sum(p.numel() for p in model.parameters())), statistics.median(upd), 0.0))
parts = sum(r[2] + r[3] for r in rows)
print(f"torch {torch.__version__} alexnet-small on cpu ({torch.get_num_threads()} threads), batch {batch}, median of {runs} runs per row")
print(f"{'layer':<10} {'output/image':>16} {'forward ms':>12} {'backward ms':>12} {'share':>7}")
for name, shape, f, b in rows:
    print(f"{name:<10} {shape:>16} {f:>12.2f} {b:>12.2f} {100 * (f + b) / parts:>6.1f}%")
print(f"parts {parts:.1f} ms; whole step {statistics.median(step):.1f} ms (forward, loss, backward, update)")

from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(3):
        opt.zero_grad(); loss_fn(model(x0), y).backward(); opt.step()
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
