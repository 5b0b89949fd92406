#!/usr/bin/env bash
# d2l §13.5 (LeNet) or §13.6 (ResNet-18) reproduced: trains the chapter's configs and writes, into
# OUT (default docs/results/<date>, or <date>-13.6): results.md (a table of config, backend, devices, precision, test acc,
# sec/epoch, samples/s, and the machine) and plots/<config>.svg (train loss, train acc and test acc
# per epoch, as d2l's figures show them), plus each run's folder under runs/.
#
#   scripts/reproduce_d2l.sh [--chapter 13.5|13.6] [--out DIR] [--cpu | --one-gpu]
#                            [--configs "NAME ..."] [-- ARGS ...]
#
# §13.5: LeNet, batch 256 and lr 0.2 on one and two devices (dp, ddp), and dp at batch 512.
# §13.6: ResNet-18, batch 256 and lr 0.1 on one device; batch 512 and lr 0.2 on two (dp as d2l's
# nn.DataParallel, ddp, and ddp with SyncBatchNorm). On 2 CPU cores §13.6 takes hours: see
# docs/reproducing.md before running it there.
#
# The configs ask for GPUs (cuda:0, and cuda:1 for the two-device ones). --one-gpu runs every
# device of a config on cuda:0 (the two-device configs as [cuda:0, cuda:0]: their mechanics, not
# two GPUs' speed); --cpu runs each on as many CPU devices instead; arguments after -- go to
# every `dptrain train` (e.g. -- --set train.epochs=2). A run that fails is reported in the table
# with its exit status, and the others still run. Plots need gnuplot-nox (installed if missing)
# or, where apt cannot install it (the GPU machine), a PYTHON with matplotlib.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chapter=13.5 out="" configs=""
devices_as="" mode_flag=""  # "cpu" or "cuda:0": every device of a config becomes that one
extra=()
usage="usage: $0 [--chapter 13.5|13.6] [--out DIR] [--cpu | --one-gpu] [--configs \"NAME ...\"] [-- ARGS ...]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --chapter) chapter=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cpu) devices_as=cpu mode_flag=" --cpu"; shift ;;
    --one-gpu) devices_as=cuda:0 mode_flag=" --one-gpu"; shift ;;
    --configs) configs=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$chapter" in
  13.5) chapter_configs="d2l_1gpu d2l_2gpu_dp d2l_2gpu_ddp d2l_2gpu_dp_b512" title="LeNet" ;;
  13.6) chapter_configs="d2l_resnet_1gpu d2l_resnet_2gpu_dp d2l_resnet_2gpu_ddp d2l_resnet_2gpu_ddp_syncbn"
        title="ResNet-18" ;;
  *) echo "--chapter: 13.5 or 13.6, not \"$chapter\"" >&2; echo "$usage" >&2; exit 2 ;;
esac
configs=${configs:-$chapter_configs}
suffix=""
[[ $chapter == 13.6 ]] && suffix="-13.6"
out=${out:-"$root/docs/results/$(date +%Y-%m-%d)$suffix"}

py=${PYTHON:-python3}
if ! command -v gnuplot >/dev/null; then
  "$root/scripts/setup.sh" gnuplot-nox ||
    echo "reproduce_d2l: gnuplot could not be installed; plotting with $py's matplotlib" >&2
fi
"$root/scripts/build.sh"
bin=${BUILD_DIR:-$root/build}/dptrain
mkdir -p "$out/runs" "$out/plots"

# field FILE EXPR: a Python expression over the JSON in FILE (`j`), printed.
field() { "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# plot RUN NAME: train loss, train acc and test acc per epoch, d2l's three curves.
plot() {
  if ! command -v gnuplot >/dev/null; then
    "$py" "$root/scripts/bench/plot_metrics.py" "$1" "$2" "$out/plots/$2.svg" ||
      echo "reproduce_d2l: no plot of $2: neither gnuplot nor matplotlib" >&2
    return 0
  fi
  local data="$out/plots/$2.dat"
  "$py" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["epoch"], r["train_loss"], r["train_acc"], r["test_acc"], sep="\t")' \
    "$1/metrics.jsonl" >"$data"
  gnuplot <<GNUPLOT
set terminal svg size 480,360 dynamic font "sans,12"
set output "$out/plots/$2.svg"
set title "$2" noenhanced
set xlabel "epoch"
set xtics 1
set key outside bottom center horizontal
set grid
set yrange [0:2.5]
plot "$data" using 1:2 with linespoints title "train loss", \
     "$data" using 1:3 with linespoints title "train acc", \
     "$data" using 1:4 with linespoints title "test acc"
GNUPLOT
  rm -f "$data"
}

rows=()
for name in $configs; do
  config="$root/configs/$name.json"
  run="$out/runs/$name"
  args=(train --config "$config" --output "$run" --overwrite)
  if [[ -n $devices_as ]]; then
    args+=(--set "parallel.devices=$(field "$config" "json.dumps([\"$devices_as\"] * len(j['parallel']['devices']))")")
  fi
  echo "== $name" >&2
  status=0
  "$bin" "${args[@]}" "${extra[@]}" || status=$?
  if [[ $status -ne 0 ]]; then
    rows+=("| $name | | | | failed (exit $status) | | |")
    continue
  fi
  rows+=("| $name | $(field "$run/summary.json" "' | '.join([j['backend'], ', '.join(j['devices']), j['precision'], str(round(j['test_acc'], 3)), str(round(j['sec_per_epoch'], 3)), str(round(j['samples_per_sec']))])") |")
  plot "$run" "$name"
done

gpu="none"
if command -v nvidia-smi >/dev/null; then
  gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
{
  echo "# d2l §$chapter reproduced ($title)"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- machine: $(nproc) CPU cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), GPU: $gpu"
  "$bin" info | sed -n 's/^\(libtorch\|cuda\|cudnn\|nccl\|gloo\): /- \1: /p'
  echo "- command: scripts/reproduce_d2l.sh --chapter $chapter${mode_flag}${extra[*]:+ -- ${extra[*]}}"
  echo
  echo "| config | backend | devices | precision | test acc | sec/epoch | samples/s |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  for name in $configs; do
    [[ -f "$out/plots/$name.svg" ]] && echo "![$name](plots/$name.svg)"
  done
} >"$out/results.md"
echo "wrote $out/results.md" >&2
