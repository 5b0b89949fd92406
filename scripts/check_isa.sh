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
# The kernels' level is a build option (-DDPTRAIN_KERNEL_ISA, kernels/vector_clones.h); one
# folder, build-isa/, serves every level: changing it recompiles the six kernel files alone. The
# other two are caps on LibTorch's run-time dispatch; a DNNL_MAX_CPU_ISA or ATEN_CPU_CAPABILITY
# set beforehand is kept (e.g. DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 for a bf16 CPU without AMX).
# The suite without caps, where the CPU picks each path (AMX here where it has it), is
# scripts/test.sh. Before its tests, each level checks that it took: `dptrain info` names the
# kernels' level, and oneDNN's verbose line the ISA it dispatches to.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: scripts/check.sh isa x86-64-v4|x86-64-v3|baseline|all [--build-only] [-- CTEST_ARGS...]"
level=${1:-}
shift || true
build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; shift; fi
[[ ${1:-} == -- ]] && shift

# What this CPU has, from /proc/cpuinfo's flags (x86-64-v3 and -v4 as psABI defines them).
cpu_has() {
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  local f
  for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done
}
cpu_levels() {
  if cpu_has avx2 fma bmi1 bmi2 f16c movbe avx512f avx512bw avx512cd avx512dq avx512vl; then
    echo x86-64-v4
  fi
  if cpu_has avx2 fma bmi1 bmi2 f16c movbe; then echo x86-64-v3; fi
  echo baseline
}

case "$level" in
  x86-64-v4 | x86-64-v3 | baseline)
    if ! cpu_levels | grep -qx -- "$level"; then
      echo "check.sh isa: this CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')) has no $level;" \
        "it has: $(cpu_levels | tr '\n' ' ')" >&2
      exit 2
    fi
    levels=("$level")
    ;;
  all) mapfile -t levels < <(cpu_levels) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

"$root/scripts/setup.sh"
"$root/scripts/venv.sh" tensorboard >/dev/null  # as scripts/test.sh: TensorBoard's readers
build=$root/build-isa

# oneDNN's name for the cap, and what its verbose line then says it dispatches to.
onednn_cap() {
  case $1 in x86-64-v4) echo AVX512_CORE ;; x86-64-v3) echo AVX2 ;; *) echo SSE41 ;; esac
}
aten_cap() {
  case $1 in x86-64-v4) echo avx512 ;; x86-64-v3) echo avx2 ;; *) echo default ;; esac
}

# Fails unless the build's kernels, oneDNN and ATen run at the level asked for.
check_level_took() {
  local level=$1 info isa
  info=$("$build/dptrain" info)
  if ! grep -q "^cpu kernels: dptrain's $level (kept by DPTRAIN_KERNEL_ISA)" <<<"$info"; then
    echo "check.sh isa: the build in $build does not keep the kernels at $level:" >&2
    grep '^cpu kernels' <<<"$info" >&2
    return 1
  fi
  if ! grep -q "ATen's $ATEN_CPU_CAPABILITY\$" <<<"$info"; then
    echo "check.sh isa: ATen did not take ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY:" >&2
    grep '^cpu kernels' <<<"$info" >&2
    return 1
  fi
  # LeNet's dense layers run oneDNN's inner product: its first primitive prints the ISA line.
  isa=$(DNNL_VERBOSE=1 ONEDNN_VERBOSE=1 "$build/dptrain" info --model lenet 2>&1 |
    grep -m1 -o 'cpu,isa:[^,]*' || true)
  if [[ -z $isa ]]; then
    echo "check.sh isa: oneDNN printed no ISA line under DNNL_VERBOSE=1" >&2
    return 1
  fi
  echo "check.sh isa: $level: $(grep '^cpu kernels' <<<"$info"); oneDNN's $isa" >&2
}

preset_onednn=${DNNL_MAX_CPU_ISA:-${ONEDNN_MAX_CPU_ISA:-}}
preset_aten=${ATEN_CPU_CAPABILITY:-}
failed=()
for level in "${levels[@]}"; do
  started=$SECONDS
  # The first configure makes the folder (scripts/build.sh); later levels change the one option.
  BUILD_DIR=$build "$root/scripts/build.sh" "-DDPTRAIN_KERNEL_ISA=$level"
  cmake -S "$root" -B "$build" "-DDPTRAIN_KERNEL_ISA=$level" >/dev/null
  cmake --build "$build" >&2
  export DNNL_MAX_CPU_ISA=${preset_onednn:-$(onednn_cap "$level")}
  export ONEDNN_MAX_CPU_ISA=$DNNL_MAX_CPU_ISA  # oneDNN 3 reads this name; 2.x the other
  export ATEN_CPU_CAPABILITY=${preset_aten:-$(aten_cap "$level")}
  check_level_took "$level"
  $build_only && continue
  if (cd "$build" && ctest --output-on-failure -j "${TEST_JOBS:-2}" "$@"); then
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
