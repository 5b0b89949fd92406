#!/usr/bin/env python3
"""Writes data/pytorch_golden.json: what PyTorch's own optimizers and learning-rate schedulers do
for a few steps of a tiny float64 model (a Linear(4, 3) under cross-entropy), for
tests/optim/golden_test.cpp to hold dptrain's optimizers and schedules to.

Run with Debian 12's python3-torch (PyTorch 1.13):  python3 tests/optim/make_golden.py
Warm-ups are PyTorch's LinearLR (from lr / w to lr over w steps) followed by the schedule, through
SequentialLR; onecycle takes the warm-up as its rising phase (pct_start = w / total)."""
import json
import os
import warnings

import torch
from torch.optim import lr_scheduler as S

STEPS = 12

CASES = [
    # name, optimizer config (dptrain's keys), scheduler config (dptrain's keys)
    ("sgd", {"name": "sgd", "lr": 0.1}, {"name": "none"}),
    ("sgd-momentum-nesterov-decay",
     {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3},
     {"name": "none"}),
    ("adam", {"name": "adam", "lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6,
              "weight_decay": 1e-2}, {"name": "none"}),
    ("adamw", {"name": "adamw", "lr": 0.01, "weight_decay": 0.1}, {"name": "none"}),
    ("sgd-none-warmup", {"name": "sgd", "lr": 0.1, "momentum": 0.9},
     {"name": "none", "warmup_steps": 3}),
    ("sgd-step", {"name": "sgd", "lr": 0.1, "momentum": 0.9},
     {"name": "step", "step_size": 3, "gamma": 0.5}),
    ("sgd-step-warmup", {"name": "sgd", "lr": 0.1, "momentum": 0.9},
     {"name": "step", "step_size": 2, "gamma": 0.5, "warmup_steps": 2}),
    ("sgd-cosine", {"name": "sgd", "lr": 0.1}, {"name": "cosine", "min_lr": 0.001}),
    ("adam-cosine-warmup", {"name": "adam", "lr": 0.01},
     {"name": "cosine", "min_lr": 0.0005, "warmup_steps": 4}),
    ("sgd-onecycle", {"name": "sgd", "lr": 0.1, "momentum": 0.9}, {"name": "onecycle"}),
    ("adamw-onecycle-warmup", {"name": "adamw", "lr": 0.01, "weight_decay": 0.05},
     {"name": "onecycle", "warmup_steps": 5}),
]


def optimizer_for(params, c):
    lr = c["lr"]
    if c["name"] == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=c.get("momentum", 0.0),
                               nesterov=c.get("nesterov", False),
                               weight_decay=c.get("weight_decay", 0.0))
    cls = torch.optim.Adam if c["name"] == "adam" else torch.optim.AdamW
    return cls(params, lr=lr, betas=tuple(c.get("betas", [0.9, 0.999])), eps=c.get("eps", 1e-8),
               weight_decay=c.get("weight_decay", 0.0))


def scheduler_for(opt, c, lr):
    w = c.get("warmup_steps", 0)
    name = c["name"]
    if name == "onecycle":
        pct = w / STEPS if w else 0.3
        return S.OneCycleLR(opt, max_lr=lr, total_steps=STEPS, pct_start=pct,
                            cycle_momentum=False)
    if name == "step":
        main = S.StepLR(opt, step_size=c["step_size"], gamma=c["gamma"])
    elif name == "cosine":
        main = S.CosineAnnealingLR(opt, T_max=STEPS - w, eta_min=c["min_lr"])
    else:
        main = S.LambdaLR(opt, lambda step: 1.0)
    if not w:
        return main
    warmup = S.LinearLR(opt, start_factor=1 / w, end_factor=1.0, total_iters=w - 1)
    return S.SequentialLR(opt, [warmup, main], milestones=[w])


def run(opt_config, sched_config, init, x, y):
    model = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        model.weight.copy_(init["weight"])
        model.bias.copy_(init["bias"])
    opt = optimizer_for(model.parameters(), opt_config)
    sched = scheduler_for(opt, sched_config, opt_config["lr"])
    lrs, params = [], []
    for _ in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()
        params.append([model.weight.detach().flatten().tolist(), model.bias.detach().tolist()])
    return lrs, params


def main():
    # SequentialLR in 1.13 starts each schedule with step(0), PyTorch's own deprecated call.
    warnings.filterwarnings("ignore", message="The epoch parameter")
    g = torch.Generator().manual_seed(5)
    init = {"weight": torch.randn(3, 4, generator=g, dtype=torch.float64) * 0.5,
            "bias": torch.randn(3, generator=g, dtype=torch.float64) * 0.1}
    x = torch.randn(8, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (8,), generator=g)
    cases = []
    for name, opt_config, sched_config in CASES:
        lrs, params = run(opt_config, sched_config, init, x, y)
        cases.append({"name": name, "optimizer": opt_config, "scheduler": sched_config,
                      "lr": lrs, "params": params})
    golden = {
        "torch_version": torch.__version__,
        "steps": STEPS,
        "init": {"weight": init["weight"].flatten().tolist(), "bias": init["bias"].tolist()},
        "x": x.flatten().tolist(),
        "y": y.tolist(),
        "cases": cases,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "pytorch_golden.json")
    with open(out + ".tmp", "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
