#!/usr/bin/env python3
"""Writes the real Fashion-MNIST (all 70,000 images) as ImageFolder trees for
scripts/bench_loader.sh, each ROOT/KIND/{train,test}/<class>/<index>.<ext>:

    png28    28x28 grey PNG
    jpeg28   28x28 grey JPEG, quality 95
    jpeg96   96x96 RGB JPEG, quality 95: image i's channels are images i, i+1 and i+2 of its
             split (real pictures whose colours differ), scaled up as PIL's bilinear resize does

A tree already complete (its .done marker) is left as it is. Needs numpy and PIL (Debian's
python3-pil).

    write_folders.py IDX_DIR ROOT [KIND...]
"""
import gzip
import os
import sys

import numpy as np
from PIL import Image

CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot"]


def idx(path, offset):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def write(kind, images, labels, folder):
    for c in CLASSES:
        os.makedirs(os.path.join(folder, c), exist_ok=True)
    n = len(images)
    for i in range(n):
        path = os.path.join(folder, CLASSES[labels[i]], "%05d" % i)
        if kind == "png28":
            Image.fromarray(images[i], "L").save(path + ".png")
        elif kind == "jpeg28":
            Image.fromarray(images[i], "L").save(path + ".jpg", quality=95)
        else:
            rgb = np.stack([images[i], images[(i + 1) % n], images[(i + 2) % n]], -1)
            Image.fromarray(rgb, "RGB").resize((96, 96), Image.BILINEAR).save(path + ".jpg",
                                                                              quality=95)


def main():
    data, root = sys.argv[1], sys.argv[2]
    kinds = sys.argv[3:] or ["png28", "jpeg28", "jpeg96"]
    splits = {"train": "train", "test": "t10k"}
    for kind in kinds:
        done = os.path.join(root, kind, ".done")
        if os.path.exists(done):
            continue
        for split, stem in splits.items():
            images = idx(os.path.join(data, stem + "-images-idx3-ubyte.gz"), 16).reshape(-1, 28, 28)
            labels = idx(os.path.join(data, stem + "-labels-idx1-ubyte.gz"), 8)
            write(kind, images, labels, os.path.join(root, kind, split))
        open(done, "w").close()
        print("wrote", os.path.join(root, kind), flush=True)


if __name__ == "__main__":
    main()
