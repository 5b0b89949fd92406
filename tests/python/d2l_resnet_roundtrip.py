"""The Python side of tests/cli/resnet_test.cpp: d2l §13.6's ResNet-18, built as d2l builds it
(d2l.Residual with Lazy layers, materialised by one forward), loads dptrain's model.pt with
torch.load(weights_only=True) and load_state_dict(strict=True), and gives its confusion matrix on
the test images in eval mode; it saves its own state_dict the way a Python user would.

    python3 d2l_resnet_roundtrip.py MODEL_PT DATA_DIR SAVE_AS

prints one line of JSON: {"confusion": [[...]], "samples": N, "file_keys": [...], "d2l_keys": [...]}.
"""
import gzip
import json
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class Residual(nn.Module):
    # d2l.Residual (d2l-en 1.0, d2l/torch.py), layer for layer.
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def resnet18(num_classes, in_channels=1):
    # d2l §13.6's resnet18, as its text gives it.
    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels))
        return nn.Sequential(*blk)

    net = nn.Sequential(
        nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main(model_pt, data_dir, save_as):
    state = torch.load(model_pt, weights_only=True)
    assert type(state) in (dict, __import__("collections").OrderedDict), type(state)
    net = resnet18(10)
    net(torch.zeros(1, 1, 28, 28))  # materialises the Lazy layers
    net.load_state_dict(state, strict=True)  # every key, every shape, buffers too
    net.eval()
    images = read_idx(f"{data_dir}/t10k-images-idx3-ubyte.gz")
    labels = read_idx(f"{data_dir}/t10k-labels-idx1-ubyte.gz")
    x = torch.from_numpy(images.astype(np.float32) / 255).unsqueeze(1)  # as ToTensor
    y = torch.from_numpy(labels.astype(np.int64))
    confusion = torch.zeros(10, 10, dtype=torch.int64)
    with torch.no_grad():
        for i in range(0, len(y), 100):
            predicted = net(x[i:i + 100]).argmax(1)
            for truth, guess in zip(y[i:i + 100].tolist(), predicted.tolist()):
                confusion[truth, guess] += 1
    torch.save(net.state_dict(), save_as)  # an OrderedDict with _metadata
    print(json.dumps({"confusion": confusion.tolist(), "samples": len(y),
                      "file_keys": list(state.keys()), "d2l_keys": list(net.state_dict().keys()),
                      "num_batches_tracked": int(state["1.num_batches_tracked"]),
                      "tracked_dtype": str(state["1.num_batches_tracked"].dtype)}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
