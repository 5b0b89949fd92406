#!/usr/bin/env bash
# ddp across two machines against one: two test hosts (network namespaces, 10.79.0.1 and
# 10.79.0.2, made and removed here; needs root) each run one CPU rank under dptrain's launcher as
# docs/backends.md's multi-node recipe says, against the same two ranks on this machine alone, with
# 0, 2 and 10 ms of delay each way between the hosts (`tc netem` on a veth pair, or where the kernel
# has no netem a userspace delay line: scripts/bench/delay_line.py). Each link is measured with
# every way the ranks can exchange what they learn (docs/backends.md, "Training over slow links"):
# whole gradients (none), fp16 or bf16 buckets, PowerSGD at rank 1 after 10 plain steps, local SGD
# averaging every 8 steps after 10 plain ones; at 10 ms also with small buckets (bucket_mb 0.05,
# which starts all-reduces earlier in backward). Prints sec/epoch, its ratio to one machine, the
# bytes rank 0 hands to collectives per step (comm_bytes_per_step) and its share of training time
# spent waiting for gradient all-reduces (comm_wait_sec).
#
# Then each exchange's test accuracy after --accuracy-epochs epochs (default 10; 0: none), trained
# once by two ranks on this machine: the link's delay changes when numbers arrive, never which, so
# the accuracy of a setting is the same at every delay. With --resnet-steps S (default 0: none),
# ResNet-18 (batch 64) at 10 ms for S steps with whole gradients and the two fastest exchanges at
# 10 ms that reach 0.82 on LeNet: seconds and bytes per step.
#
#   scripts/bench_hosts.sh [--threads N] [--epochs E] [--repeats R] [--accuracy-epochs A]
#                          [--resnet-steps S]
#
# N threads per rank (default: half the cores). Full epochs of Fashion-MNIST, global batch 256.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc) epochs=1 repeats=3 accuracy_epochs=10 resnet_steps=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --accuracy-epochs) accuracy_epochs=$2; shift 2 ;;
    --resnet-steps) resnet_steps=$2; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--epochs E] [--repeats R] [--accuracy-epochs A] [--resnet-steps S]" >&2; exit 2 ;;
  esac
done
half=$(( threads / 2 > 0 ? threads / 2 : 1 ))
[[ $(id -u) -eq 0 ]] || { echo "bench_hosts: network namespaces need root" >&2; exit 1; }
source "$root/scripts/bench/common.sh"

ns=dptbench$$
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
line_pid=""
links=0  # each link's devices get names of their own: an old one may linger while it goes
dev() { echo "l$$-$links-$1"; }  # dev HOST: that host's end of the current link
disconnect() {  # removes the link between the hosts, whichever kind it is
  [[ -n $line_pid ]] && { kill "$line_pid" 2>/dev/null; wait "$line_pid" 2>/dev/null || true; }
  line_pid=""
  for h in 0 1; do ip -n "$ns$h" link del "$(dev "$h")" 2>/dev/null || true; done
}
cleanup_hosts() {
  disconnect
  for h in 0 1; do
    ip netns pids "$ns$h" 2>/dev/null | xargs -r kill -9
    ip netns del "$ns$h" 2>/dev/null || true
  done
}
trap 'cleanup_hosts; rm -rf "$work"' EXIT
for h in 0 1; do ip netns add "$ns$h"; ip -n "$ns$h" link set lo up; done

# The link's kind: a veth pair with netem's delay on each end where the kernel has netem, else the
# userspace delay line (scripts/bench/delay_line.py) between two TAP devices, for every row, 0 ms
# included, so that its own cost is in each.
link=netem
ip link add "$(dev 0)" type veth peer name "$(dev 1)"
if ! tc qdisc add dev "$(dev 0)" root netem delay 1ms 2>/dev/null; then
  link=line
  echo "note: this kernel has no netem: the hosts talk through a userspace delay line"
fi
ip link del "$(dev 0)"

