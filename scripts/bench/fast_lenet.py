#!/usr/bin/env python3
"""The fastest plain PyTorch loop for d2l §13.5's LeNet: the peer dptrain has to beat on one GPU
(scripts/bench_gpu.sh) and on the CPU (scripts/bench_peers.sh).

The same LeNet as dptrain's (torch_ddp.lenet), batch 256, SGD at lr 0.2 on the mean
cross-entropy. Fashion-MNIST lives on the device as float32 and is shuffled there each epoch;
each full batch's whole step (forward, loss, backward, SGD's update) is one CUDA graph replay
(--mode graph, the default on a GPU), or torch.compile(mode="reduce-overhead") with its own CUDA
graphs (--mode compile; on a CPU, torch.compile's default mode), or plain eager PyTorch (--mode
eager, the default on a CPU). The last, partial batch of an epoch runs eagerly. Each epoch's
training loop is timed after a synchronize. Prints one JSON object on its last line.
"""
import argparse
import json
import tempfile
import time

import torch
import torchvision
from torch.nn import functional as F

from d2l_lenet import stage_fashion_mnist
from torch_ddp import lenet


def resident(root, train, device):
    """The split as float32 images in [0, 1] and int64 labels, on `device`."""
    ds = torchvision.datasets.FashionMNIST(root=root, train=train)
    return ((ds.data.to(device=device, dtype=torch.float32) / 255).unsqueeze(1),
            ds.targets.to(device))


def graphed_step(net, optimizer, images, labels, batch):
    """Captures one whole training step on static inputs; returns them and the graph."""
    static_x = images[:batch].clone()
    static_y = labels[:batch].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as capture requires, off the default stream
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(net(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        F.cross_entropy(net(static_x), static_y).backward()
        optimizer.step()
    return static_x, static_y, graph


def accuracy(net, images, labels, chunk=1024):
    """In chunks, as a loader would batch them: all 10,000 at once would hold a 0.5 GB activation
    and make the peak RSS the evaluation's, not the training's."""
    with torch.no_grad():
        correct = sum((net(x).argmax(1) == y).sum().item()
                      for x, y in zip(images.split(chunk), labels.split(chunk)))
    return correct / labels.numel()


def eager_step(net, optimizer, x, y):
    optimizer.zero_grad(set_to_none=False)
    F.cross_entropy(net(x), y).backward()
    optimizer.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--mode", choices=["graph", "compile", "eager"], default=None)
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads on a CPU")
    args = ap.parse_args()
    device = torch.device(args.device)
    mode = args.mode or ("graph" if device.type == "cuda" else "eager")
    if mode == "graph" and device.type != "cuda":
        ap.error("--mode graph needs a GPU")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, root)
        images, labels = resident(root, True, device)
        test_images, test_labels = resident(root, False, device)
    net = lenet().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
    # Warm-up steps change the weights: the timed run starts from these, as d2l's does from its
    # own initialisation. A fresh net afterwards would need a fresh capture.
    # reduce-overhead is CUDA graphs; a CPU has none, so there it compiles in the default mode.
    compile_mode = "reduce-overhead" if device.type == "cuda" else "default"
    model = torch.compile(net, mode=compile_mode) if mode == "compile" else net
    if mode == "graph":
        static_x, static_y, graph = graphed_step(net, optimizer, images, labels, args.batch_size)
    n, b = images.shape[0], args.batch_size
    epoch_secs, accs = [], []
    for epoch in range(args.epochs):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        order = torch.randperm(n, device=device)
        for first in range(0, n, b):
            idx = order[first:first + b]
            if mode == "graph" and idx.numel() == b:
                torch.index_select(images, 0, idx, out=static_x)
                torch.index_select(labels, 0, idx, out=static_y)
                graph.replay()
            else:  # the partial batch eagerly: a compiled one would recompile for its shape
                eager_step(model if idx.numel() == b else net, optimizer, images[idx], labels[idx])
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        epoch_secs.append(time.perf_counter() - start)
        accs.append(accuracy(net, test_images, test_labels))
        print(f"epoch {epoch + 1}: test acc {accs[-1]:.4f}, {epoch_secs[-1] * 1000:.1f} ms",
              flush=True)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    print(json.dumps({"epoch_secs": epoch_secs, "test_acc": accs[-1], "mode": mode,
                      "device": str(device), "peak_gpu_bytes": peak,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
