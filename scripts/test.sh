#!/usr/bin/env bash
# The README's second command: set up, build, and run the whole test suite through ctest.
# Arguments pass through to ctest (e.g. -R config, -L cli).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/venv.sh" tensorboard >/dev/null  # TensorBoard's reader, where PyPI answers
"$root/scripts/build.sh"
cd "${BUILD_DIR:-$root/build}"
exec ctest --output-on-failure -j "${TEST_JOBS:-2}" "$@"
