#!/usr/bin/env bash
# ResNet-18 (d2l §13.6) training speed on this machine's CPU, two comparisons, runs alternating so
# that drift in the machine's speed hits both sides alike; prints each run, the medians, the ratios:
#   1. dptrain against d2l's §13.6 PyTorch code (scripts/bench/d2l_resnet.py) at the same thread
#      count, batch and number of steps;
#   2. dptrain's ddp with one rank per core (1 thread each) against single with all the cores, at
#      the same global batch: on ResNet the compute outweighs the all-reduce of its 45 MB of
#      gradients, which LeNet's did not.
#
#   scripts/bench_resnet.sh [--steps S] [--batch B] [--repeats R] [--workers W]
#
# Samples/s over S steps of batch B (the first step included on both sides). The baseline needs
# Debian's python3-torch and python3-torchvision; without them comparison 1 shows dptrain alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=20 batch=256 repeats=3 workers=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "usage: $0 [--steps S] [--batch B] [--repeats R] [--workers W]" >&2; exit 2 ;;
  esac
done

source "$root/scripts/bench/common.sh"
threads=$(nproc)
have_baseline=0
if have_torch_baseline; then have_baseline=1; fi

# samples/s of a dptrain run of $steps steps: TAG [--set ...]
dptrain_samples_per_sec() {
  local tag=$1
  shift
  local sec
  sec=$(dptrain_sec_per_epoch "$tag" --set model.name=resnet18 --set optimizer.lr=0.1 \
    --set data.batch_size="$batch" --set train.epochs=1 --set train.limit_train_batches="$steps" \
    --set train.limit_eval_batches=1 --set checkpoint.every_epochs=0 "$@")
  awk -v s="$sec" -v n=$((steps * batch)) 'BEGIN {print n / s}'
}
baseline_samples_per_sec() {
  "$py" "$root/scripts/bench/d2l_resnet.py" --data "$data_dir" --steps "$steps" \
    --batch-size "$batch" --threads "$threads" --workers "$workers" >"$work/base-$1.log" \
    2>"$work/base-$1.err" || { cat "$work/base-$1.err" >&2; exit 1; }
  tail -n1 "$work/base-$1.log" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["samples_per_sec"])'
}
cores_list() {  # ["cpu","cpu",...], one per core
  "$py" -c 'import json,sys; print(json.dumps(["cpu"] * int(sys.argv[1]), separators=(",", ":")))' "$1"
}

machine_line
echo "settings: ResNet-18, batch $batch, $steps steps per run, $repeats runs each, $threads cores"
single=() base=() ddp=()
for ((r = 1; r <= repeats; r++)); do
  single+=("$(dptrain_samples_per_sec "single-$r" --set parallel.devices=cpu --set runtime.threads="$threads")")
  echo "run $r: dptrain single, $threads threads: ${single[-1]} samples/s"
  if [[ $have_baseline -eq 1 ]]; then
    base+=("$(baseline_samples_per_sec "$r")")
    echo "run $r: d2l pytorch, $threads threads: ${base[-1]} samples/s (num_workers=$workers)"
  fi
  ddp+=("$(dptrain_samples_per_sec "ddp-$r" --set parallel.backend=ddp \
    --set parallel.devices="$(cores_list "$threads")" --set runtime.threads=1)")
  echo "run $r: dptrain ddp, $threads ranks of 1 thread: ${ddp[-1]} samples/s (all-reduce wait $(wait_share "ddp-$r"))"
done

m_single=$(median "${single[@]}")
m_ddp=$(median "${ddp[@]}")
printf 'dptrain single     median %.1f samples/s\n' "$m_single"
if [[ $have_baseline -eq 1 ]]; then
  m_base=$(median "${base[@]}")
  printf 'd2l pytorch        median %.1f samples/s  (torch %s)\n' "$m_base" \
    "$("$py" -c 'import torch; print(torch.__version__)')"
  printf 'speed-up           %.2fx (dptrain single / d2l pytorch, medians)\n' \
    "$(awk -v a="$m_single" -v b="$m_base" 'BEGIN {print a / b}')"
else
  echo "d2l pytorch        not run: install python3-torch and python3-torchvision for the baseline"
fi
printf 'dptrain ddp        median %.1f samples/s  (%d ranks x 1 thread)\n' "$m_ddp" "$threads"
printf 'ddp / single       %.2fx (medians)\n' "$(awk -v a="$m_ddp" -v b="$m_single" 'BEGIN {print a / b}')"
