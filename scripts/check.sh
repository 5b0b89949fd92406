#!/usr/bin/env bash
# The whole test suite under a sanitizer, or down one instruction-set path, in a build folder of
# its own.
#
#   scripts/check.sh asan|tsan [--build-only] [-- CTEST_ARGS...]
#   scripts/check.sh isa x86-64-v4|x86-64-v3|baseline|all [--build-only] [-- CTEST_ARGS...]
#
# CTEST_ARGS pick tests as ctest does: CI's ASan pass gives `-LE 'slow|cli_trusted'`, every test
# but the long training runs and the examples (tagged [slow]) and the quick CLI tests that feed
# dptrain nothing hostile (tests/CMakeLists.txt, .ci/run).
#
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer, built with Debian's clang (build-asan/):
#         out-of-bounds accesses, use after free, undefined behaviour; any report fails the test
#         that made it. The same build holds the libFuzzer targets (scripts/fuzz.sh runs them),
#         so that one build serves both.
#   tsan  ThreadSanitizer (build-tsan/): data races between dptrain's threads (loader workers,
#         dp replicas, the ddp reducer's hooks).
#   isa   no sanitizer: the suite with dptrain's kernels, oneDNN and ATen held to one
#         instruction-set level, or to each this CPU has (build-isa/; scripts/check_isa.sh).
#
# What is suppressed, and why, is in scripts/sanitizers/ (README.md there). Set-up as
# scripts/test.sh does it; the build is incremental.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
shift || true
[[ $mode == isa ]] && exec "$root/scripts/check_isa.sh" "$@"
build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; shift; fi
[[ ${1:-} == -- ]] && shift

cmake_args=()
case "$mode" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
    "$root/scripts/setup.sh" clang libclang-rt-14-dev
    # Coverage for libFuzzer without its main(), so that tests and fuzz targets share objects.
    # Line tables are all the reports need (file and line in each frame): full debug info would
    # cost a fifth more compile time here.
    # -march=native: this build runs where it is built. Debian's clang 14 cannot dispatch the
    # kernels' vector clones (kernels/vector_clones.h), so without it dptrain's own CPU kernels are
    # the x86-64 baseline's SSE code, not the AVX2 or AVX-512 code a user's build runs: ASan would
    # check other code than users run, and LeNet trained 19x slower than without sanitizers, most
    # of the CLI tests' time here.
    cmake_args=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDPTRAIN_FUZZ=ON
      "-DCMAKE_CXX_FLAGS=$flags -march=native -fsanitize=fuzzer-no-link -fno-omit-frame-pointer"
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG"
      -DDPTRAIN_BUILD_BENCH=OFF)
    ;;
  tsan)
    flags="-fsanitize=thread"
    "$root/scripts/setup.sh"
    # libgomp is not built with ThreadSanitizer, which then cannot see its barriers and would
    # report every parallel loop of dptrain's own kernels: those run on one thread here.
    cmake_args=("-DCMAKE_CXX_FLAGS=$flags -fno-omit-frame-pointer" -DDPTRAIN_OPENMP=OFF)
    ;;
  *) echo "usage: $0 asan|tsan|isa [LEVEL] [--build-only] [-- CTEST_ARGS...]" >&2; exit 2 ;;
esac

supp=$root/scripts/sanitizers
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"

"$root/scripts/venv.sh" tensorboard >/dev/null  # as scripts/test.sh: TensorBoard's readers

export BUILD_DIR=$root/build-$mode
# Flags are set when the folder is first configured: delete it to change them.
"$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_args[@]}" \
  "-DCMAKE_EXE_LINKER_FLAGS=$flags"
$build_only && exit 0
cd "$BUILD_DIR"
exec ctest --output-on-failure -j "${TEST_JOBS:-2}" "$@"
