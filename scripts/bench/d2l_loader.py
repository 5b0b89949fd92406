#!/usr/bin/env python3
"""Loader-only throughput of d2l's data pipeline: torchvision's FashionMNIST with ToTensor and a
shuffling DataLoader (d2l.load_data_fashion_mnist), iterated without training. The baseline that
scripts/bench_loader.sh prints beside dptrain's loader. One line per worker count.
"""
import argparse
import statistics
import tempfile
import time

import torch

from d2l_lenet import load_data_fashion_mnist, stage_fashion_mnist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--workers", default="0,1,2,4")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    torch.manual_seed(1)
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, root)
        for workers in [int(w) for w in args.workers.split(",")]:
            train_iter, _ = load_data_fashion_mnist(args.batch_size, root, workers)
            rates = []
            for p in range(args.passes + 1):  # the first pass warms up and is not counted
                start = time.perf_counter()
                batches = sum(1 for _ in train_iter)
                if p > 0:
                    rates.append(batches / (time.perf_counter() - start))
            rate = statistics.median(rates)
            print(f"d2l DataLoader workers {workers}: {rate:.0f} batches/s, "
                  f"{rate * args.batch_size:.0f} samples/s", flush=True)


if __name__ == "__main__":
    main()
