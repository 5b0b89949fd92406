# Shared by the bench scripts: build, find the data as dptrain does, run dptrain and read its
# figures (sec/epoch, the all-reduce wait), medians. Source it after setting `root`; it sets
# `bin`, `data_dir`, `py` and `work`. The side-by-side benches (bench_gpu.sh, bench_peers.sh)
# also run peers and dptrain into `$figures` with logs in `$out/logs`, which they set.
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

# dptrain_sec_per_epoch TAG [--set ...]: trains, prints the run's mean training sec/epoch; with
# GNU time installed, the run's peak resident set size (KiB) goes to $work/run-TAG.rss.
dptrain_sec_per_epoch() {
  local tag=$1
  shift
  local timed=()
  [[ -x /usr/bin/time ]] && timed=(/usr/bin/time -f %M -o "$work/run-$tag.rss")
  "${timed[@]}" "$bin" train --set data.dir="$data_dir" --set log.level=warn "$@" \
    --output "$work/run-$tag" >"$work/run-$tag.log" 2>&1 || { cat "$work/run-$tag.log" >&2; exit 1; }
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

# measured NAME COMMAND...: runs COMMAND, its peak resident set size (KiB, the largest single
# process of the run) into $figures/NAME.rss where GNU time is installed.
measured() {
  local name=$1
  shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f %M -o "$figures/$name.rss" "$@"
  else
    "$@"
  fi
}

# peer_run NAME R SCRIPT [ARGS...]: one run of a peer script of scripts/bench with $PYTHON, its
# log in $out/logs, its last line (JSON) in $figures/peer-NAME-R.json. A failed peer is said
# and left out of the table: the other figures still count.
peer_run() {
  local name=$1 r=$2 script=$3
  shift 3
  local log=$out/logs/peer-$name-$r.log
  # The peer's last line that is a JSON object: libraries may print after it.
  if (cd "$root/scripts/bench" && measured "peer-$name-$r" "$PYTHON" "$script" --data "$data_dir" "$@") \
    >"$log" 2>&1 && grep '^{' "$log" | tail -n 1 >"$figures/peer-$name-$r.json" &&
    [[ -s $figures/peer-$name-$r.json ]]; then
    return
  fi
  rm -f "$figures/peer-$name-$r.json"
  echo "bench: $name failed or printed no figures (log: $log)" >&2
  tail -n 5 "$log" >&2
}

# dptrain_run CONFIG TAG R [--set ...]: one run of configs/CONFIG into $figures/dptrain-TAG-R,
# its log in $out/logs. A failed run is said and left out of the table.
dptrain_run() {
  local config=$1 tag=$2 r=$3
  shift 3
  measured "dptrain-$tag-$r" "$bin" train --config "$root/configs/$config" \
    --set data.dir="$data_dir" "$@" --output "$figures/dptrain-$tag-$r" \
    >"$out/logs/dptrain-$tag-$r.log" 2>&1 && return
  echo "bench: dptrain $tag run $r failed (log: $out/logs/dptrain-$tag-$r.log)" >&2
  tail -n 20 "$out/logs/dptrain-$tag-$r.log" >&2
  rm -rf "$figures/dptrain-$tag-$r"
}
