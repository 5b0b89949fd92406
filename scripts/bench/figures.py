#!/usr/bin/env python3
"""Reads what scripts/bench_gpu.sh or scripts/bench_peers.sh ran, prints its table (markdown) and
writes the figures as JSON.

  figures.py WORK OUT_JSON [--base TAG] [--group PREFIX=TAG ...]

WORK holds dptrain's run folders (dptrain-<tag>-<r>/, each with metrics.jsonl and summary.json),
each peer's JSON line (peer-<name>-<r>.json, as the peer scripts print it) and, where the bench
measured it, a run's peak resident set size in KiB (<the run's name>.rss, GNU time's %M: the
largest single process of the run, so one rank of a ddp run or one loader worker).

A run's time is the median of its epochs after the first (the first pays for warm-up: worker
start, the allocator, compilation), or its only epoch; a peer that times steps instead (the
ResNet peers) gives its samples/s over the steps after its warm-up. A figure over runs is the
median of the runs'. Each peer is compared with one dptrain tag: the one named by the longest
--group prefix of its name, else --base. The ratio is dptrain's samples/s over the peer's: above
1, dptrain is faster.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def steady(values):
    return statistics.median(values[1:] if len(values) > 1 else values)


def peak_rss(work, run):
    try:
        return int(open(os.path.join(work, run + ".rss")).read().split()[-1]) * 1024
    except (OSError, ValueError, IndexError):
        return None


def dptrain_runs(work):
    runs = {}
    for folder in sorted(glob.glob(os.path.join(work, "dptrain-*"))):
        if not os.path.isdir(folder):
            continue
        tag = re.sub(r"-\d+$", "", os.path.basename(folder)[len("dptrain-"):])
        try:
            epochs = [json.loads(line) for line in open(os.path.join(folder, "metrics.jsonl"))]
            summary = json.load(open(os.path.join(folder, "summary.json")))
        except (OSError, ValueError) as e:
            print(f"figures: {folder} left out: {e}", file=sys.stderr)
            continue
        peaks = [max(e.get("peak_gpu_bytes") or [0]) for e in epochs]
        sec = steady([e["train_sec"] for e in epochs])
        runs.setdefault(tag, []).append({
            "sec_per_epoch": sec,
            "samples_per_sec": epochs[-1]["train_samples"] / sec,
            "test_acc": summary["test_acc"],
            "epochs": len(epochs),
            "peak_gpu_bytes": max(peaks) or None,
            "peak_rss_bytes": peak_rss(work, os.path.basename(folder)),
            "versions": {"devices": summary.get("devices"), "precision": summary.get("precision")},
        })
    return runs


def peer_runs(work):
    runs = {}
    for path in sorted(glob.glob(os.path.join(work, "peer-*.json"))):
        name = re.sub(r"-\d+\.json$", "", os.path.basename(path)[len("peer-"):])
        try:
            record = json.load(open(path))
            if "epoch_secs" not in record and "samples_per_sec" not in record:
                raise ValueError("neither epoch_secs nor samples_per_sec in its last JSON line")
        except ValueError as e:
            print(f"figures: {path} left out: {e}", file=sys.stderr)
            continue
        run = {"test_acc": record.get("test_acc"),
               "peak_gpu_bytes": record.get("peak_gpu_bytes"),
               "peak_rss_bytes": peak_rss(work, os.path.basename(path)[:-len(".json")]),
               "versions": {k: record[k] for k in ("torch", "lightning", "d2l", "mode")
                            if k in record}}
        if "epoch_secs" in record:
            run["sec_per_epoch"] = steady(record["epoch_secs"])
            run["samples_per_sec"] = record.get("samples", 60000) / run["sec_per_epoch"]
            run["epochs"] = len(record["epoch_secs"])
        else:
            run.update(sec_per_epoch=None, samples_per_sec=record["samples_per_sec"],
                       epochs=None, steps=record.get("steps"),
                       warmup_secs=record.get("warmup_secs"))
        runs.setdefault(name, []).append(run)
    return runs


def median_of(rs, key):
    values = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarise(runs):
    return {name: {"runs": len(rs),
                   "sec_per_epoch_median": median_of(rs, "sec_per_epoch"),
                   "samples_per_sec_median": median_of(rs, "samples_per_sec"),
                   "test_acc": [r["test_acc"] for r in rs],
                   "epochs": rs[0]["epochs"],
                   "peak_gpu_bytes": max((r["peak_gpu_bytes"] or 0) for r in rs) or None,
                   "peak_rss_bytes": max((r["peak_rss_bytes"] or 0) for r in rs) or None,
                   "versions": rs[0]["versions"],
                   "each_run": rs}
            for name, rs in runs.items()}


def base_of(name, base, groups):
    matches = [prefix for prefix in groups if name.startswith(prefix)]
    return groups[max(matches, key=len)] if matches else base


def mib(value):
    return f"{value / 2**20:.0f}" if value else "n/a"


def row(who, s, ratio, gpu):
    sec = s["sec_per_epoch_median"]
    accs = ", ".join(f"{a:.3f}" for a in s["test_acc"] if a is not None) or "n/a"
    memory = mib(s["peak_gpu_bytes"]) if gpu else mib(s["peak_rss_bytes"])
    return (f"| {who} | {f'{sec * 1000:.1f}' if sec else 'n/a'} | "
            f"{s['samples_per_sec_median']:.0f} | {accs} | {memory} | {ratio} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("out_json")
    ap.add_argument("--base", default="b256", help="the dptrain tag peers are compared with")
    ap.add_argument("--group", action="append", default=[], metavar="PREFIX=TAG")
    ap.add_argument("--gpu", action="store_true", help="show peak GPU memory, not peak RSS")
    args = ap.parse_args()
    groups = dict(g.split("=", 1) for g in args.group)
    ours = summarise(dptrain_runs(args.work))
    peers = summarise(peer_runs(args.work))
    rows = []
    # The base first, then the groups' tags in the order given, then any other.
    order = list(dict.fromkeys([args.base, *groups.values(), *ours]))
    for tag in (t for t in order if t in ours):
        s = ours[tag]
        rows.append(row(f"dptrain {tag}", s, "", args.gpu))
        for name, p in peers.items():
            if base_of(name, args.base, groups) != tag:
                continue
            p["dptrain_speedup"] = s["samples_per_sec_median"] / p["samples_per_sec_median"]
            p["compared_with"] = tag
            rows.append(row(name, p, f"{p['dptrain_speedup']:.2f}x", args.gpu))
    # A peer whose dptrain runs all failed still shows, without a ratio.
    rows += [row(name, p, "n/a", args.gpu) for name, p in peers.items() if "compared_with" not in p]
    memory = "peak GPU MiB" if args.gpu else "peak RSS MiB (largest process)"
    print(f"| run | ms/epoch (median) | samples/s | test acc (each run) | {memory} | "
          "dptrain's speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    with open(args.out_json, "w") as f:
        json.dump({"dptrain": ours, "peers": peers}, f, indent=1)


if __name__ == "__main__":
    main()
