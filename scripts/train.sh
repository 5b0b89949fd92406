#!/usr/bin/env bash
# The README's first command: set up, build, and train the default experiment (d2l's LeNet on
# Fashion-MNIST, on the best device present). Arguments pass through to `dptrain train`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
exec "${BUILD_DIR:-$root/build}/dptrain" train "$@"
