#!/usr/bin/env bash
# dp against single on one device type: sec/epoch of dptrain's single backend and its dp backend
# over 1, 2 and (on a CPU) 3 copies of the device, each setting in every round, rounds in random
# order, medians at the end.
#
#   scripts/bench_dp.sh [--device cpu|cuda:N] [--threads N] [--epochs E] [--repeats R]
#
# On the CPU, N threads in all (default: every core): single and dp over one device get N, each of
# k replicas N/k (at least 1). On a GPU the settings are [cuda:N] against [cuda:N, cuda:N], the
# mechanics of two GPUs on one. Full epochs of Fashion-MNIST's 60,000 training images, global
# batch 256, no loader workers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=cpu threads=$(nproc) epochs=1 repeats=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--device cpu|cuda:N] [--threads N] [--epochs E] [--repeats R]" >&2; exit 2 ;;
  esac
done

source "$root/scripts/bench/common.sh"

settings=(single dp1 dp2)
[[ $device == cpu ]] && settings+=(dp3)

devices_json() {  # devices_json K: K copies of the device as a JSON list
  local list="" i
  for ((i = 0; i < $1; i++)); do list+="${list:+,}\"$device\""; done
  echo "[$list]"
}

run_setting() {  # run_setting SETTING ROUND: prints sec/epoch
  local tag="$1-$2" replicas=1 backend=single
  if [[ $1 == dp* ]]; then backend=dp replicas=${1#dp}; fi
  local per_replica=$(( threads / replicas > 0 ? threads / replicas : 1 ))
  dptrain_sec_per_epoch "$tag" --set train.epochs="$epochs" --set parallel.backend="$backend" \
    --set "parallel.devices=$(devices_json "$replicas")" --set runtime.threads="$per_replica"
}

machine_line
if [[ $device == cuda* ]] && command -v nvidia-smi >/dev/null; then
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader -i "${device#cuda:}")"
fi
echo "settings: $device, $threads threads in all, $epochs epoch(s) per run, $repeats rounds"
declare -A secs
for ((r = 1; r <= repeats; r++)); do
  for s in $(printf '%s\n' "${settings[@]}" | shuf); do
    value=$(run_setting "$s" "$r")
    secs[$s]+="$value "
    echo "round $r: $s $value sec/epoch"
  done
done

m_single=$(median ${secs[single]})
echo
printf '%-8s %-34s %12s %12s\n' setting devices "sec/epoch" "vs single"
for s in "${settings[@]}"; do
  m=$(median ${secs[$s]})
  k=1
  [[ $s == dp* ]] && k=${s#dp}
  printf '%-8s %-34s %12.3f %11.2fx\n' "$s" "$(devices_json "$k")" "$m" \
    "$(awk -v a="$m_single" -v b="$m" 'BEGIN {print a / b}')"
done
