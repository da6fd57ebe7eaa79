"""A folder of JPEG photographs as ImageNet's are, for loader benchmarks (scripts/loader_side_by_side.sh):
500 x 375, 4:2:0 chroma, about 100 KB each (ImageNet's are 110 KB on average): crops of the six
photographs in tests/fixtures/photos at random places and scales, with Gaussian sensor noise
(standard deviation 8), saved by Pillow at quality 95. Each photograph is a class.

    python3 scripts/make_photo_folder.py OUT [TRAIN_PER_CLASS VAL_PER_CLASS]
"""

import os
import pathlib
import random
import sys

import numpy as np
from PIL import Image

PHOTOS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "photos"


def main():
    out = pathlib.Path(sys.argv[1])
    counts = (int(sys.argv[2]) if len(sys.argv) > 2 else 100, int(sys.argv[3]) if len(sys.argv) > 3 else 10)
    photos = [(p.stem, Image.open(p).convert("RGB")) for p in sorted(PHOTOS.glob("*.jpg"))]
    rng, noise, total, n = random.Random(0), np.random.default_rng(0), 0, 0
    for split, per_class in zip(("train", "val"), counts):
        for name, photo in photos:
            folder = out / split / name
            folder.mkdir(parents=True)
            w, h = photo.size
            for i in range(per_class):
                cw = rng.randint(min(w, h) // 3, min(w, h))
                ch = cw * 3 // 4
                x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
                crop = photo.crop((x0, y0, x0 + cw, y0 + ch)).resize((500, 375), Image.BICUBIC)
                pixels = np.asarray(crop, dtype=np.float32) + noise.normal(0, 8, (375, 500, 3))
                path = folder / f"{i:05d}.jpg"
                Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, quality=95)
                total += os.path.getsize(path)
                n += 1
    print(f"{n} JPEGs of 500 x 375 in {out}, {total / n / 1e3:.0f} KB each on average")


if __name__ == "__main__":
    main()
