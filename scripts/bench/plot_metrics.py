#!/usr/bin/env python3
"""A run's d2l curves as SVG with matplotlib, where gnuplot is not installed (the GPU machine):
train loss, train acc and test acc per epoch, as scripts/reproduce_d2l.sh draws them with gnuplot.

  plot_metrics.py RUN_DIR TITLE OUT.svg
"""
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def main():
    run, title, out = sys.argv[1:4]
    rows = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    epochs = [r["epoch"] for r in rows]
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    for key, label in (("train_loss", "train loss"), ("train_acc", "train acc"),
                       ("test_acc", "test acc")):
        ax.plot(epochs, [r[key] for r in rows], marker="o", label=label)
    ax.set_title(title)
    ax.set_xlabel("epoch")
    ax.set_xticks(epochs)
    ax.set_ylim(0, 2.5)
    ax.grid(True)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
