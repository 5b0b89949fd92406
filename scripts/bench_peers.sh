#!/usr/bin/env bash
# dptrain against the peers a Python user would pick instead, side by side on this machine's CPU,
# in one command: the same experiment as configs/d2l.json (d2l §13.5's LeNet, Fashion-MNIST,
# batch 256, SGD at lr 0.2, full epochs) with
#   dptrain single                          against  d2l's own code (bench/d2l_lenet.py, its
#                                                    helpers from the d2l package), Lightning's
#                                                    Trainer, PyTorch 2.x eager and torch.compile
#                                                    (bench/fast_lenet.py: the data in memory);
#   dptrain ddp, 2 ranks x 1 thread, Gloo   against  PyTorch's DDP and Lightning's DDP, the same;
#   dptrain single on d2l §13.6's ResNet-18 against  PyTorch 2.x eager and torch.compile
#                                                    (bench/d2l_resnet.py), steps at a small batch.
# Each repeat runs every side once, in a random order, so that drift in the machine's speed hits
# every side alike.
#
#   scripts/bench_peers.sh [--epochs E] [--repeats R] [--threads N] [--resnet-steps S]
#                          [--resnet-batch B] [--sides A,B,...] [--out DIR]
#
# --sides: run only these sides (names as in the table's runs: dptrain, d2l, lightning,
# torch-eager, torch-compile, dptrain-ddp, ddp-torch, ddp-lightning, dptrain-resnet,
# resnet-torch-eager, resnet-torch-compile); keep dptrain (or dptrain-ddp, dptrain-resnet) among
# them for the speed-ups.
#
# Defaults: 3 epochs a LeNet run, 3 repeats, 2 threads (the ddp runs: 2 ranks of 1), ResNet-18
# 200 timed steps of batch 32. Prints the versions and a table of ms/epoch (the median of a run's
# epochs after its first, then over runs), samples/s, test accuracy, peak RSS (of the run's largest
# process) and dptrain's speed-up over each peer (its samples/s over theirs). The ResNet rows are
# samples/s over the timed steps: dptrain's second epoch of S steps, the peers' S steps after 20
# warm-up steps (where torch.compile compiles; their JSON gives the warm-up's seconds). Writes
# OUT/bench_peers.md and .json and every run's log under OUT/logs (OUT: runs/bench-peers-<date>).
#
# The peers come from the project's venv (scripts/venv.sh peers: torch 2.x, torchvision,
# Lightning, d2l; about 5.5 GB from PyPI, once). Without PyPI it says so and stops.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
epochs=3 repeats=3 threads=2 resnet_steps=200 resnet_batch=32 out="" only=""
usage="usage: $0 [--epochs E] [--repeats R] [--threads N] [--resnet-steps S] [--resnet-batch B] [--sides A,B,...] [--out DIR]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --resnet-steps) resnet_steps=$2; shift 2 ;;
    --resnet-batch) resnet_batch=$2; shift 2 ;;
    --sides) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
PYTHON=$(DPTRAIN_REQUIRE_VENV=1 "$root/scripts/venv.sh" peers) ||
  { echo "bench_peers: no venv with the peers (see above); nothing to compare with" >&2; exit 1; }
export PYTHON
source "$root/scripts/bench/common.sh"
out=${out:-$root/runs/bench-peers-$(date +%Y-%m-%d)}
mkdir -p "$out/logs"
figures=$work/figures
mkdir -p "$figures"
half=$((threads / 2 > 0 ? threads / 2 : 1))

