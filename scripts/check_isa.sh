#!/usr/bin/env bash
# The whole test suite down one instruction-set path of the CPU kernels, or down each this CPU
# has: the results of a run must not hang on which vector code a user's CPU picks.
#
#   scripts/check.sh isa LEVEL|all [--build-only] [-- CTEST_ARGS...]
#
#   LEVEL      dptrain's own kernels      oneDNN (DNNL_/ONEDNN_MAX_CPU_ISA)  ATen (ATEN_CPU_CAPABILITY)
#   x86-64-v4  the AVX-512 clone alone    AVX512_CORE                        avx512
#   x86-64-v3  the AVX2+FMA clone alone   AVX2                               avx2
#   baseline   the x86-64 (SSE2) build    SSE41                              default
#   all        each level above that this CPU has, highest first
#
# The kernels' level is a build option (-DDPTRAIN_KERNEL_ISA, kernels/vector_clones.h; GCC 12 on,
# or clang 18 on); one folder, build-isa/, serves every level: changing it recompiles the six
# kernel files alone. The other two are caps on LibTorch's run-time dispatch, set here whatever
# the environment held. x86-64-v4 holds ATen to its AVX-512 kernels, which Debian's LibTorch
# does not pick by itself even where the CPU has them. The suite without caps, where the CPU picks
# each path (AMX where it has it), is scripts/test.sh. Before its tests, each level checks that
# it took: `dptrain info` names the kernels' and ATen's levels, and oneDNN's verbose line the ISA
# it dispatches to. A level that fails is reported and the next one still runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: scripts/check.sh isa x86-64-v4|x86-64-v3|baseline|all [--build-only] [-- CTEST_ARGS...]"
level=${1:-}
shift || true
build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; shift; fi
if [[ $# -gt 0 && $1 != -- ]]; then echo "$usage" >&2; exit 2; fi
[[ ${1:-} == -- ]] && shift

# What this CPU has, from /proc/cpuinfo's flags: x86-64-v2, -v3 and -v4 as the psABI defines
# them (lzcnt is "abm" there), which is what GCC's clone resolver asks.
cpu_has() {
  local flags f
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done
}
cpu_levels() {
  local v2=(cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3)
  local v3=("${v2[@]}" avx avx2 bmi1 bmi2 f16c fma abm movbe xsave)
  if cpu_has "${v3[@]}" avx512f avx512bw avx512cd avx512dq avx512vl; then echo x86-64-v4; fi
  if cpu_has "${v3[@]}"; then echo x86-64-v3; fi
  echo baseline
}
cpu_name() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'; }

mapfile -t have < <(cpu_levels)
case "$level" in
  x86-64-v4 | x86-64-v3 | baseline)
    if [[ " ${have[*]} " != *" $level "* ]]; then
      echo "check.sh isa: this CPU ($(cpu_name)) has no $level; it has: ${have[*]}" >&2
      exit 2
    fi
    levels=("$level")
    ;;
  all) levels=("${have[@]}") ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

"$root/scripts/setup.sh"
"$root/scripts/venv.sh" tensorboard >/dev/null  # as scripts/test.sh: TensorBoard's readers
build=$root/build-isa

# Each level's caps, and the ISA oneDNN 2.6 and 3.x then name on their verbose line.
onednn_cap() {
  case $1 in x86-64-v4) echo AVX512_CORE ;; x86-64-v3) echo AVX2 ;; *) echo SSE41 ;; esac
}
onednn_names() {
  case $1 in
    x86-64-v4) echo "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions" ;;
    x86-64-v3) echo "Intel AVX2" ;;
    *) echo "Intel SSE4.1" ;;
  esac
}
aten_cap() {
  case $1 in x86-64-v4) echo avx512 ;; x86-64-v3) echo avx2 ;; *) echo default ;; esac
}

# Fails, saying what ran instead, unless the kernels, ATen and oneDNN run at `level`.
check_level_took() {
  local level=$1 info kernels isa
  info=$("$build/dptrain" info)
  kernels=$(grep '^cpu kernels: ' <<<"$info" || true)
  if [[ $kernels != "cpu kernels: dptrain's $level (kept by DPTRAIN_KERNEL_ISA), ATen's $(aten_cap "$level")" ]]; then
    echo "check.sh isa: $level did not take: ${kernels:-no 'cpu kernels' line from dptrain info}" >&2
    return 1
  fi
  # LeNet's dense layers run oneDNN's inner product: its first primitive prints the ISA line.
  isa=$(DNNL_VERBOSE=1 ONEDNN_VERBOSE=1 "$build/dptrain" info --model lenet 2>&1 |
    grep -m1 'cpu,isa:' | sed 's/.*cpu,isa://' || true)
  if [[ $isa != "$(onednn_names "$level")" ]]; then
    echo "check.sh isa: $level: oneDNN dispatches to '${isa:-nothing it printed}', not" \
      "'$(onednn_names "$level")'" >&2
    return 1
  fi
  echo "check.sh isa: $level on $(cpu_name): $kernels; oneDNN's $isa" >&2
}

failed=()
for level in "${levels[@]}"; do
  started=$SECONDS
  # Configured before the build, so that each level compiles once, at its own setting.
  if [[ -f $build/build.ninja ]]; then
    cmake -S "$root" -B "$build" "-DDPTRAIN_KERNEL_ISA=$level" >/dev/null
  else
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-DDPTRAIN_KERNEL_ISA=$level" >&2
  fi
  cmake --build "$build" >&2
  export DNNL_MAX_CPU_ISA ONEDNN_MAX_CPU_ISA ATEN_CPU_CAPABILITY
  DNNL_MAX_CPU_ISA=$(onednn_cap "$level")
  ONEDNN_MAX_CPU_ISA=$DNNL_MAX_CPU_ISA  # oneDNN 3 reads this name; 2.x the other
  ATEN_CPU_CAPABILITY=$(aten_cap "$level")
  if ! check_level_took "$level"; then
    failed+=("$level")
    continue
  fi
  $build_only && continue
  if (cd "$build" && ctest --output-on-failure --no-tests=error -j "${TEST_JOBS:-2}" "$@"); then
    echo "check.sh isa: $level passed in $((SECONDS - started)) s" >&2
  else
    echo "check.sh isa: $level FAILED in $((SECONDS - started)) s" >&2
    failed+=("$level")
  fi
done
if ((${#failed[@]})); then
  echo "check.sh isa: failed at ${failed[*]}" >&2
  exit 1
fi
