#!/usr/bin/env python3
"""PyTorch Lightning's Trainer on d2l §13.5's LeNet: the peer a Python user would pick instead of
dptrain (scripts/bench_gpu.sh runs it on one GPU, scripts/bench_peers.sh on the CPU, alone and as
Lightning's DDP with --devices 2).

The same LeNet as dptrain's (torch_ddp.lenet), batch 256, SGD at lr 0.2 on the mean
cross-entropy, torchvision's FashionMNIST with ToTensor in a DataLoader(shuffle=True,
num_workers=4) as d2l loads it, with what a Lightning user adds (pinned memory on a GPU,
persistent workers). No logger, checkpoints or progress bar: the Trainer's loop alone. A callback
times each training epoch from its start to its end, after a synchronize on a GPU. Test accuracy
after the last epoch. Rank 0 prints one JSON object on its last line.
"""
import argparse
import json
import os
import tempfile
import time

import torch
import torchvision
from torch.nn import functional as F
from torch.utils import data
from torchvision import transforms

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L

from d2l_lenet import stage_fashion_mnist
from torch_ddp import lenet


class LeNetModule(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.net = lenet()
        self.lr = lr

    def training_step(self, batch, _):
        X, y = batch
        return F.cross_entropy(self.net(X), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class EpochTimer(L.Callback):
    def __init__(self):
        self.epoch_secs = []
        self.start = 0.0

    @staticmethod
    def _sync(module):
        if module.device.type == "cuda":
            torch.cuda.synchronize(module.device)

    def on_train_epoch_start(self, trainer, module):
        self._sync(module)
        self.start = time.perf_counter()

    def on_train_epoch_end(self, trainer, module):
        self._sync(module)
        self.epoch_secs.append(time.perf_counter() - self.start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder with the four Fashion-MNIST IDX files")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--accelerator", default="gpu", help="gpu or cpu")
    ap.add_argument("--devices", type=int, default=1, help="above 1: Lightning's DDP, a rank each")
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads per rank (CPU)")
    args = ap.parse_args()
    if args.threads:
        # Lightning's CPU DDP sets its own count unless OMP_NUM_THREADS is set; its ranks are
        # this script again, so they come here too.
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        stage_fashion_mnist(args.data, root)
        trans = transforms.ToTensor()
        train = torchvision.datasets.FashionMNIST(root=root, train=True, transform=trans)
        test = torchvision.datasets.FashionMNIST(root=root, train=False, transform=trans)
        gpu = args.accelerator == "gpu"
        # The batch is global, as dptrain's: each of the DDP ranks takes its share.
        loader = data.DataLoader(train, args.batch_size // args.devices, shuffle=True,
                                 num_workers=args.workers,
                                 pin_memory=gpu, persistent_workers=args.workers > 0)
        module = LeNetModule(args.lr)
        timer = EpochTimer()
        trainer = L.Trainer(max_epochs=args.epochs, accelerator=args.accelerator,
                            devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, callbacks=[timer])
        trainer.fit(module, loader)
        if trainer.global_rank != 0:
            return
        # Rank 0 is the process the bench started; the other ranks are its children, which it
        # waits for, so that none outlives the run (into the next one's timing or past its RSS).
        for proc in getattr(trainer.strategy.launcher, "procs", []):
            proc.wait()
        device = torch.device("cuda:0" if gpu else "cpu")
        net = module.net.to(device).eval()
        correct = 0
        with torch.no_grad():
            for X, y in data.DataLoader(test, batch_size=1024):
                correct += (net(X.to(device)).argmax(1) == y.to(device)).sum().item()
    peak = torch.cuda.max_memory_allocated(device) if gpu else 0
    print(json.dumps({"epoch_secs": timer.epoch_secs, "test_acc": correct / len(test),
                      "device": str(device), "peak_gpu_bytes": peak, "lightning": L.__version__,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
