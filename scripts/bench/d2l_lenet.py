#!/usr/bin/env python3
"""d2l.ai §13.5 ("Training on Multiple GPUs", from scratch) on one device, as the book runs it.

The book's code: the same LeNet written with functional ops, N(0, 0.01^2) weights, summed
cross-entropy with SGD dividing by the batch size, torchvision's FashionMNIST with ToTensor,
DataLoader(shuffle=True, num_workers=4), and the book's timer around each epoch's training loop
(with its torch.cuda.synchronize() on a GPU). Its d2l helpers (load_data_fashion_mnist, sgd,
evaluate_accuracy_gpu) come from the d2l package where it is importable (scripts/venv.sh peers;
Debian has none), else from the copies inlined here (--helpers inline). The book's Animator, which
only draws, is left out: it runs outside the timed loop. It is the baseline that scripts/bench_train.sh runs beside dptrain on the CPU, and
scripts/bench_gpu.sh on a GPU (--device cuda:0). Prints one JSON object on its last line.
"""
import argparse
import gzip
import importlib.metadata
import json
import os
import shutil
import tempfile
import time

import torch
import torchvision
from torch import nn
from torch.nn import functional as F
from torch.utils import data
from torchvision import transforms

FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def stage_fashion_mnist(src, root):
    """Lays the IDX files out as torchvision's FashionMNIST(download=False) expects them."""
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in FILES:
        gz = os.path.join(src, name + ".gz")
        with (gzip.open(gz) if os.path.exists(gz) else open(os.path.join(src, name), "rb")) as f:
            with open(os.path.join(raw, name), "wb") as out:
                shutil.copyfileobj(f, out)


def load_data_fashion_mnist(batch_size, root, workers):  # d2l.load_data_fashion_mnist
    trans = transforms.ToTensor()
    train = torchvision.datasets.FashionMNIST(root=root, train=True, transform=trans)
    test = torchvision.datasets.FashionMNIST(root=root, train=False, transform=trans)
    return (data.DataLoader(train, batch_size, shuffle=True, num_workers=workers),
            data.DataLoader(test, batch_size, shuffle=False, num_workers=workers))


def get_params(scale=0.01):
    return [torch.randn(size=(20, 1, 3, 3)) * scale, torch.zeros(20),
            torch.randn(size=(50, 20, 5, 5)) * scale, torch.zeros(50),
            torch.randn(size=(800, 128)) * scale, torch.zeros(128),
            torch.randn(size=(128, 10)) * scale, torch.zeros(10)]


def lenet(X, params):
    h1 = F.avg_pool2d(F.relu(F.conv2d(input=X, weight=params[0], bias=params[1])), (2, 2), (2, 2))
    h2 = F.avg_pool2d(F.relu(F.conv2d(input=h1, weight=params[2], bias=params[3])), (2, 2), (2, 2))
    h2 = h2.reshape(h2.shape[0], -1)
    h3 = F.relu(torch.mm(h2, params[4]) + params[5])
    return torch.mm(h3, params[6]) + params[7]


loss = nn.CrossEntropyLoss(reduction="none")


def sgd(params, lr, batch_size):  # d2l.sgd
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def train_batch(X, y, params, lr, device, sgd):  # §13.5's, one device: no allreduce
    X, y = X.to(device), y.to(device)
    ls = loss(lenet(X, params), y).sum()
    ls.backward()
    sgd(params, lr, X.shape[0])


def evaluate_accuracy(params, data_iter, device):  # d2l.evaluate_accuracy_gpu
    correct, total = 0, 0
    with torch.no_grad():
        for X, y in data_iter:
            X, y = X.to(device), y.to(device)
            correct += (lenet(X, params).argmax(axis=1) == y).sum().item()
            total += y.numel()
    return correct / total


def package_helpers(data_root):
    """d2l's own helpers; its load_data_fashion_mnist reads ../data, so the cwd moves beside it."""
    from d2l import torch as d2l
    work = os.path.join(data_root, "cwd")
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    return {"load": lambda batch_size, _root, _workers: d2l.load_data_fashion_mnist(batch_size),
            "sgd": d2l.sgd,
            "evaluate": lambda params, it, device: d2l.evaluate_accuracy_gpu(
                lambda X: lenet(X, params), it, device)}


def d2l_importable():
    try:
        from d2l import torch as _  # noqa: F401  (its imports, matplotlib's and pandas', too)
        return True
    except ImportError:
        return False


def d2l_version(helpers):
    return importlib.metadata.version("d2l") if helpers == "package" else "inlined"


INLINE = {"load": load_data_fashion_mnist, "sgd": sgd, "evaluate": evaluate_accuracy}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workers", type=int, default=4,
                    help="d2l.get_dataloader_workers(); the d2l package's own 4 where it is used")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda:0 as d2l.try_gpu() gives")
    ap.add_argument("--helpers", choices=["auto", "package", "inline"], default="auto",
                    help="d2l's helpers from its package (auto: where importable) or inlined")
    args = ap.parse_args()
    if args.helpers == "auto":
        args.helpers = "package" if d2l_importable() else "inline"
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, os.path.join(root, "data"))
        helpers = package_helpers(root) if args.helpers == "package" else INLINE
        train_iter, test_iter = helpers["load"](args.batch_size, os.path.join(root, "data"),
                                                args.workers)
        params = [p.to(device).requires_grad_() for p in get_params()]
        epoch_secs, accs = [], []
        for epoch in range(args.epochs):
            start = time.perf_counter()
            for X, y in train_iter:
                train_batch(X, y, params, args.lr, device, helpers["sgd"])
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            epoch_secs.append(time.perf_counter() - start)
            accs.append(helpers["evaluate"](params, test_iter, device))
            print(f"epoch {epoch + 1}: test acc {accs[-1]:.4f}, {epoch_secs[-1]:.2f} s", flush=True)
        print(f"test acc: {accs[-1]:.2f}, {sum(epoch_secs) / len(epoch_secs):.1f} sec/epoch "
              f"on [{device}]")
        peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
        print(json.dumps({"epoch_secs": epoch_secs, "test_acc": accs[-1], "threads": args.threads,
                          "device": str(device), "peak_gpu_bytes": peak,
                          "torch": torch.__version__, "d2l": d2l_version(args.helpers)}))


if __name__ == "__main__":
    main()
