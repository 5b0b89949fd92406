#!/usr/bin/env bash
# The machine's measured fp32 and bf16 peak FLOP rate through LibTorch's own kernels
# (bench/peak_flops.cpp: a large 3x3 convolution, a large matrix product through oneDNN and one
# through torch::mm), at the given thread count: the figure scripts/bench_train.sh divides a
# training run's FLOP rate by.
#
#   scripts/bench_peak.sh [--threads N] [--repeats R]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD_TARGET=dptrain_bench_peak "$root/scripts/build.sh" >/dev/null
exec "${BUILD_DIR:-$root/build}/dptrain_bench_peak" "$@"
