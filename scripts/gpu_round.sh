#!/usr/bin/env bash
# The whole GPU round of issue 26 on the GPU machine, in stages that chain into few long commands
# (the machine starts bare each time, and one command may run 10 minutes):
#
#   scripts/gpu_round.sh --out DIR STAGE...      STAGE: build test reproduce tensorboard bench, or all
#
#   build        source .device/env.sh (made by scripts/pack_device.sh on a build machine), then
#                a Release build against the machine's pip torch (as scripts/check_torch_pip.sh
#                builds) into build-gpu/ (BUILD_DIR); `dptrain info` to DIR/info.txt
#   test         the whole suite through ctest, then every [cuda] test once more by itself, which
#                must run on the GPU: one reported skipped fails the stage
#   reproduce    scripts/reproduce_d2l.sh --one-gpu, 10 epochs a config, into DIR/d2l-13.5
#   tensorboard  TensorBoard's own reader (EventAccumulator) over the event files of those runs
#   bench        scripts/bench_gpu.sh: dptrain beside d2l, PyTorch DDP, Lightning and a
#                CUDA-graphed plain loop, into DIR/bench (REPEATS, default 3)
#
# Each stage logs to DIR/<stage>.log and goes on after a failed one; DIR/round.json gathers the
# figures (each stage's status and seconds, ctest's counts, the reproduction's rows, the bench's
# figures, TensorBoard's reading). Exit status 0 only when every stage asked for passed. One device
# command may run 10 minutes and a machine left idle is handed back within a minute, so each
# command starts with `build` (quick when build-gpu/ is still there): with .device carried,
#   scripts/gpu_round.sh --out /tmp/round build test
#   scripts/gpu_round.sh --out /tmp/round build reproduce tensorboard
#   REPEATS=2 scripts/gpu_round.sh --out /tmp/round build bench
# and to bring each back: tar czf "$OUT/round.tgz" -C /tmp/round . (at most 8 files come back).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: $0 --out DIR STAGE... (build test reproduce tensorboard bench, or all)"
out=""
stages=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    all) stages+=(build test reproduce tensorboard bench); shift ;;
    build | test | reproduce | tensorboard | bench) stages+=("$1"); shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ -n $out && ${#stages[@]} -gt 0 ]] || { echo "$usage" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ -f $root/.device/env.sh ]] || { echo "gpu_round: no .device/ (run scripts/pack_device.sh here first, and carry .device)" >&2; exit 2; }
cd "$root"
# shellcheck source=/dev/null
source .device/env.sh >"$out/env.log" 2>&1
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu} PYTHON=${PYTHON:-python3}
bin=$BUILD_DIR/dptrain

stage_build() {
  # Called through ||, which turns set -e off: each step must fail the stage itself.
  # Against the machine's pip torch as scripts/check_torch_pip.sh builds here (cmake/pip_torch.cmake
  # says why torch.utils.cmake_prefix_path alone is not enough), with the Gloo headers that
  # scripts/pack_device.sh put in .device/gloo.
  local site abi gloo=$root/.device/gloo/include
  [[ -f $gloo/gloo/rendezvous/store.h ]] ||
    { echo "gpu_round: no Gloo headers in .device/gloo (run scripts/pack_device.sh here first)" >&2; return 1; }
  site=$("$PYTHON" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') || return
  abi=$("$PYTHON" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))') || return
  [[ $abi == 1 ]] ||
    { echo "gpu_round: this torch has the old C++ ABI, which Debian's spdlog and fmt cannot link with" >&2; return 1; }
  CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DDPTRAIN_PIP_TORCH=$site -DGLOO_INCLUDE_DIR=$gloo" \
    scripts/build.sh || return
  "$bin" info >"$out/info.txt" || return
  cat "$out/info.txt"
  grep -q '^cuda: yes' "$out/info.txt" || { echo "gpu_round: this build sees no GPU" >&2; return 1; }
}

