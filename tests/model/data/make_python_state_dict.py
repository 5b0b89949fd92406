"""Writes python_state_dict.pt, the fixture of tests/model/state_dict_test.cpp: what Python's
torch.save(net.state_dict(), path) writes (an OrderedDict with _metadata), for a Linear(3, 2)
with known values, plus an int64 buffer and a non-contiguous view to exercise strides.

Run with Debian 12's PyTorch 1.13 (/usr/bin/python3 make_python_state_dict.py) for
python_state_dict.pt, and with trixie's 2.6 (in scripts/check_torch2.sh's chroot) for
python26_state_dict.pt, renamed.
"""
import collections

import torch

net = torch.nn.Linear(3, 2)
with torch.no_grad():
    net.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3) / 10)
    net.bias.copy_(torch.tensor([-1.0, 2.0]))
state = net.state_dict()
state["steps"] = torch.tensor([7, -3], dtype=torch.int64)
state["transposed"] = torch.arange(6, dtype=torch.float64).reshape(2, 3).t()
assert isinstance(state, collections.OrderedDict)
torch.save(state, "python_state_dict.pt")
