#!/usr/bin/env bash
# Configures (once) and builds Release into build/. Quick when nothing changed.
# BUILD_DIR and CMAKE_ARGS may be set, e.g. CMAKE_PREFIX_PATH=... for a CUDA LibTorch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >&2
fi
cmake --build "$build" >&2
