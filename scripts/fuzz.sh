#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, with AddressSanitizer and UndefinedBehaviorSanitizer) of the
# readers that take outside input: IDX files (raw and gzip), experiment files with --set
# overrides, checkpoints, model files (state_dicts), SLURM's node lists, what a peer sends the
# rendezvous store, TensorBoard event files as a resumed run reads its own back, and the pictures
# predict classifies (PNG, PGM/PPM, JPEG), and the JPEG check and decoder alone (jpeg: a picture of
# its header's size within the limits, decoded alike twice).
#
#   scripts/fuzz.sh [--seconds S] [TARGET...]
#     targets: idx config nodelist checkpoint model_file store tensorboard image jpeg
#
# Each target runs S seconds (default 30), as many at once as there are cores, from its committed
# seeds (fuzz/corpus/TARGET) plus what earlier runs here found (build-asan/corpus/TARGET). A crash,
# a sanitizer report or an exception other than dptrain's own error stops it: the input is saved
# under build-asan/findings/ and the script exits non-zero. Make each finding a regression test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=30
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    idx|config|nodelist|checkpoint|model_file|store|tensorboard|image|jpeg) targets+=("$1"); shift ;;
    *) echo "usage: $0 [--seconds S] [idx|config|nodelist|checkpoint|model_file|store|tensorboard|image|jpeg ...]" >&2; exit 2 ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(idx config nodelist checkpoint model_file store tensorboard image jpeg)

# The fuzz targets live in the AddressSanitizer build (clang, with libFuzzer's coverage).
"$root/scripts/check.sh" asan --build-only
build=$root/build-asan

# A real checkpoint to start the checkpoint target from, made once by a short run on tiny data.
checkpoint_seed() {
  local dir=$build/checkpoint-seed
  [[ -f $dir/seed.pt ]] && return
  rm -rf "$dir" && mkdir -p "$dir"
  "$build/dptrain" train --set data.dir="$root/fuzz/corpus/tiny-data" --set data.batch_size=10 \
    --set train.epochs=1 --set runtime.threads=1 --output "$dir/run" >/dev/null 2>&1
  cp "$dir/run/checkpoints/epoch-0001.pt" "$dir/seed.pt"
}

export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$build/findings"
for t in "${targets[@]}"; do [[ $t == checkpoint ]] && checkpoint_seed; done

# One target: S seconds from its seeds; 0 when nothing failed.
fuzz_one() {
  local t=$1 corpus=$build/corpus/$1 log=$build/findings/$1.log
  local seeds=("$root/fuzz/corpus/$t")
  [[ $t == checkpoint ]] && seeds+=("$build/checkpoint-seed")
  mkdir -p "$corpus"
  echo "fuzz: $t for $seconds s" >&2
  "$build/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 \
    -rss_limit_mb=4096 -artifact_prefix="$build/findings/$t-" "$corpus" "${seeds[@]}" \
    >"$log" 2>&1
}

# As many targets at once as the machine has cores (a target's own work runs on one thread; those
# that load LibTorch share its thread pool), so that each still gets about S seconds of a core;
# what they found is reported in the targets' order.
cores=$(nproc)
# Stopped (Ctrl-C, a CI timeout), the script stops the fuzzers it started: each is the child of
# a background subshell (jobs -p), which a kill alone would leave running.
trap 'for job in $(jobs -p); do pkill -P "$job"; kill "$job"; done 2>/dev/null || true' EXIT
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= cores)); do wait -n || true; done
  rm -f "$build/findings/$t.status"
  { if fuzz_one "$t"; then echo 0; else echo 1; fi >"$build/findings/$t.status"; } &
done
wait
failed=0
for t in "${targets[@]}"; do
  if [[ $(cat "$build/findings/$t.status" 2>/dev/null) != 0 ]]; then
    failed=1
    tail -n 40 "$build/findings/$t.log" >&2
    echo "fuzz: $t found a failing input, saved in $build/findings/ (log: $build/findings/$t.log)" >&2
    continue
  fi
  { grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)" \
    "$build/findings/$t.log" || true; } | sed "s/^/fuzz: $t /"
done
exit "$failed"
