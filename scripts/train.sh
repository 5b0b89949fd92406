#!/usr/bin/env bash
# The README's first command: set up, build, and train the default experiment (d2l's LeNet on
# Fashion-MNIST, on the best device present). Arguments pass through to `dptrain train`. Only the
# binary is built: scripts/test.sh builds the tests in the same folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
BUILD_TARGET=dptrain "$root/scripts/build.sh"
exec "${BUILD_DIR:-$root/build}/dptrain" train "$@"
