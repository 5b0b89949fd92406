#!/usr/bin/env bash
# Builds dptrain against pip's torch 2.x (PyPI's default Linux build: CUDA, with the nvidia-*
# wheels it depends on), the LibTorch GPU users and the GPU machine have, and runs the whole
# suite on this machine's CPU ([cuda] tests skip, each saying why).
#
#   scripts/check_torch_pip.sh [--venv DIR] [--build-dir DIR] [--build-only] [-- CTEST_ARGS...]
#
# --venv: a venv of your own with pip's torch in it (made with Debian's python3 -m venv), instead
# of the project's; --build-only: build dptrain (BUILD_DIR/dptrain) and run no test.
#
# 1. The project's venv with torch (scripts/venv.sh torch: about 5.5 GB from PyPI, once). The
#    wheel's C++ ABI must be the new (cxx11) one, which Debian's compiled libraries (spdlog, fmt,
#    CLI11's users) have: torch.compiled_with_cxx11_abi() is checked first.
# 2. Gloo's headers, which the wheel lacks and Debian 12 has too old: Debian unstable's
#    libgloo-dev, checked against the archive's signed index (gpgv, Debian's keyring) and unpacked,
#    not installed, under DIR/gloo-<the .deb's SHA256> (DIR: $XDG_CACHE_HOME/dptrain-torch-pip):
#    scripts/torch2/gloo_headers.sh.
# 3. scripts/test.sh with BUILD_DIR (default build-pip) and DPTRAIN_PIP_TORCH, which
#    cmake/pip_torch.cmake reads (it says why torch.utils.cmake_prefix_path alone is not enough),
#    and the venv's torchrun first on PATH, as a pip user has it: the tests of torchrun's examples
#    and elastic runs meet the torchrun of the torch dptrain was built against. (Debian's, of
#    PyTorch 1.13, serves a store protocol that a LibTorch 2.x client cannot speak; a test of its
#    own, torchrun_protocol_test.cpp, checks the error that says so.)
# Exit 0 only when the build and every test passed. 32 minutes from nothing on 2 cores, too long
# for CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-pip
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dptrain-torch-pip
usage="usage: $0 [--venv DIR] [--build-dir DIR] [--build-only] [-- CTEST_ARGS...]"
ctest_args=()
then_run=scripts/test.sh
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) [[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }; export DPTRAIN_VENV=$2; shift 2 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }; build=$2; shift 2 ;;
    --build-only) then_run=scripts/build.sh; shift ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if [[ $then_run == scripts/build.sh && ${#ctest_args[@]} -gt 0 ]]; then
  echo "check_torch_pip: --build-only runs no test, so takes no ctest arguments" >&2
  exit 2
fi
source "$root/scripts/torch2/chroot.sh"  # apt_mirror, private_dir
source "$root/scripts/torch2/gloo_headers.sh"  # gloo_headers
mirror=${DEBIAN_MIRROR:-$(apt_mirror)}

python=$(DPTRAIN_REQUIRE_VENV=1 "$root/scripts/venv.sh" torch)
site=$("$python" -I -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
abi=$("$python" -I -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))' 2>/dev/null)
echo "check_torch_pip: torch $("$python" -I -c 'import torch; print(torch.__version__)' 2>/dev/null)" \
  "in $site" >&2
if [[ $abi != 1 ]]; then
  echo "check_torch_pip: this torch was built with the old C++ ABI; Debian's libraries use the new" \
    "one, so they cannot link together (take a torch whose compiled_with_cxx11_abi() is True)" >&2
  exit 1
fi
private_dir "$cache"
gloo=$(gloo_headers "$cache" "$mirror")
echo "check_torch_pip: Gloo's headers from $gloo" >&2
# scripts/build.sh passes CMAKE_ARGS to a build folder's first configure only: an existing one is
# told where the torch and the headers are now (another venv, newer headers: a rebuild).
if [[ -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DDPTRAIN_PIP_TORCH="$site" -DGLOO_INCLUDE_DIR="$gloo" >/dev/null
fi
launchers=$build/launchers  # torchrun alone, so that python3 on PATH stays the system's
mkdir -p "$launchers"
[[ -x $(dirname "$python")/torchrun ]] ||
  { echo "check_torch_pip: $(dirname "$python") has no torchrun" >&2; exit 1; }
ln -sfn "$(dirname "$python")/torchrun" "$launchers/torchrun"
PATH=$launchers:$PATH BUILD_DIR=$build CMAKE_ARGS="-DDPTRAIN_PIP_TORCH=$site -DGLOO_INCLUDE_DIR=$gloo" \
  exec "$root/$then_run" "${ctest_args[@]}"
