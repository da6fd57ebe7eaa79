"""Makes tests/fixtures/torchvision: a torchvision-layout AlexNet with random weights, saved as a
PyTorch state dict (.pth) and as safetensors, and the logits PyTorch computes for a fixed batch.

The network is torchvision's `AlexNet` module for module (the same `features` and `classifier`
Sequential indices, so the same state-dict keys: features.0/.3/.6/.8/.10, classifier.1/.4/.6,
and Linear weights stored [out, in]) with narrower layers, so the files stay small; owt imports
it with the matching narrow architecture and must give the same logits. The input side is 99:
conv5's maps are then 2x2, so the adaptive pool to 6x6 and the flatten order into fc6 are
exercised (at 67 they are 1x1 and every flatten order looks the same).

Run once: python3 scripts/make_torchvision_fixture.py (needs torch and safetensors; with
torchvision installed it also checks that the keys and ranks equal torchvision's AlexNet).
"""

import json
import pathlib

import torch
from torch import nn
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torchvision"
# conv1..conv5 filters, fc6/fc7 widths, classes, input side, batch.
FILTERS = [16, 32, 48, 32, 32]
HIDDEN = [64, 64]
CLASSES = 10
SIDE = 99
BATCH = 4


class NarrowAlexNet(nn.Module):
    """torchvision.models.AlexNet's exact structure with other widths."""

    def __init__(self, f, hidden, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, f[0], kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(f[0], f[1], kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(f[1], f[2], kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(f[2], f[3], kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(f[3], f[4], kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.5),
            nn.Linear(f[4] * 6 * 6, hidden[0]),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.5),
            nn.Linear(hidden[0], hidden[1]),
            nn.ReLU(inplace=True),
            nn.Linear(hidden[1], classes),
        )

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def main():
    torch.manual_seed(2012)
    model = NarrowAlexNet(FILTERS, HIDDEN, CLASSES).eval()
    # Weights at a scale where the logits are far from zero (the default init would do too;
    # this keeps every layer's contribution visible in the logits).
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.05)
    try:
        import torchvision

        reference = torchvision.models.alexnet(weights=None).state_dict()
        ours = model.state_dict()
        assert list(reference) == list(ours), (list(reference), list(ours))
        assert all(reference[k].dim() == ours[k].dim() for k in ours)
        print("keys and ranks equal torchvision's AlexNet")
    except ImportError:
        print("torchvision not installed: key check skipped")
    # Copies: the optimizer step below changes the parameters in place.
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    OUT.mkdir(parents=True, exist_ok=True)
    torch.save(state, OUT / "alexnet.pth")
    save_file(state, str(OUT / "alexnet.safetensors"))
    images = torch.randn(BATCH, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        logits = model(images)
    save_file({"images": images.contiguous(), "logits": logits.contiguous()}, str(OUT / "batch.safetensors"))
    # What PyTorch's ImageNet example (examples/imagenet/main.py --arch alexnet) saves: the
    # features wrapped in DataParallel (keys features.module.N), the state dict nested under
    # "state_dict" beside the epoch, best accuracy and optimizer state (momentum buffers).
    model.features = nn.DataParallel(model.features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model(torch.randn(2, 3, SIDE, SIDE)).sum().backward()
    optimizer.step()
    model.load_state_dict({k.replace("features.", "features.module.") if k.startswith("features.") else k: v for k, v in state.items()})
    torch.save(
        {
            "epoch": 3,
            "arch": "alexnet",
            "state_dict": model.state_dict(),
            "best_acc1": torch.tensor(12.5),
            "optimizer": optimizer.state_dict(),
        },
        OUT / "checkpoint.pth.tar",
    )
    model.features = model.features.module
    (OUT / "architecture.json").write_text(
        json.dumps(
            {
                "filters": FILTERS,
                "hidden": HIDDEN,
                "classes": CLASSES,
                "side": SIDE,
                "torch": torch.__version__,
                "logit_scale": logits.abs().max().item(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {OUT}: logits {tuple(logits.shape)}, max |logit| {logits.abs().max().item():.4f}")


if __name__ == "__main__":
    main()
