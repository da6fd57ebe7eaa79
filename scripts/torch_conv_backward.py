# PyTorch's side of `cargo bench --bench conv_backward`: per AlexNetSmall conv layer at batch 64
# (2 threads), ms for the forward convolution and for the input, weight and bias gradients
# (aten::convolution_backward with one output at a time). Usage: python3 scripts/torch_conv_backward.py
import time, statistics, torch
torch.set_num_threads(2)
n = 64
layers = [("conv1", 1, 28, 32, 5, 2, 1), ("conv2", 32, 13, 64, 5, 2, 2), ("conv3", 64, 6, 96, 3, 1, 1),
          ("conv4", 96, 6, 96, 3, 1, 2), ("conv5", 96, 6, 64, 3, 1, 2)]
def t(f):
    f(); ts = []
    for _ in range(9):
        s = time.perf_counter(); f(); ts.append(1000 * (time.perf_counter() - s))
    return statistics.median(ts)
print(f"{'layer':<6} {'forward':>10} {'x backward':>12} {'w backward':>12} {'b backward':>12}")
for name, c, side, o, k, p, g in layers:
    x = torch.randn(n, c, side, side); w = torch.randn(o, c // g, k, k); b = torch.randn(o); gy = torch.randn(n, o, side, side)
    conv = lambda: torch.nn.functional.conv2d(x, w, b, 1, p, 1, g)
    bw = lambda mask: lambda: torch.ops.aten.convolution_backward(gy, x, w, [o], [1, 1], [p, p], [1, 1], False, [0, 0], g, mask)
    print(f"{name:<6} {t(conv):>10.2f} {t(bw([True, False, False])):>12.2f} {t(bw([False, True, False])):>12.2f} {t(bw([False, False, True])):>12.2f}")
