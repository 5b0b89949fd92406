#!/usr/bin/env bash
# Installs what dptrain needs on Debian 12 and does nothing when it is all there already.
# Run as root or with sudo available. Extra package names may be passed as arguments.
# DPTRAIN_TORCH_PACKAGES replaces the LibTorch and Gloo packages, e.g. with trixie's CUDA ones
# (scripts/check_torch2.sh cuda: "libtorch-cuda-dev libgloo-cuda-dev libnccl-dev ...").
set -euo pipefail

# python3-torch is for the tests alone: PyTorch loads dptrain's model.pt as d2l's state_dict;
# python3-protobuf and python3-crc32c read its TensorBoard event files as TensorBoard would.
read -r -a torch_packages <<<"${DPTRAIN_TORCH_PACKAGES:-libtorch-dev libgloo-dev python3-torch}"
packages=(
  build-essential cmake ninja-build pkg-config
  "${torch_packages[@]}"
  libcli11-dev libspdlog-dev nlohmann-json3-dev catch2 zlib1g-dev libstb-dev
  libturbojpeg0-dev  # JPEG, decoded as torchvision and PIL decode it (src/data/jpeg_decode.h)
  libsodium-dev  # SHA-256, HMAC and random bytes (src/core/crypto.h)
  dataset-fashion-mnist
  iproute2  # the tests' test hosts (network namespaces)
  python3-protobuf python3-crc32c
  python3-pil python3-torchvision  # the tests' peers: PIL's decoding, ImageFolder's order
  gnuplot-nox  # compare --plot's SVG curves
  strace  # the tests' kills at an exact system call (a rewind killed at each rename)
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "setup: missing packages: ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi
log=$(mktemp -t dptrain-setup.XXXXXX.log)  # a name of its own: a fixed one could be a planted link
echo "setup: installing ${missing[*]} (log: $log)" >&2
if ! { "${sudo[@]}" apt-get update -qq &&
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "setup: apt-get failed; the whole log is in $log" >&2
  exit 1
fi
