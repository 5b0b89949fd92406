#!/usr/bin/env bash
# dptrain on one GPU against the peers a Python user would pick instead, in one command, on the
# same GPU and data: d2l's own §13.5 code (scripts/bench/d2l_lenet.py), PyTorch's DDP over NCCL
# with one rank (bench/torch_ddp.py), PyTorch Lightning's Trainer (bench/lightning_lenet.py) and
# the fastest plain PyTorch loop (bench/fast_lenet.py: data on the GPU, each step one CUDA-graph
# replay; and its torch.compile "reduce-overhead" variant). Every one trains d2l §13.5's LeNet at
# batch 256 and lr 0.2 for the same epochs. d2l's code, DDP and Lightning load data as their users
# do (DataLoader workers decoding images with ToTensor); the plain loop, like dptrain's default on
# a GPU, keeps the data on the GPU: it is the like-for-like peer.
#
#   scripts/bench_gpu.sh [--epochs E] [--repeats R] [--out DIR] [--no-peers]
#
# dptrain runs configs/d2l_1gpu.json (fp32, batch 256) R times, runs alternating with the peers',
# and once each at batch 1024 and in bf16. Prints a table of ms/epoch (the median over a run's
# epochs after its first, then over runs: bench/figures.py), samples/s, test accuracy, peak GPU
# memory and dptrain's speed-up over each peer (their time over its); writes it as OUT/bench_gpu.md, the figures as OUT/bench_gpu.json, and every run's
# log under OUT/logs (OUT defaults to runs/bench-gpu-<date>).
#
# Needs a CUDA build of dptrain (BUILD_DIR; on the GPU machine: source .device/env.sh and set
# BUILD_DIR=build-gpu, as scripts/gpu_round.sh does) and, for the peers, a PYTHON (default
# python3) with PyTorch on CUDA, torchvision and Lightning.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
epochs=10 repeats=3 out="" peers=1
usage="usage: $0 [--epochs E] [--repeats R] [--out DIR] [--no-peers]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-peers) peers=0; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
export PYTHON=${PYTHON:-python3}
source "$root/scripts/bench/common.sh"
if ! "$bin" info | grep -q '^cuda: yes'; then
  echo "bench_gpu: $bin has no GPU to train on ($("$bin" info | grep '^cuda:'))" >&2
  exit 1
fi
out=${out:-$root/runs/bench-gpu-$(date +%Y-%m-%d)}
mkdir -p "$out/logs"
figures=$work/figures
mkdir -p "$figures"

machine_line
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
"$bin" info | grep -E '^(libtorch|cuda|cudnn|nccl):'
echo "settings: $epochs epochs a run, $repeats runs of dptrain's fp32 batch 256 and of each peer"
for ((r = 1; r <= repeats; r++)); do
  dptrain_run d2l_1gpu.json b256 "$r" --set train.epochs="$epochs"
  if [[ $peers -eq 1 ]]; then
    peer_run d2l "$r" d2l_lenet.py --epochs "$epochs" --device cuda:0
    peer_run torch-ddp-nccl "$r" torch_ddp.py --epochs "$epochs" --device cuda --world 1 --workers 4
    peer_run lightning "$r" lightning_lenet.py --epochs "$epochs" --accelerator gpu
    peer_run plain-cuda-graph "$r" fast_lenet.py --epochs "$epochs" --mode graph
    peer_run plain-torch-compile "$r" fast_lenet.py --epochs "$epochs" --mode compile
  fi
  echo "run $r of $repeats done" >&2
done
dptrain_run d2l_1gpu.json b1024 1 --set train.epochs="$epochs" --set data.batch_size=1024
dptrain_run d2l_1gpu.json bf16 1 --set train.epochs="$epochs" --set precision=bf16
"$PYTHON" "$root/scripts/bench/figures.py" "$figures" "$out/bench_gpu.json" --base b256 --gpu |
  tee "$out/bench_gpu.md"
echo "wrote $out/bench_gpu.md and $out/bench_gpu.json" >&2
