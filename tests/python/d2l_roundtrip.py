"""The Python side of tests/cli/model_file_test.cpp: d2l's LeNet (§13.5) loads dptrain's model.pt
with torch.load, plain and with weights_only=True (torch_load.py), classifies the test images
(the count it gets right and each image's class probabilities), and saves its own state_dict the
way a Python user would.

    python3 d2l_roundtrip.py MODEL_PT DATA_DIR SAVE_AS

prints one line of JSON: {"correct": C, "probabilities": [[10 a test image], ...], "samples": N,
"keys": [...], "torch": its version}.
"""
import gzip
import json
import sys

import numpy as np
import torch
from torch import nn

import torch_load


def lenet():
    # d2l §13.5's net, layer for layer.
    return nn.Sequential(
        nn.Conv2d(1, 20, kernel_size=3), nn.ReLU(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(20, 50, kernel_size=5), nn.ReLU(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main(model_pt, data_dir, save_as):
    state = torch_load.load(model_pt)
    assert type(state) in (dict, __import__("collections").OrderedDict), type(state)
    net = lenet()
    net.load_state_dict(state)  # strict: every key, every shape
    net.eval()
    images = read_idx(f"{data_dir}/t10k-images-idx3-ubyte.gz")
    labels = read_idx(f"{data_dir}/t10k-labels-idx1-ubyte.gz")
    x = torch.from_numpy(images.astype(np.float32) / 255).unsqueeze(1)  # as ToTensor
    y = torch.from_numpy(labels.astype(np.int64))
    probabilities = []
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            logits = net(x[i:i + 1000])
            probabilities += torch.softmax(logits.double(), 1).tolist()
            predicted = logits.argmax(1)
            correct += int((predicted == y[i:i + 1000]).sum())
    torch.save(net.state_dict(), save_as)  # an OrderedDict with _metadata
    print(json.dumps({"correct": correct, "probabilities": probabilities, "samples": len(y),
                      "keys": list(state.keys()),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
