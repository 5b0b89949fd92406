#!/usr/bin/env bash
# The data loader's speed. --part idx (Fashion-MNIST's IDX files in memory):
#  1. loader-only throughput (batches/s, nothing trains) for the host placement with 0/1/2/4
#     workers and for the device placement, beside d2l's torchvision DataLoader with the same
#     worker counts (scripts/bench/d2l_loader.py) when Debian's python3-torch is installed;
#  2. training sec/epoch of the default experiment with each of those settings, in rounds of
#     random order so that drift in the machine's speed hits all alike; medians and their ratio
#     to the host placement with 0 workers.
# --part folders (folders of pictures; needs Debian's python3-torchvision and python3-pil):
#  3. the real 70,000 images written once as ImageFolder trees (scripts/bench/write_folders.py:
#     28x28 grey PNG, 28x28 grey JPEG at quality 95, 96x96 RGB JPEG) into --folders DIR;
#  4. for each tree and W = 0, 1, 2: images/s of dptrain's loader over the training split
#     (bench/folder_throughput.cpp) and of torchvision's DataLoader(ImageFolder) with the same
#     transforms (scripts/bench/folder_loader.py: LeNet's random crop with padding 2 and flip on
#     the 28x28 trees, a random resized crop to 96 and flip on the 96x96 one), the two sides
#     alternating run by run, medians and the ratio, each side's peak resident memory; and where
#     one of dptrain's threads spends a sample's time (read, decode, transforms, collate);
#  5. LeNet's training epoch from the 28x28 PNG tree with 2 workers against the same from the
#     IDX files in memory, with the same transforms;
#  6. ResNet-18's first 6 steps of 32 from the 96x96 RGB JPEG tree with a random resized crop
#     and flip, against the same from the IDX files in memory.
#
#   scripts/bench_loader.sh [--part idx|folders|all] [--device D] [--threads N] [--epochs E]
#                           [--repeats R] [--passes P] [--folders DIR]
#
# --device: cpu (default), cuda:0 ... On a GPU the host placement is measured with pin_memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=cpu threads=$(nproc) epochs=1 repeats=3 passes=5 part=all
folders=$root/build/bench-folders
while [[ $# -gt 0 ]]; do
  case "$1" in
    --part)
      part=$2
      [[ $part =~ ^(idx|folders|all)$ ]] || { echo "bench_loader: --part is idx, folders or all" >&2; exit 2; }
      shift 2 ;;
    --folders) folders=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    *) echo "usage: $0 [--part idx|folders|all] [--device D] [--threads N] [--epochs E]" \
         "[--repeats R] [--passes P] [--folders DIR]" >&2
       exit 2 ;;
  esac
done
source "$root/scripts/bench/common.sh"
pin=false
[[ $device == cuda* ]] && pin=true

machine_line
# Parts 1 and 2: the IDX files.
idx_part() {
  echo "== loader only: batches/s, median of $passes passes over the training split"
  pin_flag=()
  [[ $pin == true ]] && pin_flag=(--pin-memory)
  "${bin%/*}/dptrain_bench_loader" --device "$device" --threads "$threads" --passes "$passes" \
    --data "$data_dir" "${pin_flag[@]}"
  if [[ $device == cpu ]] && have_torch_baseline; then
    (cd "$root/scripts/bench" && "$py" d2l_loader.py --data "$data_dir" --passes "$passes" 2>/dev/null)
  fi

  echo "== training: sec/epoch, median of $repeats runs of $epochs epoch(s), $threads threads"
  settings=("host 0" "host 1" "host 2" "host 4" "device 0")
  declare -A runs
  for ((r = 1; r <= repeats; r++)); do
    # Each round in a new random order: a slow spell of a shared machine, periodic or not, then
    # does not keep landing on the same setting.
    mapfile -t order < <(printf '%s\n' "${settings[@]}" | shuf)
    for s in "${order[@]}"; do
      read -r placement workers <<<"$s"
      secs=$(dptrain_sec_per_epoch "$r-$placement-$workers" --set parallel.devices="$device" \
        --set runtime.threads="$threads" --set train.epochs="$epochs" \
        --set data.placement="$placement" --set data.num_workers="$workers" \
        --set data.pin_memory="$pin")
      runs[$s]+="$secs "
      echo "run $r: placement $placement, $workers workers: $secs sec/epoch"
    done
  done
  # shellcheck disable=SC2086  # the run lists are space-separated numbers
  base=$(median ${runs["host 0"]})
  for s in "${settings[@]}"; do
    read -r placement workers <<<"$s"
    # shellcheck disable=SC2086
    m=$(median ${runs[$s]})
    printf 'placement %-6s workers %s: median %.3f sec/epoch  (%.0f samples/s, %.3fx of host/0 workers)\n' \
      "$placement" "$workers" "$m" "$(awk -v s="$m" 'BEGIN {print 60000 / s}')" \
      "$(awk -v a="$base" -v b="$m" 'BEGIN {print a / b}')"
  done
}

[[ $part == idx || $part == all ]] && idx_part
[[ $part == folders || $part == all ]] && source "$root/scripts/bench/folders.sh"
exit 0