stage_test() {
  local status=0
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${TEST_JOBS:-12}" || status=$?
  "$BUILD_DIR/tests/dptrain_tests" "[cuda]" 2>&1 | tee "$out/cuda_tests.log" || status=$?
  if grep -q "were skipped, not passed" "$out/cuda_tests.log"; then
    echo "gpu_round: [cuda] tests were skipped on the GPU machine" >&2
    status=1
  fi
  return "$status"
}

stage_reproduce() {
  scripts/reproduce_d2l.sh --one-gpu --out "$out/d2l-13.5" || return
  # d2l's figures are 0.84 on one GPU and 0.83 on two: every row must reach 0.82.
  "$PYTHON" - "$out/d2l-13.5/runs" <<'PY'
import glob, json, os, sys
runs = sorted(glob.glob(os.path.join(sys.argv[1], "*")))
low = []
for run in runs:
    path = os.path.join(run, "summary.json")
    acc = json.load(open(path))["test_acc"] if os.path.exists(path) else None
    print(os.path.basename(run), "test acc", acc)
    if acc is None or acc < 0.82:
        low.append(os.path.basename(run))
sys.exit(f"below 0.82 or failed: {', '.join(low)}" if low or not runs else 0)
PY
}

stage_tensorboard() {
  "$PYTHON" - "$out/d2l-13.5/runs" "$out/tensorboard.json" <<'PY'
import glob, json, os, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
found = {}
for run in sorted(glob.glob(os.path.join(sys.argv[1], "*"))):
    acc = EventAccumulator(run)
    acc.Reload()
    tags = acc.Tags()["scalars"]
    found[os.path.basename(run)] = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags}
    print(os.path.basename(run), len(tags), "scalar tags;",
          "test_acc" if any("test_acc" in t for t in tags) else "no test_acc")
json.dump(found, open(sys.argv[2], "w"), indent=1)
assert found and all(found.values()), "TensorBoard read no scalars from some run"
PY
}

stage_bench() {
  scripts/bench_gpu.sh --repeats "${REPEATS:-2}" --out "$out/bench"
}

results=()
failed=0
for stage in "${stages[@]}"; do
  echo "== $stage ($(date -u +%H:%M:%S))" >&2
  start=$(date +%s)
  status=0
  "stage_$stage" >"$out/$stage.log" 2>&1 || status=$?
  seconds=$(( $(date +%s) - start ))
  echo "== $stage: status $status after ${seconds}s" >&2
  tail -n 15 "$out/$stage.log" >&2
  [[ $status -eq 0 ]] || failed=1
  results+=("$stage $status $seconds")
done

"$PYTHON" - "$out" "${results[@]}" <<'PY'
import json, os, re, sys
out = sys.argv[1]
path = os.path.join(out, "round.json")
round_ = json.load(open(path)) if os.path.exists(path) else {"stages": {}}
for entry in sys.argv[2:]:
    stage, status, seconds = entry.split()
    round_["stages"][stage] = {"status": int(status), "seconds": int(seconds)}
def read(name):
    p = os.path.join(out, name)
    return open(p).read() if os.path.exists(p) else None
if read("info.txt"):
    round_["info"] = read("info.txt").splitlines()
test_log = read("test.log")
if test_log:
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", test_log)
    if m:
        round_["ctest"] = {"failed": int(m.group(2)), "total": int(m.group(3)),
                           "skipped": len(re.findall(r"\*\*\*Skipped", test_log))}
results_md = read("d2l-13.5/results.md")
if results_md:
    round_["reproduce"] = [l for l in results_md.splitlines() if l.startswith("| d2l")]
if read("bench/bench_gpu.json"):
    round_["bench"] = json.loads(read("bench/bench_gpu.json"))
if read("tensorboard.json"):
    round_["tensorboard_runs_read"] = sorted(json.loads(read("tensorboard.json")))
json.dump(round_, open(path, "w"), indent=1)
PY
echo "gpu_round: figures in $out/round.json" >&2
exit "$failed"
