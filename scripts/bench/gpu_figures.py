#!/usr/bin/env python3
"""Reads what scripts/bench_gpu.sh ran and prints its table; writes the figures as JSON.

  gpu_figures.py WORK OUT_JSON

WORK holds dptrain's run folders (dptrain-<tag>-<r>/, each with metrics.jsonl and summary.json)
and each peer's JSON line (peer-<name>-<r>.json, as the peer scripts print it). A run's
sec/epoch is the median of its epochs' training times (the first epoch pays for warm-up: cuDNN's
choices, a CUDA graph's capture, compilation); a figure over runs is the median of the runs'.
"""
import glob
import json
import os
import re
import statistics
import sys


def dptrain_runs(work):
    runs = {}
    for folder in sorted(glob.glob(os.path.join(work, "dptrain-*"))):
        tag = re.sub(r"-\d+$", "", os.path.basename(folder)[len("dptrain-"):])
        try:
            epochs = [json.loads(line) for line in open(os.path.join(folder, "metrics.jsonl"))]
            summary = json.load(open(os.path.join(folder, "summary.json")))
        except (OSError, ValueError) as e:
            print(f"gpu_figures: {folder} left out: {e}", file=sys.stderr)
            continue
        peaks = [max(e.get("peak_gpu_bytes") or [0]) for e in epochs]
        runs.setdefault(tag, []).append({
            "sec_per_epoch": statistics.median(e["train_sec"] for e in epochs),
            "samples_per_sec": statistics.median(e["train_samples"] / e["train_sec"]
                                                 for e in epochs),
            "test_acc": summary["test_acc"],
            "epochs": len(epochs),
            "peak_gpu_bytes": max(peaks) or None,
            "devices": summary.get("devices"),
            "precision": summary.get("precision"),
        })
    return runs


def peer_runs(work):
    runs = {}
    for path in sorted(glob.glob(os.path.join(work, "peer-*.json"))):
        name = re.sub(r"-\d+\.json$", "", os.path.basename(path)[len("peer-"):])
        try:
            record = json.load(open(path))
        except ValueError as e:
            print(f"gpu_figures: {path} left out: {e}", file=sys.stderr)
            continue
        runs.setdefault(name, []).append({
            "sec_per_epoch": statistics.median(record["epoch_secs"]),
            "samples_per_sec": 60000 / statistics.median(record["epoch_secs"]),
            "test_acc": record["test_acc"],
            "epochs": len(record["epoch_secs"]),
            "peak_gpu_bytes": record.get("peak_gpu_bytes"),
            "versions": {k: record[k] for k in ("torch", "lightning", "mode") if k in record},
        })
    return runs


def summarise(runs):
    out = {}
    for name, rs in runs.items():
        out[name] = {
            "runs": len(rs),
            "sec_per_epoch_median": statistics.median(r["sec_per_epoch"] for r in rs),
            "samples_per_sec_median": statistics.median(r["samples_per_sec"] for r in rs),
            "test_acc": [r["test_acc"] for r in rs],
            "epochs": rs[0]["epochs"],
            "peak_gpu_bytes": max((r["peak_gpu_bytes"] or 0) for r in rs) or None,
            "each_run": rs,
        }
    return out


def main():
    work, out_json = sys.argv[1], sys.argv[2]
    ours = summarise(dptrain_runs(work))
    peers = summarise(peer_runs(work))
    base = ours.get("b256")
    rows = []
    for name, s in list(ours.items()) + list(peers.items()):
        who = f"dptrain {name}" if name in ours else name
        ratio = ""
        if base and name in peers:
            s["dptrain_speedup"] = s["sec_per_epoch_median"] / base["sec_per_epoch_median"]
            ratio = f"{s['dptrain_speedup']:.2f}x"
        peak = f"{s['peak_gpu_bytes'] / 2**20:.0f}" if s["peak_gpu_bytes"] else "n/a"
        accs = ", ".join(f"{a:.3f}" for a in s["test_acc"])
        rows.append(f"| {who} | {s['sec_per_epoch_median'] * 1000:.1f} | "
                    f"{s['samples_per_sec_median']:.0f} | {accs} | {peak} | {ratio} |")
    print("| run | ms/epoch (median) | samples/s | test acc (each run) | peak GPU MiB | "
          "peer / dptrain b256 |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    with open(out_json, "w") as f:
        json.dump({"dptrain": ours, "peers": peers}, f, indent=1)


if __name__ == "__main__":
    main()