# one_run NAME R: one run of one side. d2l's code keeps its own loader (4 workers:
# d2l.get_dataloader_workers()), as its readers run it; Lightning single gets one worker a thread
# (PyTorch's DataLoader warns above one a core); the ddp peers keep the DataLoader's default of
# none, as dptrain's ranks have no loader processes either.
one_run() {
  local r=$2 lenet=(--epochs "$epochs" --threads "$threads")
  local resnet=(d2l_resnet.py --steps "$resnet_steps" --warmup 20 --batch-size "$resnet_batch"
    --threads "$threads" --workers 2)
  case "$1" in
    dptrain) dptrain_run d2l.json single "$r" --set parallel.devices=cpu \
               --set runtime.threads="$threads" --set train.epochs="$epochs" ;;
    d2l) peer_run d2l "$r" d2l_lenet.py "${lenet[@]}" ;;
    lightning) peer_run lightning "$r" lightning_lenet.py "${lenet[@]}" --accelerator cpu \
                 --workers "$threads" ;;
    torch-eager) peer_run torch-eager "$r" fast_lenet.py "${lenet[@]}" --device cpu --mode eager ;;
    torch-compile) peer_run torch-compile "$r" fast_lenet.py "${lenet[@]}" --device cpu \
                     --mode compile ;;
    dptrain-ddp) dptrain_run d2l.json ddp "$r" --set parallel.backend=ddp \
                   --set 'parallel.devices=["cpu","cpu"]' --set runtime.threads="$half" \
                   --set train.epochs="$epochs" ;;
    ddp-torch) peer_run ddp-torch "$r" torch_ddp.py --epochs "$epochs" --world 2 \
                 --threads "$half" --workers 0 ;;
    ddp-lightning) peer_run ddp-lightning "$r" lightning_lenet.py --epochs "$epochs" \
                     --accelerator cpu --devices 2 --threads "$half" --workers 0 ;;
    # dptrain's ResNet runs 2 epochs of S steps and is timed on the second; the peers' S steps
    # come after 20 warm-up steps (torch.compile compiles in the first).
    dptrain-resnet) dptrain_run d2l.json resnet "$r" --set model.name=resnet18 \
                      --set optimizer.lr=0.1 --set data.batch_size="$resnet_batch" \
                      --set train.epochs=2 --set train.limit_train_batches="$resnet_steps" \
                      --set train.limit_eval_batches=1 --set checkpoint.every_epochs=0 \
                      --set parallel.devices=cpu --set runtime.threads="$threads" ;;
    resnet-torch-eager) peer_run resnet-torch-eager "$r" "${resnet[@]}" ;;
    resnet-torch-compile) peer_run resnet-torch-compile "$r" "${resnet[@]}" --compile ;;
  esac
}
sides=(dptrain d2l lightning torch-eager torch-compile dptrain-ddp ddp-torch ddp-lightning
  dptrain-resnet resnet-torch-eager resnet-torch-compile)
if [[ -n $only ]]; then
  IFS=, read -r -a chosen <<<"$only"
  for side in "${chosen[@]}"; do
    [[ " ${sides[*]} " == *" $side "* ]] || { echo "bench_peers: no side '$side' (${sides[*]})" >&2; exit 2; }
  done
  sides=("${chosen[@]}")
fi

machine_line
"$bin" info | grep -E '^(dptrain|libtorch)'
"$PYTHON" -c 'import importlib.metadata as m, sys
print("peers: python", sys.version.split()[0], *(f"{p} {m.version(p)}" for p in
      ("torch", "torchvision", "lightning", "d2l")))'
echo "settings: $threads threads, $epochs epochs a LeNet run, ResNet-18 $resnet_steps steps of" \
  "batch $resnet_batch, $repeats repeats"
for ((r = 1; r <= repeats; r++)); do
  # Every side once a repeat, in a fresh random order, so that drift in the machine's speed
  # lands on no side more than another.
  for side in $(printf '%s\n' "${sides[@]}" | shuf); do
    one_run "$side" "$r"
  done
  echo "repeat $r of $repeats done" >&2
done
"$PYTHON" "$root/scripts/bench/figures.py" "$figures" "$out/bench_peers.json" --base single \
  --group ddp-=ddp --group resnet-=resnet | tee "$out/bench_peers.md"
echo "wrote $out/bench_peers.md and $out/bench_peers.json" >&2
