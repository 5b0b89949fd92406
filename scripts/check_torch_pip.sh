#!/usr/bin/env bash
# Builds dptrain against pip's torch 2.x (PyPI's default Linux build: CUDA, with the nvidia-*
# wheels it depends on), the LibTorch GPU users and the GPU machine have, and runs the whole
# suite on this machine's CPU ([cuda] tests skip, each saying why).
#
#   scripts/check_torch_pip.sh [--build-dir DIR] [-- CTEST_ARGS...]
#
# 1. The project's venv with torch (scripts/venv.sh torch: about 5.5 GB from PyPI, once). The
#    wheel's C++ ABI must be the new (cxx11) one, which Debian's compiled libraries (spdlog, fmt,
#    CLI11's users) have: torch.compiled_with_cxx11_abi() is checked first.
# 2. Gloo's headers, which the wheel lacks and Debian 12 has too old: Debian unstable's
#    libgloo-dev, checked against the archive's signed index (gpgv, Debian's keyring) and unpacked,
#    not installed, under DIR/gloo-<version> (DIR: $XDG_CACHE_HOME/dptrain-torch-pip).
# 3. scripts/test.sh with BUILD_DIR (default build-pip) and DPTRAIN_PIP_TORCH, which
#    cmake/pip_torch.cmake reads (it says why torch.utils.cmake_prefix_path alone is not enough),
#    and the venv's torchrun first on PATH, as a pip user has it: the tests of torchrun's examples
#    and elastic runs meet the torchrun of the torch dptrain was built against. (Debian's, of
#    PyTorch 1.13, serves a store protocol that a LibTorch 2.x client cannot speak; a test of its
#    own, torchrun_protocol_test.cpp, checks the error that says so.)
# Exit 0 only when the build and every test passed. About 40 minutes on 2 cores, too long for CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-pip
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dptrain-torch-pip
usage="usage: $0 [--build-dir DIR] [-- CTEST_ARGS...]"
ctest_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
source "$root/scripts/torch2/chroot.sh"  # apt_mirror, private_dir
mirror=${DEBIAN_MIRROR:-$(apt_mirror)}

# fetch FILE URL SHA256: downloads URL to FILE and checks its hash; a wrong one is removed.
fetch() {
  curl -fsS --max-time 300 -o "$1" "$2" || { echo "check_torch_pip: could not fetch $2" >&2; return 1; }
  [[ $(sha256sum <"$1" | cut -d' ' -f1) == "$3" ]] && return
  rm -f "$1"
  echo "check_torch_pip: $2 does not match the archive's signed index" >&2
  return 1
}

# gloo_headers: prints the include folder of unstable's libgloo-dev, fetched once.
gloo_headers() {
  local dir=$cache/index stanza name hash
  mkdir -p "$dir"
  curl -fsS --max-time 60 -o "$dir/InRelease" "$mirror/dists/unstable/InRelease" &&
    gpgv --quiet --keyring /usr/share/keyrings/debian-archive-keyring.gpg \
      --output "$dir/Release" "$dir/InRelease" 2>/dev/null ||
    { echo "check_torch_pip: unstable's index from $mirror is missing or not signed by Debian" >&2; return 1; }
  hash=$(awk '$3 == "main/binary-amd64/Packages.xz" && length($1) == 64 { print $1 }' "$dir/Release")
  fetch "$dir/Packages.xz" "$mirror/dists/unstable/main/binary-amd64/Packages.xz" "$hash"
  stanza=$(xz -dc "$dir/Packages.xz" | awk '/^Package: libgloo-dev$/ { p = 1 } p && /^$/ { exit } p')
  name=$(awk '/^Filename:/ { print $2 }' <<<"$stanza")
  hash=$(awk '/^SHA256:/ { print $2 }' <<<"$stanza")
  [[ -n $name && -n $hash ]] || { echo "check_torch_pip: unstable has no libgloo-dev" >&2; return 1; }
  local unpacked=$cache/gloo-$(basename "$name" .deb)
  if [[ ! -f $unpacked/usr/include/gloo/rendezvous/store.h ]]; then
    fetch "$cache/libgloo-dev.deb" "$mirror/$name" "$hash"
    rm -rf "$unpacked"
    dpkg-deb -x "$cache/libgloo-dev.deb" "$unpacked"
    rm -f "$cache/libgloo-dev.deb"
  fi
  echo "$unpacked/usr/include"
}

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
gloo=$(gloo_headers)
echo "check_torch_pip: Gloo's headers from $gloo" >&2
launchers=$cache/bin  # torchrun alone, so that python3 on PATH stays the system's
mkdir -p "$launchers"
ln -sfn "$(dirname "$python")/torchrun" "$launchers/torchrun"
PATH=$launchers:$PATH BUILD_DIR=$build CMAKE_ARGS="-DDPTRAIN_PIP_TORCH=$site -DGLOO_INCLUDE_DIR=$gloo" \
  exec "$root/scripts/test.sh" "${ctest_args[@]}"
