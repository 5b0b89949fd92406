#!/usr/bin/env python3
"""d2l.ai §13.6 ("Concise Implementation for Multiple GPUs") on one CPU, as the book trains it.

The book's resnet18 (d2l.Residual with Lazy layers, inlined: Debian has no d2l package, and the
suite builds this net without one), its init_weights (N(0, 0.01^2) for Linear and Conv2d
weights), SGD, nn.CrossEntropyLoss, torchvision's FashionMNIST with ToTensor and
DataLoader(shuffle=True, num_workers). The book wraps the net in nn.DataParallel, which on no GPU
is the net itself. Trains --warmup batches, then times --steps more, and prints one JSON object
on its last line. Without a warm-up the first step, which materialises nothing here but warms
the allocator, is timed too, as dptrain's epoch timer counts its first step; with --compile
(PyTorch 2.x), compilation falls into the warm-up. The baseline that scripts/bench_resnet.sh and
scripts/bench_peers.sh run beside dptrain; tests/python/d2l_resnet_roundtrip.py builds its net
from resnet18() here, so that the suite and the benchmark hold one copy of d2l's code.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
from torch import nn
from torch.nn import functional as F


class Residual(nn.Module):  # d2l.Residual (d2l-en 1.0)
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        self.conv3 = (nn.LazyConv2d(num_channels, kernel_size=1, stride=strides)
                      if use_1x1conv else None)
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet18(num_classes, in_channels=1):  # d2l §13.6
    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels))
        return nn.Sequential(*blk)

    net = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
                        nn.BatchNorm2d(64), nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workers", type=int, default=4, help="d2l.get_dataloader_workers()")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=0,
                    help="steps run before the timed --steps (compiling falls into them)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile(net), its default mode (PyTorch 2.x)")
    args = ap.parse_args()
    # Here, not at the top: the data loading needs torchvision, which the suite's import of
    # resnet18() does without.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from d2l_lenet import load_data_fashion_mnist, stage_fashion_mnist
    torch.set_num_threads(args.threads)
    net = resnet18(10)
    net(torch.zeros(1, 1, 28, 28))  # materialise the Lazy layers before initialising, as a reuse

    def init_weights(module):
        if type(module) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(module.weight, std=0.01)

    net.apply(init_weights)
    trainer = torch.optim.SGD(net.parameters(), args.lr)
    model = torch.compile(net) if args.compile else net  # compiles in its first step
    loss = nn.CrossEntropyLoss()
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, root)
        train_iter, _ = load_data_fashion_mnist(args.batch_size, root, args.workers)
        net.train()
        steps, warm_secs = 0, 0.0
        start = time.perf_counter()
        for X, y in train_iter:
            trainer.zero_grad()
            l = loss(model(X), y)
            l.backward()
            trainer.step()
            steps += 1
            if steps == args.warmup:  # the steps after these are timed on their own
                warm_secs = time.perf_counter() - start
                start = time.perf_counter()
            if steps == args.warmup + args.steps:
                break
        secs = time.perf_counter() - start
        steps -= args.warmup
    print(json.dumps({"steps": steps, "secs": secs, "samples_per_sec": steps * args.batch_size / secs,
                      "warmup_steps": args.warmup, "warmup_secs": warm_secs,
                      "threads": args.threads, "torch": torch.__version__,
                      "mode": "compile" if args.compile else "eager"}))


if __name__ == "__main__":
    main()
