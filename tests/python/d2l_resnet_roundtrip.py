"""The Python side of tests/cli/resnet_test.cpp: d2l §13.6's ResNet-18, built as d2l builds it
(d2l.Residual with Lazy layers, materialised by one forward), loads dptrain's model.pt with
torch.load, plain and with weights_only=True (torch_load.py), and load_state_dict(strict=True),
and gives its confusion matrix and each test image's class probabilities in eval mode; it saves
its own state_dict the way a Python user would.

    python3 d2l_resnet_roundtrip.py MODEL_PT DATA_DIR SAVE_AS

prints one line of JSON: {"confusion": [[...]], "probabilities": [[10 a test image], ...],
"samples": N, "file_keys": [...], "d2l_keys": [...], "torch": its version}.
"""
import json
import os
import sys

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "bench"))
from d2l_resnet import resnet18  # noqa: E402  d2l §13.6's net, d2l.Residual with Lazy layers
from d2l_roundtrip import read_idx  # noqa: E402
import torch_load  # noqa: E402


def main(model_pt, data_dir, save_as):
    state = torch_load.load(model_pt)
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
    probabilities = []
    with torch.no_grad():
        for i in range(0, len(y), 100):
            logits = net(x[i:i + 100])
            probabilities += torch.softmax(logits.double(), 1).tolist()
            predicted = logits.argmax(1)
            for truth, guess in zip(y[i:i + 100].tolist(), predicted.tolist()):
                confusion[truth, guess] += 1
    torch.save(net.state_dict(), save_as)  # an OrderedDict with _metadata
    print(json.dumps({"confusion": confusion.tolist(), "probabilities": probabilities,
                      "samples": len(y),
                      "file_keys": list(state.keys()), "d2l_keys": list(net.state_dict().keys()),
                      "num_batches_tracked": int(state["1.num_batches_tracked"]),
                      "tracked_dtype": str(state["1.num_batches_tracked"].dtype),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
