#!/usr/bin/env bash
# Training speed of dptrain against d2l's §13.5 PyTorch code (scripts/bench/d2l_lenet.py), side
# by side on this machine's CPU at the same thread count, runs alternating so that drift in the
# machine's speed hits both alike. Prints each run's sec/epoch, the medians and their ratio, and
# each side's FLOP rate as a share of the machine's measured fp32 peak at the same thread count
# (scripts/bench_peak.sh; a training sample costs 3 forward passes' FLOPs, the usual convention),
# and with GNU time installed each side's peak resident set size (of its largest process: d2l's
# main process beside its loader workers).
#
#   scripts/bench_train.sh [--threads N] [--epochs E] [--repeats R] [--workers W]
#
# The baseline needs Debian's python3-torch and python3-torchvision; without them only dptrain's
# figures are printed. Each epoch is a full pass over Fashion-MNIST's 60,000 training images.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc) epochs=2 repeats=3 workers=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--epochs E] [--repeats R] [--workers W]" >&2; exit 2 ;;
  esac
done

[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "bench_train: --threads must be a whole number of 1 or more" >&2; exit 2; }
source "$root/scripts/bench/common.sh"
peak_bin=${BUILD_DIR:-$root/build}/dptrain_bench_peak
[[ -x $peak_bin ]] || { echo "bench_train: no $peak_bin (a build with DPTRAIN_BUILD_BENCH=ON has it)" >&2; exit 1; }
have_baseline=0
if have_torch_baseline; then have_baseline=1; fi

dptrain_run() {
  dptrain_sec_per_epoch "$1" --set parallel.devices=cpu --set runtime.threads="$threads" \
    --set train.epochs="$epochs"
}
baseline_run() {
  local timed=()
  [[ -x /usr/bin/time ]] && timed=(/usr/bin/time -f %M -o "$work/base-$1.rss")
  "${timed[@]}" "$py" "$root/scripts/bench/d2l_lenet.py" --data "$data_dir" --epochs "$epochs" \
    --threads "$threads" --workers "$workers" >"$work/base-$1.log" 2>"$work/base-$1.err" ||
    { cat "$work/base-$1.err" >&2; exit 1; }
  tail -n1 "$work/base-$1.log" |
    "$py" -c 'import json,sys; s=json.load(sys.stdin)["epoch_secs"]; print(sum(s)/len(s))'
}

machine_line
echo "settings: $threads threads, $epochs epochs per run, $repeats runs each, Fashion-MNIST from $data_dir"
ours=() base=()
for ((r = 1; r <= repeats; r++)); do
  ours+=("$(dptrain_run "$r")")
  echo "run $r: dptrain ${ours[-1]} sec/epoch"
  if [[ $have_baseline -eq 1 ]]; then
    base+=("$(baseline_run "$r")")
    echo "run $r: d2l pytorch ${base[-1]} sec/epoch (num_workers=$workers)"
  fi
done

peak=$("$peak_bin" --threads "$threads" | tail -n1)
peak_gflops=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["fp32_gflops"])' "$peak")
forward_mflops=$("$bin" info --model lenet | sed -n 's/^forward FLOPs per sample: \([0-9.]*\) M.*/\1/p')
share() {  # share SEC_PER_EPOCH: "X GFLOP/s, Y% of peak"
  awk -v s="$1" -v f="$forward_mflops" -v p="$peak_gflops" \
    'BEGIN { r = 3 * f * 1e6 * 60000 / s / 1e9; printf "%.1f GFLOP/s, %.0f%% of the fp32 peak", r, 100 * r / p }'
}
printf 'fp32 peak     %.1f GFLOP/s at %s threads (LibTorch'"'"'s best kernel, scripts/bench_peak.sh)\n' \
  "$peak_gflops" "$threads"
m_ours=$(median "${ours[@]}")
printf 'dptrain       median %.2f sec/epoch  (%.0f samples/s; %s)\n' "$m_ours" \
  "$(awk -v s="$m_ours" 'BEGIN {print 60000 / s}')" "$(share "$m_ours")"
if [[ $have_baseline -eq 1 ]]; then
  m_base=$(median "${base[@]}")
  printf 'd2l pytorch   median %.2f sec/epoch  (torch %s; %s)\n' "$m_base" \
    "$("$py" -c 'import torch; print(torch.__version__)')" "$(share "$m_base")"
  printf 'speed-up      %.2fx (d2l pytorch / dptrain, medians)\n' \
    "$(awk -v a="$m_base" -v b="$m_ours" 'BEGIN {print a / b}')"
  if [[ -x /usr/bin/time ]]; then
    rss_ours=$(median $(cat "$work"/run-*.rss)) rss_base=$(median $(cat "$work"/base-*.rss))
    printf 'peak RSS      dptrain %.0f MiB, d2l pytorch %.0f MiB: %.2fx (medians)\n' \
      "$(awk -v k="$rss_ours" 'BEGIN {print k / 1024}')" "$(awk -v k="$rss_base" 'BEGIN {print k / 1024}')" \
      "$(awk -v a="$rss_ours" -v b="$rss_base" 'BEGIN {print a / b}')"
  fi
else
  echo "d2l pytorch   not run: install python3-torch and python3-torchvision for the baseline"
fi
