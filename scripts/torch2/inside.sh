# Runs inside the trixie chroot of scripts/check_torch2.sh, from the tree copied to /work/dptrain.
#   inside.sh setup cpu|cuda       install the packages (once, when the chroot is made)
#   inside.sh test cpu|cuda ARGS   build into /work/build and run ctest with ARGS
set -euo pipefail
cd /work/dptrain
export DEBIAN_FRONTEND=noninteractive
cuda_packages="libtorch-cuda-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit"

# libtorch-cuda-dev depends on nvidia-cudnn, an installer that downloads cuDNN from outside the
# archive. This empty package, versioned above the archive's, stands in for it.
install_cudnn_placeholder() {
  local pkg=/tmp/nvidia-cudnn-placeholder
  mkdir -p "$pkg/DEBIAN"
  cat >"$pkg/DEBIAN/control" <<'CONTROL'
Package: nvidia-cudnn
Version: 9.0.0.312~cuda12+dptrain
Architecture: all
Maintainer: dptrain check_torch2 <root@localhost>
Description: placeholder for the nvidia-cudnn installer
 Made by dptrain's scripts/check_torch2.sh so that libtorch-cuda-dev installs
 without downloading cuDNN; a stub libcudnn.so.9 lets programs link.
CONTROL
  dpkg-deb --build "$pkg" /tmp/nvidia-cudnn-placeholder.deb >/dev/null
  dpkg -i /tmp/nvidia-cudnn-placeholder.deb >/dev/null
}

# Nothing in the archive ships libcudnn.so.9, which libtorch_cuda.so needs to link. A library that
# defines the cuDNN symbols it uses lets everything link and load; without a GPU none is called,
# and if one ever were, it says so and aborts.
install_cudnn_stub() {
  local torch_cuda lib=/usr/lib/x86_64-linux-gnu/libcudnn.so.9
  [[ -e $lib ]] && return
  torch_cuda=$(ls /usr/lib/x86_64-linux-gnu/libtorch_cuda.so* | head -n1)
  # LibTorch asks for versioned symbols (cudnnCreate@libcudnn.so.9): one version node of that name.
  echo 'libcudnn.so.9 { global: *; };' >/tmp/cudnn_stub.map
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void called(const char* s) { fprintf(stderr, "cuDNN stub: %s called\n", s); abort(); }'
    nm -D --undefined-only "$torch_cuda" | awk '$2 ~ /^cudnn/ {sub(/@.*/, "", $2); print $2}' |
      sort -u | awk '{printf "void %s(void) { called(\"%s\"); }\n", $1, $1}'
  } >/tmp/cudnn_stub.c
  gcc -shared -fPIC -Wl,-soname,libcudnn.so.9 -Wl,--version-script=/tmp/cudnn_stub.map \
    -o "$lib" /tmp/cudnn_stub.c
  ln -sf libcudnn.so.9 /usr/lib/x86_64-linux-gnu/libcudnn.so
  ldconfig
}

setup() {
  if [[ $1 == cuda ]]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends binutils gcc dpkg-dev >/dev/null
    install_cudnn_placeholder
    DPTRAIN_TORCH_PACKAGES=$cuda_packages scripts/setup.sh
    install_cudnn_stub
  else
    scripts/setup.sh
  fi
}

run_tests() {
  local mode=$1
  shift
  export BUILD_DIR=/work/build
  if [[ $mode == cuda ]]; then
    DPTRAIN_TORCH_PACKAGES=$cuda_packages scripts/setup.sh
  else
    scripts/setup.sh
  fi
  scripts/build.sh
  "$BUILD_DIR/dptrain" info
  cd "$BUILD_DIR"
  ctest --output-on-failure -j "${TEST_JOBS:-2}" "$@"
}

case "${1:-}" in
  setup) setup "$2" ;;
  test) shift; run_tests "$@" ;;
  *) echo "usage: inside.sh setup|test cpu|cuda [CTEST_ARGS...]" >&2; exit 2 ;;
esac
