#!/usr/bin/env bash
# Configures (once) and builds Release into build/. Quick when nothing changed.
#   scripts/build.sh [CMAKE_ARGS...]   extra arguments for the first configure, e.g.
#                                      -DCMAKE_PREFIX_PATH=... for a CUDA LibTorch
# BUILD_DIR picks the folder; CMAKE_ARGS (split at spaces) is read as well; BUILD_TARGET builds one
# target alone (scripts/train.sh: dptrain, without the tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} "$@" >&2
fi
cmake --build "$build" ${BUILD_TARGET:+--target "$BUILD_TARGET"} >&2
