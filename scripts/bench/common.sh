# Shared by the bench scripts: build, find the data as dptrain does, run dptrain and read its
# figures (sec/epoch, the all-reduce wait), medians. Source it after setting `root`; it sets
# `bin`, `data_dir`, `py` and `work`.
"$root/scripts/build.sh"
bin=${BUILD_DIR:-$root/build}/dptrain
# dptrain's own lookup (data/README.md), so that every program reads the same files.
data_dir=$("$bin" info | sed -n 's/^data fashion-mnist: //p')
[[ -d "$data_dir" ]] || { echo "bench: no Fashion-MNIST found (run scripts/setup.sh)" >&2; exit 1; }
py=${PYTHON:-/usr/bin/python3}  # Debian's, which has python3-torch (a pyenv python3 may not); the GPU machine names its own
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

have_torch_baseline() { "$py" -c 'import torch, torchvision' 2>/dev/null; }

machine_line() {
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
}

# dptrain_sec_per_epoch TAG [--set ...]: trains, prints the run's mean training sec/epoch.
dptrain_sec_per_epoch() {
  local tag=$1
  shift
  "$bin" train --set data.dir="$data_dir" --set log.level=warn "$@" --output "$work/run-$tag" \
    >"$work/run-$tag.log" 2>&1 || { cat "$work/run-$tag.log" >&2; exit 1; }
  run_sec_per_epoch "$tag"
}

run_sec_per_epoch() {  # run_sec_per_epoch TAG: the mean training sec/epoch of $work/run-TAG
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sec_per_epoch"])' \
    "$work/run-$1/summary.json"
}

wait_share() {  # wait_share TAG: rank 0's all-reduce wait over its training time in $work/run-TAG
  "$py" -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print(sum(r["comm_wait_sec"] for r in rows) / sum(r["train_sec"] for r in rows))' \
    "$work/run-$1/metrics.jsonl"
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
