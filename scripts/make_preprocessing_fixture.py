"""Makes tests/fixtures/preprocessing: a folder of JPEG photographs, a torchvision-layout AlexNet
trained on their kind with torchvision's transforms and ImageNet's mean and std, and what
PyTorch predicts for each held-out image, so that owt's evaluation of the same network on the
same 504 files (tests/owt/preprocessing.rs) can be compared with PyTorch's image by image.

The classes are the six photographs of tests/fixtures/photos; each image is a crop of one at a
random place and scale, saved by Pillow (quality 70, 4:2:0 as most JPEGs are) at a shorter side
of 100 to 170 pixels, so every one is resized (down or up) before its centre 99 x 99 is cut.
The network is scripts/make_torchvision_fixture.py's narrow AlexNet (the same module layout and
state-dict keys as torchvision.models.alexnet) with six outputs, trained here on 1,800 more such
images (not kept) for two minutes on the CPU.

Its evaluation transform is torchvision's own: Resize(113) (bilinear, antialiased),
CenterCrop(99), ToTensor(), Normalize(ImageNet's mean and std); 113 = 99 x 8 / 7, as 256 is for
224.

Run once: python3 scripts/make_preprocessing_fixture.py (needs torch, torchvision, safetensors).
"""

import csv
import json
import pathlib
import random

import torch
from PIL import Image
from safetensors.torch import save_file
from torchvision import datasets, transforms

from make_torchvision_fixture import FILTERS, HIDDEN, NarrowAlexNet

ROOT = pathlib.Path(__file__).resolve().parent.parent
PHOTOS = ROOT / "tests" / "fixtures" / "photos"
OUT = ROOT / "tests" / "fixtures" / "preprocessing"
SIDE, RESIZE = 99, 113
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
TRAIN_PER_CLASS, VAL_PER_CLASS = 300, 84
EPOCHS = 24


def crops(photo, count, rng, folder):
    """`count` crops of `photo` saved in `folder` as NNNNN.jpg."""
    folder.mkdir(parents=True, exist_ok=True)
    w, h = photo.size
    for i in range(count):
        shorter = rng.randint(100, 170)
        longer = round(shorter * 4 / 3)
        ow, oh = (longer, shorter) if rng.random() < 0.75 else (shorter, longer)
        fit = min(w / ow, h / oh) * rng.uniform(1 / 3, 1)
        cw, ch = max(1, int(ow * fit)), max(1, int(oh * fit))
        x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
        image = photo.crop((x0, y0, x0 + cw, y0 + ch)).resize((ow, oh), Image.BICUBIC)
        image.save(folder / f"{i:05d}.jpg", quality=70)


def main():
    rng = random.Random(2026)
    torch.manual_seed(2026)
    torch.set_num_threads(2)
    work = pathlib.Path("/tmp/owt-preprocessing-fixture")
    photos = sorted(PHOTOS.glob("*.jpg"))
    for split, count, root in (("train", TRAIN_PER_CLASS, work), ("val", VAL_PER_CLASS, OUT)):
        for p in photos:
            crops(Image.open(p).convert("RGB"), count, rng, root / split / p.stem)
    normalize = transforms.Normalize(MEAN, STD)
    train = datasets.ImageFolder(
        work / "train",
        transforms.Compose(
            [transforms.Resize(RESIZE), transforms.RandomCrop(SIDE), transforms.RandomHorizontalFlip(),
             transforms.ToTensor(), normalize]
        ),
    )
    evaluation = transforms.Compose(
        [transforms.Resize(RESIZE), transforms.CenterCrop(SIDE), transforms.ToTensor(), normalize]
    )
    val = datasets.ImageFolder(OUT / "val", evaluation)
    assert train.classes == val.classes == [p.stem for p in photos]
    model = NarrowAlexNet(FILTERS, HIDDEN, len(photos))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.004, momentum=0.9, weight_decay=5e-4)
    loader = torch.utils.data.DataLoader(train, batch_size=64, shuffle=True, num_workers=2)
    for epoch in range(EPOCHS):
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
        print(f"epoch {epoch + 1}: train loss {total / len(train):.4f}")
    model.eval()
    rows, correct = [], 0
    with torch.no_grad():
        for (path, label), (x, _) in zip(val.samples, val):
            logits = model(x.unsqueeze(0))[0]
            top2 = logits.topk(2)
            predicted = int(top2.indices[0])
            correct += predicted == label
            margin = float(top2.values[0] - top2.values[1])
            rows.append((pathlib.Path(path).relative_to(OUT / "val").as_posix(), label, predicted, f"{margin:.6f}"))
    accuracy = correct / len(rows)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(OUT / "alexnet.safetensors"))
    with open(OUT / "predictions.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "label", "predicted", "margin"])
        writer.writerows(rows)
    (OUT / "fixture.json").write_text(
        json.dumps(
            {
                "filters": FILTERS,
                "hidden": HIDDEN,
                "classes": val.classes,
                "side": SIDE,
                "resize": RESIZE,
                "mean": MEAN,
                "std": STD,
                "images": len(rows),
                "accuracy": accuracy,
                "torch": torch.__version__,
                "pillow": Image.__version__,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {OUT}: {len(rows)} held-out images, PyTorch's accuracy {100 * accuracy:.2f}%")


if __name__ == "__main__":
    main()
