#!/usr/bin/env python3
"""PyTorch's own DistributedDataParallel: the baseline for dptrain's ddp, on CPU ranks over Gloo
or (--device cuda) one GPU per rank over NCCL.

The same LeNet as dptrain's (nn.Module, d2l's N(0, 0.01^2) weights), torch's DistributedSampler,
a DataLoader of batch_size / world per rank over torchvision's FashionMNIST, plain SGD, one
process per rank started with torch.multiprocessing. Rank 0 times each epoch's training loop, as
dptrain does, and afterwards measures test accuracy. Prints one JSON object on its last line.
scripts/bench_ddp.sh runs it; scripts/bench_zero.sh with --optimizer adam, and --zero for
PyTorch's ZeroRedundancyOptimizer; scripts/bench_gpu.sh with --device cuda.
"""
import argparse
import json
import os
import socket
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision
from torch import nn
from torch.nn import functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel
from torch.utils import data
from torchvision import transforms

from d2l_lenet import stage_fashion_mnist


def lenet():
    net = nn.Sequential(
        nn.Conv2d(1, 20, 3), nn.ReLU(), nn.AvgPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))
    for m in net:
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, std=0.01)
            nn.init.zeros_(m.bias)
    return net


def rank_main(rank, args, root, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    gpu = args.device == "cuda"
    device = torch.device("cuda", rank) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=args.world)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = DistributedDataParallel(lenet().to(device), device_ids=[rank] if gpu else None)
    train = torchvision.datasets.FashionMNIST(root=root, train=True,
                                              transform=transforms.ToTensor())
    sampler = data.distributed.DistributedSampler(train, num_replicas=args.world, rank=rank,
                                                  shuffle=True, seed=0)
    loader = data.DataLoader(train, batch_size=args.batch_size // args.world, sampler=sampler,
                             num_workers=args.workers, pin_memory=gpu)
    kind = torch.optim.Adam if args.optimizer == "adam" else torch.optim.SGD
    if args.zero:
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=kind, lr=args.lr)
    else:
        optimizer = kind(model.parameters(), lr=args.lr)
    epoch_secs = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        for X, y in loader:
            X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            F.cross_entropy(model(X), y).backward()
            optimizer.step()
        if gpu:
            torch.cuda.synchronize(device)
        epoch_secs.append(time.perf_counter() - start)
    if rank == 0:
        peak = torch.cuda.max_memory_allocated(device) if gpu else 0
        results.put((epoch_secs, test_accuracy(model.module, root, device), peak))
    dist.destroy_process_group()


def test_accuracy(net, root, device):
    test = torchvision.datasets.FashionMNIST(root=root, train=False,
                                             transform=transforms.ToTensor())
    correct = 0
    with torch.no_grad():
        for X, y in data.DataLoader(test, batch_size=1024):
            correct += (net(X.to(device)).argmax(1) == y.to(device)).sum().item()
    return correct / len(test)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    ap.add_argument("--workers", type=int, default=0, help="DataLoader workers per rank")
    ap.add_argument("--batch-size", type=int, default=256, help="global, split over the ranks")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    ap.add_argument("--zero", action="store_true", help="shard it: ZeroRedundancyOptimizer")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: rank r on cuda:r, over NCCL")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, root)
        ctx = mp.get_context("spawn")
        results = ctx.SimpleQueue()
        mp.spawn(rank_main, args=(args, root, free_port(), results), nprocs=args.world)
        epoch_secs, test_acc, peak = results.get()
    print(json.dumps({"epoch_secs": epoch_secs, "test_acc": test_acc, "peak_gpu_bytes": peak,
                      "world": args.world,
                      "threads": args.threads, "device": args.device,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