connect() {  # connect MS: the hosts joined by a link that delays each frame MS ms each way
  disconnect
  links=$((links + 1))
  if [[ $link == netem ]]; then
    ip link add "$(dev 0)" type veth peer name "$(dev 1)"
  else
    "$root/scripts/bench/delay_line.py" "$(dev 0)" "$(dev 1)" "$1" >"$work/line-$links.log" 2>&1 &
    line_pid=$!
    for _ in $(seq 50); do grep -q ready "$work/line-$links.log" 2>/dev/null && break; sleep 0.1; done
  fi
  for h in 0 1; do
    ip link set "$(dev "$h")" netns "$ns$h"
    ip -n "$ns$h" addr add "10.79.0.$((h + 1))/24" dev "$(dev "$h")"
    # 64 KiB frames: the delay line carries a few large frames, not many small ones
    [[ $link == line ]] && ip -n "$ns$h" link set "$(dev "$h")" mtu 65000
    ip -n "$ns$h" link set "$(dev "$h")" up
    if [[ $link == netem && $1 -gt 0 ]]; then
      ip netns exec "$ns$h" tc qdisc add dev "$(dev "$h")" root netem delay "${1}ms"
    fi
  done
}

common() {  # the settings every run shares
  echo --set train.epochs="$epochs" --set data.placement=host --set data.dir="$data_dir" \
    --set log.level=warn --set parallel.backend=ddp --set runtime.threads="$half"
}

exchange() {  # exchange NAME: the settings of one way to exchange what the ranks learn
  case "$1" in
    none) ;;
    fp16 | bf16) echo --set parallel.grad_compression="$1" ;;
    powersgd) echo --set parallel.grad_compression=powersgd --set parallel.powersgd_start_step=10 ;;
    local8) echo --set parallel.local_sgd=8 --set parallel.local_sgd_warmup_steps=10 ;;
    *) echo "bench_hosts: unknown exchange $1" >&2; exit 2 ;;
  esac
}

run_one() {  # run_one TAG BUCKET_MB [--set ...]: two ranks on this machine
  local tag=$1 bucket=$2
  shift 2
  # shellcheck disable=SC2046
  "$bin" train $(common) --set 'parallel.devices=["cpu","cpu"]' --set parallel.bucket_mb="$bucket" \
    "$@" --output "$work/run-$tag" >"$work/run-$tag.log" 2>&1 || { cat "$work/run-$tag.log" >&2; exit 1; }
}

run_hosts() {  # run_hosts TAG BUCKET_MB [--set ...]: one rank on each test host
  local tag=$1 bucket=$2 port=$((29600 + RANDOM % 1000)) pids=()
  shift 2
  for h in 0 1; do
    # shellcheck disable=SC2046
    DPTRAIN_JOB_SECRET=$secret ip netns exec "$ns$h" "$bin" train $(common) \
      --set 'parallel.devices=["cpu"]' --set parallel.bucket_mb="$bucket" "$@" --nnodes 2 \
      --node-rank "$h" --master-addr 10.79.0.1 --master-port "$port" \
      --output "$work/run-$tag$([[ $h -eq 1 ]] && echo -node1)" >"$work/run-$tag-$h.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$work/run-$tag-"*.log >&2; exit 1; }; done
}

bytes_per_step() {  # bytes_per_step TAG: rank 0's bytes handed to collectives per optimizer step
  "$py" -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print(sum(r["comm_bytes"] for r in rows) / rows[-1]["global_step"])' "$work/run-$1/metrics.jsonl"
}

test_acc() {  # test_acc TAG: the run's final test accuracy
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_acc"])' \
    "$work/run-$1/summary.json"
}

exchanges=(none fp16 bf16 powersgd local8)
settings=("one 25 none")
for delay in 0 2 10; do
  for x in "${exchanges[@]}"; do settings+=("hosts-${delay}ms 25 $x"); done
done
settings+=("hosts-10ms 0.05 none")

