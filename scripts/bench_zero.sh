#!/usr/bin/env bash
# ZeRO on this machine's CPU: 2 ddp ranks training d2l's LeNet with Adam, at parallel.zero_stage
# 0, 1 and 2, and PyTorch's DDP with Adam, plain and under its ZeroRedundancyOptimizer (whole
# tensors per rank), each setting in every round, rounds in random order. Prints sec/epoch, the
# ratio to dptrain's stage 0, and rank 0's optimizer-state and gradient bytes (metrics.jsonl).
#
#   scripts/bench_zero.sh [--threads N] [--epochs E] [--repeats R]
#
# N threads in all (default: every core), N/2 per rank. Full epochs of Fashion-MNIST's 60,000
# training images, global batch 256, Adam with lr 0.001, host placement, no loader workers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench/options.sh"
bench_options "$0" "$@"

source "$root/scripts/bench/common.sh"
settings=(stage0 stage1 stage2)
have_baseline=0
if have_torch_baseline; then have_baseline=1; settings+=(torch torch_zero); fi

run_setting() {  # run_setting SETTING ROUND: prints sec/epoch
  local tag="$1-$2"
  case "$1" in
    stage*) dptrain_sec_per_epoch "$tag" --set train.epochs="$epochs" --set data.placement=host \
              --set parallel.backend=ddp --set 'parallel.devices=["cpu","cpu"]' \
              --set runtime.threads="$half" --set optimizer.name=adam --set optimizer.momentum=0 \
              --set optimizer.lr=0.001 --set parallel.zero_stage="${1#stage}" ;;
    torch|torch_zero)
      local zero=()
      [[ $1 == torch_zero ]] && zero=(--zero)
      "$py" "$root/scripts/bench/torch_ddp.py" --data "$data_dir" --world 2 --epochs "$epochs" \
        --threads "$half" --optimizer adam --lr 0.001 "${zero[@]}" >"$work/$tag.log" 2>&1 ||
        { cat "$work/$tag.log" >&2; exit 1; }
      tail -n1 "$work/$tag.log" |
        "$py" -c 'import json,sys; s=json.load(sys.stdin)["epoch_secs"]; print(sum(s)/len(s))' ;;
  esac
}

bytes() {  # bytes TAG KEY: rank 0's figure in the run's last metrics record
  "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])[sys.argv[2]][0])' \
    "$work/run-$1/metrics.jsonl" "$2"
}

machine_line
echo "settings: 2 ranks, $half threads each, Adam, $epochs epoch(s) per run, $repeats rounds"
declare -A secs state grads
for ((r = 1; r <= repeats; r++)); do
  for s in $(printf '%s\n' "${settings[@]}" | shuf); do
    value=$(run_setting "$s" "$r")
    secs[$s]+="$value "
    if [[ $s == stage* ]]; then
      state[$s]=$(bytes "$s-$r" optimizer_state_bytes)
      grads[$s]=$(bytes "$s-$r" gradient_bytes)
    fi
    echo "round $r: $s $value sec/epoch"
  done
done

m0=$(median ${secs[stage0]})
echo
printf '%-11s %10s %12s %22s %16s\n' setting sec/epoch "vs stage0" "optimizer state bytes" "gradient bytes"
for s in "${settings[@]}"; do
  m=$(median ${secs[$s]})
  printf '%-11s %10.2f %11.2fx %22s %16s\n' "$s" "$m" \
    "$(awk -v a="$m0" -v b="$m" 'BEGIN {print a / b}')" "${state[$s]:--}" "${grads[$s]:--}"
done
[[ $have_baseline -eq 1 ]] ||
  echo "PyTorch not run: install python3-torch and python3-torchvision for the baseline"
