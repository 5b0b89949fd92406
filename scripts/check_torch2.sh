#!/usr/bin/env bash
# Builds and tests dptrain against LibTorch 2.6 from Debian trixie, in a chroot on this Debian 12
# machine, so that code touching CUDA, distributed or version-dependent paths is proven to build
# against 2.x without a GPU machine.
#
#   scripts/check_torch2.sh cpu|cuda [--dir DIR] [-- CTEST_ARGS...]
#
#   cpu   libtorch-dev 2.6 (CPU, Gloo): scripts/test.sh as the README runs it, inside the chroot.
#   cuda  libtorch-cuda-dev 2.6 (CUDA 12.4, NCCL, Gloo): every target compiled and linked, then
#         `dptrain info` and the whole suite ([cuda] tests skip: there is no GPU here).
#
# Each mode has its own chroot (the two LibTorch packages conflict), made once under DIR
# (default $DPTRAIN_TORCH2_DIR or ~/.cache/dptrain-torch2) and reused; delete the folder to start
# afresh. DIR must be the caller's own and writable by nobody else (a folder another user can
# write to could hold a planted chroot or link, run as root): it is refused otherwise. Making one
# downloads about 0.9 GB (cpu) or 3 GB (cuda) from the Debian archive this machine's apt sources
# name (or $DEBIAN_MIRROR), and takes 3 GB or 9 GB of disk. The working tree (tracked and untracked files git does not ignore)
# is copied in at every run; the build folder stays in the chroot, so a second run is incremental.
# The host's apt sources and packages are never touched: debootstrap, when the host lacks it, is
# unpacked under DIR from the archive. Everything mounted is unmounted on exit, Ctrl-C included.
# Exit 0 only when every step and every test passed; ctest's summary is printed last.
# Needs root (chroot, mount).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${DPTRAIN_TORCH2_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dptrain-torch2}
usage="usage: $0 cpu|cuda [--dir DIR] [-- CTEST_ARGS...]"

mode=${1:-}
[[ $mode == cpu || $mode == cuda ]] || { echo "$usage" >&2; exit 2; }
shift
ctest_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) base=$2; shift 2 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "check_torch2: needs root (chroot and mount); try sudo $0 $mode" >&2; exit 2; }

chroot_dir=$base/trixie-$mode
source "$root/scripts/torch2/chroot.sh"
mirror=${DEBIAN_MIRROR:-$(apt_mirror)}

private_dir "$base"
exec 9>"$base/$mode.lock"
flock -n 9 || { echo "check_torch2: another run is using $chroot_dir; wait for it" >&2; exit 1; }
trap 'stop_child; unmount_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ! -f $chroot_dir/.dptrain-ready ]]; then
  echo "check_torch2: making the $mode chroot in $chroot_dir (once; downloads from $mirror)" >&2
  make_chroot "$mode"
else
  echo "check_torch2: reusing $chroot_dir" >&2
  mount_all "$chroot_dir"
  copy_tree
fi
in_chroot "$root/scripts/torch2/inside.sh" test "$mode" "${ctest_args[@]}"