machine_line
echo "settings: $half threads per rank, $epochs epoch(s) per run, $repeats rounds, link $link, data $data_dir"
declare -A secs shares bytes
for ((r = 1; r <= repeats; r++)); do
  while read -r s; do
    read -r name bucket x <<<"$s"
    tag="$name-$bucket-$x-$r"
    if [[ $name == one ]]; then
      # shellcheck disable=SC2046
      run_one "$tag" "$bucket" $(exchange "$x")
    else
      delay=${name#hosts-}
      connect "${delay%ms}"
      # shellcheck disable=SC2046
      run_hosts "$tag" "$bucket" $(exchange "$x")
    fi
    sec=$(run_sec_per_epoch "$tag")
    share=$(wait_share "$tag")
    secs[$s]+="$sec "
    shares[$s]+="$share "
    bytes[$s]=$(bytes_per_step "$tag")
    printf 'round %d: %-10s bucket_mb %-5s %-8s %6.2f sec/epoch, %9.0f bytes/step, all-reduce wait %.1f%%\n' \
      "$r" "$name" "$bucket" "$x" "$sec" "${bytes[$s]}" "$(awk -v w="$share" 'BEGIN {print 100 * w}')"
  done < <(printf '%s\n' "${settings[@]}" | shuf)
done
disconnect

declare -A accuracy
if [[ $accuracy_epochs -gt 0 ]]; then
  echo
  echo "test accuracy after $accuracy_epochs epochs, two ranks on this machine (the same at any delay):"
  for x in "${exchanges[@]}"; do
    # shellcheck disable=SC2046
    run_one "acc-$x" 25 --set train.epochs="$accuracy_epochs" $(exchange "$x")
    accuracy[$x]=$(test_acc "acc-$x")
    printf '  %-8s %.4f\n' "$x" "${accuracy[$x]}"
  done
fi

echo
printf '%-10s %9s %-8s %10s %12s %11s %15s %9s\n' setting bucket_mb exchange "sec/epoch" \
  "time vs one" "bytes/step" "all-reduce wait" "test acc"
m_one=$(median ${secs["one 25 none"]})
for s in "${settings[@]}"; do
  read -r name bucket x <<<"$s"
  m=$(median ${secs[$s]})
  acc=${accuracy[$x]:-}
  [[ $bucket == 25 && -n $acc ]] || acc=-
  printf '%-10s %9s %-8s %10.2f %11.2fx %11.0f %14.1f%% %9s\n' "$name" "$bucket" "$x" "$m" \
    "$(awk -v a="$m_one" -v b="$m" 'BEGIN {print b / a}')" "${bytes[$s]}" \
    "$(awk -v w="$(median ${shares[$s]})" 'BEGIN {print 100 * w}')" "$acc"
done

[[ $resnet_steps -gt 0 ]] || exit 0
# The two fastest exchanges at 10 ms that reach 0.82 on LeNet (every one, without accuracies).
mapfile -t best < <(for x in "${exchanges[@]}"; do
  [[ $x == none ]] && continue
  if [[ -n ${accuracy[$x]:-} ]] && awk -v a="${accuracy[$x]}" 'BEGIN {exit !(a < 0.82)}'; then continue; fi
  echo "$(median ${secs["hosts-10ms 25 $x"]}) $x"
done | sort -g | head -n 2 | cut -d' ' -f2)
echo
echo "ResNet-18, batch 64, $resnet_steps steps, hosts 10 ms apart:"
connect 10
for x in none "${best[@]}"; do
  # shellcheck disable=SC2046
  run_hosts "resnet-$x" 25 --set model.name=resnet18 --set optimizer.lr=0.05 \
    --set data.batch_size=64 --set train.epochs=1 --set train.limit_train_batches="$resnet_steps" \
    --set train.limit_eval_batches=1 --set checkpoint.every_epochs=0 $(exchange "$x")
  sec=$(run_sec_per_epoch "resnet-$x")
  printf '  %-8s %6.3f sec/step, %11.0f bytes/step, all-reduce wait %.1f%%\n' "$x" \
    "$(awk -v s="$sec" -v n="$resnet_steps" 'BEGIN {print s / n}')" "$(bytes_per_step "resnet-$x")" \
    "$(awk -v w="$(wait_share "resnet-$x")" 'BEGIN {print 100 * w}')"
done
