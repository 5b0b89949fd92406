#!/usr/bin/env bash
# ddp on this machine's CPU: sec/epoch of dptrain's single backend, its ddp with 1 and 2 ranks,
# and PyTorch's DistributedDataParallel (scripts/bench/torch_ddp.py, Gloo) with 1 and 2 ranks,
# each setting in every round, rounds in random order. For dptrain's ddp it also prints the share
# of training time rank 0 spent waiting in the gradient all-reduces (metrics.jsonl's
# comm_wait_sec: communication that backward did not hide, plus waiting for a slower rank).
#
#   scripts/bench_ddp.sh [--threads N] [--epochs E] [--repeats R]
#
# N threads in all (default: every core): one rank gets N, each of two ranks N/2. Full epochs of
# Fashion-MNIST's 60,000 training images, global batch 256, host placement, no loader workers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench/options.sh"
bench_options "$0" "$@"

source "$root/scripts/bench/common.sh"
have_baseline=0
if have_torch_baseline; then have_baseline=1; fi

settings=(single ddp1 ddp2)
[[ $have_baseline -eq 1 ]] && settings+=(torch1 torch2)

run_setting() {  # run_setting SETTING ROUND: prints sec/epoch
  local tag="$1-$2" common=(--set train.epochs="$epochs" --set data.placement=host)
  case "$1" in
    single) dptrain_sec_per_epoch "$tag" "${common[@]}" --set parallel.devices=cpu \
              --set runtime.threads="$threads" ;;
    ddp1) dptrain_sec_per_epoch "$tag" "${common[@]}" --set parallel.backend=ddp \
            --set parallel.devices=cpu --set runtime.threads="$threads" ;;
    ddp2) dptrain_sec_per_epoch "$tag" "${common[@]}" --set parallel.backend=ddp \
            --set 'parallel.devices=["cpu","cpu"]' --set runtime.threads="$half" ;;
    torch1|torch2)
      local world=${1#torch} per_rank=$threads
      [[ $world -eq 2 ]] && per_rank=$half
      "$py" "$root/scripts/bench/torch_ddp.py" --data "$data_dir" --world "$world" \
        --epochs "$epochs" --threads "$per_rank" >"$work/$tag.log" 2>&1 ||
        { cat "$work/$tag.log" >&2; exit 1; }
      tail -n1 "$work/$tag.log" |
        "$py" -c 'import json,sys; s=json.load(sys.stdin)["epoch_secs"]; print(sum(s)/len(s))' ;;
  esac
}

machine_line
echo "settings: $threads threads in all, $epochs epoch(s) per run, $repeats rounds, data $data_dir"
declare -A secs shares
for ((r = 1; r <= repeats; r++)); do
  for s in $(printf '%s\n' "${settings[@]}" | shuf); do
    value=$(run_setting "$s" "$r")
    secs[$s]+="$value "
    line="round $r: $s $value sec/epoch"
    if [[ $s == ddp* ]]; then
      share=$(wait_share "$s-$r")
      shares[$s]+="$share "
      line+=", all-reduce wait $(awk -v w="$share" 'BEGIN {printf "%.1f%%", 100 * w}')"
    fi
    echo "$line"
  done
done

m_single=$(median ${secs[single]})
echo
printf '%-8s %12s %12s %14s\n' setting "sec/epoch" "vs single" "all-reduce wait"
for s in "${settings[@]}"; do
  m=$(median ${secs[$s]})
  wait_col="-"
  if [[ -n ${shares[$s]:-} ]]; then
    wait_col=$(awk -v w="$(median ${shares[$s]})" 'BEGIN {printf "%.1f%%", 100 * w}')
  fi
  printf '%-8s %12.2f %11.2fx %14s\n' "$s" "$m" "$(awk -v a="$m_single" -v b="$m" 'BEGIN {print a / b}')" "$wait_col"
done
if [[ $have_baseline -eq 1 ]]; then
  for w in 1 2; do
    printf 'ddp%s against PyTorch DDP with %s rank(s): %.2fx faster (medians)\n' "$w" "$w" \
      "$(awk -v a="$(median ${secs[torch$w]})" -v b="$(median ${secs[ddp$w]})" 'BEGIN {print a / b}')"
  done
else
  echo "PyTorch DDP not run: install python3-torch and python3-torchvision for the baseline"
fi
