"""The Python side of tests/cli/security_test.cpp: PyTorch opens a dptrain checkpoint with
torch.load, plain and with weights_only=True (torch_load.py; weights_only refuses anything but
plain containers and tensors), and compares its parameters with the run's model.pt.

    python3 read_checkpoint.py CHECKPOINT MODEL_PT

prints one line of JSON: the checkpoint's keys, its format, the record's model, the state names
of parameter 0, the param_groups, whether its parameters equal model.pt's, and torch's version.
"""
import json
import sys

import torch

import torch_load

checkpoint = torch_load.load(sys.argv[1])
model = torch_load.load(sys.argv[2])
record = json.loads(checkpoint["record"])
print(json.dumps({
    "keys": list(checkpoint.keys()),
    "format": checkpoint["dptrain_checkpoint"],
    "model": record["model"],
    "state": sorted(checkpoint["optimizer"]["state"][0].keys()),
    "step": int(checkpoint["optimizer"]["state"][0].get("step", -1)),
    "param_groups": checkpoint["optimizer"]["param_groups"],
    "rng_bytes": checkpoint["cpu_rng"].numel(),
    "equal": all(torch.equal(a, b) for a, b in zip(checkpoint["parameters"], model.values()))
    and len(checkpoint["parameters"]) == len(model),
    "torch": torch.__version__,
}))
