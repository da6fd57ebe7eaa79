# Copied into the repository from the team's shared bench scripts, so a clone has it
# (scripts/side_by_side.sh, benches/train_step.rs and the README use it).
# PyTorch CPU reference for owt's AlexNetSmall (two towers, 28x28x1, 10 classes): training
# images/s with SGD momentum, batch from argv (default 64), 2 threads unless told otherwise.
# Importable: make_optimizer_fixture.py takes its network from here (`small`).
import sys, time, torch, torch.nn as nn

class TowerLRN(nn.Module):  # paper's summed form within each tower: torch alpha = 5 * 1e-4
    def __init__(self, towers):
        super().__init__(); self.t = towers; self.lrn = nn.LocalResponseNorm(5, alpha=5e-4, beta=0.75, k=2.0)
    def forward(self, x):
        return torch.cat([self.lrn(c) for c in x.chunk(self.t, 1)], 1)

def small(t=2, dropout=0.5):
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), TowerLRN(t), nn.MaxPool2d(3, 2),
        nn.Conv2d(32, 64, 5, padding=2, groups=t), nn.ReLU(), TowerLRN(t), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 96, 3, padding=1), nn.ReLU(),
        nn.Conv2d(96, 96, 3, padding=1, groups=t), nn.ReLU(),
        nn.Conv2d(96, 64, 3, padding=1, groups=t), nn.ReLU(), nn.MaxPool2d(3, 2), nn.Flatten(),
        nn.Linear(256, 256), nn.ReLU(), nn.Dropout(dropout), nn.Linear(256, 256), nn.ReLU(),
        nn.Dropout(dropout), nn.Linear(256, 10))

if __name__ == "__main__":
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 2)
    m = small()
    print("params", sum(p.numel() for p in m.parameters()))
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.rand(batch, 1, 28, 28); y = torch.randint(0, 10, (batch,)); f = nn.CrossEntropyLoss()
    def step():
        opt.zero_grad(); l = f(m(x), y); l.backward(); opt.step(); return l.item()
    for _ in range(3): step()
    t = time.perf_counter()
    for _ in range(steps): step()
    dt = time.perf_counter() - t
    print(f"TORCH-CPU alexnet-small batch {batch} threads {torch.get_num_threads()}: {batch*steps/dt:.1f} img/s ({1000*dt/steps:.1f} ms/step)")
