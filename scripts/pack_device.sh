#!/usr/bin/env bash
# Assembles .device/ for the GPU machine's round (scripts/gpu_round.sh), here on a Debian 12 build
# machine that reaches Debian's archive: ../shared/device/pack.sh's Debian packages (with
# libsodium's added), Fashion-MNIST and env.sh, then .device/gloo/include, Gloo's headers for the
# build against the machine's pip torch (the wheel carries none, and the GPU machine reaches no
# archive to fetch them): scripts/torch2/gloo_headers.sh, checked against Debian's signed index.
#
#   scripts/pack_device.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 0 ]] || { echo "usage: $0" >&2; exit 2; }
source "$root/scripts/torch2/chroot.sh"  # apt_mirror, private_dir
source "$root/scripts/torch2/gloo_headers.sh"  # gloo_headers
# libsodium (src/core/crypto.h) is not among pack.sh's own packages.
(cd "$root" && EXTRA_DEBS="libsodium-dev libsodium23 ${EXTRA_DEBS:-}" ../shared/device/pack.sh)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dptrain-torch-pip
private_dir "$cache"
gloo=$(gloo_headers "$cache" "${DEBIAN_MIRROR:-$(apt_mirror)}")
rm -rf "$root/.device/gloo"
mkdir -p "$root/.device/gloo"
cp -r "$gloo" "$root/.device/gloo/include"
echo "pack_device: Gloo's headers from $(basename "$(dirname "$(dirname "$gloo")")") in .device/gloo" >&2
