"""Makes the VGG part of tests/fixtures/torchvision: a torchvision-layout VGG-11 with batch
normalisation and narrower layers, random weights and running statistics, saved as a PyTorch
state dict (.pth) and as safetensors, with what PyTorch computes for a fixed batch: the logits
in evaluation mode, and in training mode (features.train(), so batch statistics and no
dropout) the features fc6 reads and the running statistics after that one pass.

The network is torchvision's `VGG` built by `make_layers(cfgs["A"], batch_norm=True)` with
other widths (so the same state-dict keys: features.0 conv, features.1 batch norm, ...,
classifier.0/.3/.6, Linear weights [out, in]). At 64x64 the last pooling leaves 2x2 maps, so
the 7x7 adaptive pool and the flatten order into fc6 are exercised.

Run once: python3 scripts/make_torchvision_vgg_fixture.py (needs torch and safetensors; with
torchvision installed it also checks the keys and ranks against torchvision's vgg11_bn).
"""

import json
import pathlib

import torch
from torch import nn
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torchvision"
# Configuration A (VGG-11) with narrower layers; "M" is a 2x2 max pooling.
CFG = [8, "M", 16, "M", 24, 24, "M", 32, 32, "M", 32, 32, "M"]
HIDDEN = 24
CLASSES = 10
SIDE = 64
BATCH = 4


def make_layers(cfg):
    """torchvision.models.vgg.make_layers(cfg, batch_norm=True)."""
    layers, channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [nn.Conv2d(channels, v, kernel_size=3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            channels = v
    return nn.Sequential(*layers)


class NarrowVgg(nn.Module):
    """torchvision.models.VGG's exact structure with other widths."""

    def __init__(self):
        super().__init__()
        self.features = make_layers(CFG)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(CFG[-2] * 7 * 7, HIDDEN),
            nn.ReLU(True),
            nn.Dropout(p=0.5),
            nn.Linear(HIDDEN, HIDDEN),
            nn.ReLU(True),
            nn.Dropout(p=0.5),
            nn.Linear(HIDDEN, CLASSES),
        )

    def trunk(self, x):
        return torch.flatten(self.avgpool(self.features(x)), 1)

    def forward(self, x):
        return self.classifier(self.trunk(x))


def main():
    torch.manual_seed(2014)
    model = NarrowVgg().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.2 if p.dim() > 1 else 0.1)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    try:
        import torchvision

        reference = torchvision.models.vgg11_bn(weights=None).state_dict()
        ours = model.state_dict()
        assert list(reference) == list(ours), (list(reference), list(ours))
        assert all(reference[k].dim() == ours[k].dim() for k in ours)
        print("keys and ranks equal torchvision's vgg11_bn")
    except ImportError:
        print("torchvision not installed: key check skipped")
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    OUT.mkdir(parents=True, exist_ok=True)
    torch.save(state, OUT / "vgg11_bn.pth")
    save_file(state, str(OUT / "vgg11_bn.safetensors"))
    images = torch.randn(BATCH, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        logits = model(images)
        model.features.train()
        features = model.trunk(images)
    after = {k: v.contiguous() for k, v in model.state_dict().items() if k.endswith(("running_mean", "running_var"))}
    save_file(
        {"images": images.contiguous(), "logits": logits.contiguous(), "train_features": features.contiguous(), **after},
        str(OUT / "vgg_batch.safetensors"),
    )
    (OUT / "vgg_architecture.json").write_text(
        json.dumps(
            {
                "filters": [v for v in CFG if v != "M"],
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
