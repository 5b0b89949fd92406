#!/usr/bin/env python3
"""torchvision's side of scripts/bench_loader.sh's folders: DataLoader(ImageFolder(ROOT/train),
batch_size, shuffle=True, num_workers=W) iterated without training, each picture converted as
dptrain converts it (PIL's convert("L") or convert("RGB")) and put through the transforms of
dptrain's experiment, given as the same JSON list, in its order, on the uint8 tensor as dptrain
computes them: transforms.v2 where this torchvision has it (0.16 on), else the v1 classes of the
same names. Workers persist from pass to pass.
Prints images/s (the median of the passes after a first one that warms up) and peak resident
memory: this process's and its largest worker's (each worker is a process of its own).
"""
import argparse
import gc
import json
import resource
import statistics
import time

import torch
import torchvision
from PIL import Image
from torchvision import datasets

try:
    from torchvision.transforms import v2 as T
    V2 = True
except ImportError:
    from torchvision import transforms as T
    V2 = False


def one(spec):
    p = {k: v for k, v in spec.items() if k != "name"}
    name = spec["name"]
    if name == "resize":
        return T.Resize(p["size"], antialias=p.get("antialias", True))
    if name == "center_crop":
        return T.CenterCrop(p["size"])
    if name == "random_crop":
        return T.RandomCrop(p["size"], padding=p.get("padding"), pad_if_needed=p.get(
            "pad_if_needed", False), fill=p.get("fill", 0), padding_mode=p.get("padding_mode",
                                                                              "constant"))
    if name == "random_resized_crop":
        return T.RandomResizedCrop(p["size"], scale=tuple(p.get("scale", (0.08, 1.0))),
                                   ratio=tuple(p.get("ratio", (3 / 4, 4 / 3))),
                                   antialias=p.get("antialias", True))
    if name == "random_horizontal_flip":
        return T.RandomHorizontalFlip(p.get("p", 0.5))
    raise SystemExit("folder_loader.py: no mapping for " + name)


def pipeline(specs):
    """In dptrain's order: the uint8 image through each transform, scaled to [0, 1] at the first
    normalize (or at the end), as data/transforms.h says."""
    ops = [T.PILToTensor()]
    to_float = T.ToDtype(torch.float32, scale=True) if V2 else T.ConvertImageDtype(torch.float32)
    scaled = False
    for spec in specs:
        if spec["name"] == "normalize":
            if not scaled:
                ops.append(to_float)
                scaled = True
            ops.append(T.Normalize(spec["mean"], spec["std"]))
        else:
            ops.append(one(spec))
    if not scaled:
        ops.append(to_float)
    return T.Compose(ops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="ImageFolder layout: ROOT/train/<class>/...")
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--transforms", default="[]", help="dptrain's data.train_transforms (JSON)")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(1)  # as dptrain's bench: the workers are what is measured
    mode = "L" if args.channels == 1 else "RGB"

    def load(path):
        with open(path, "rb") as f:
            return Image.open(f).convert(mode)

    data = datasets.ImageFolder(args.root + "/train", transform=pipeline(
        json.loads(args.transforms)), loader=load)
    # Workers kept from pass to pass (persistent_workers), as a Lightning user is told to: their
    # start is not what is measured.
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers,
                                         persistent_workers=args.workers > 0)
    rates = []
    for p in range(args.passes + 1):
        start = time.perf_counter()
        images = sum(len(labels) for _, labels in loader)
        if p > 0:
            rates.append(images / (time.perf_counter() - start))
    # The workers end (and are waited for, which is when their peak is counted) with the loader.
    del loader
    gc.collect()
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10
    print(f"torchvision {torchvision.__version__} ({'v2' if V2 else 'v1'}) workers "
          f"{args.workers}: {statistics.median(rates):.0f} images/s, peak RSS {me} MiB"
          + (f", its largest worker {worker} MiB" if args.workers else ""), flush=True)


if __name__ == "__main__":
    main()
