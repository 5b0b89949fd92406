#!/usr/bin/env bash
# ddp across two machines against one: two test hosts (network namespaces, 10.79.0.1 and
# 10.79.0.2, made and removed here; needs root) each run one CPU rank under dptrain's launcher as
# docs/backends.md's multi-node recipe says, against the same two ranks on this machine alone, with
# 0, 2 and 10 ms of delay each way between the hosts (`tc netem` on a veth pair, or where the kernel
# has no netem a userspace delay line: scripts/bench/delay_line.py). Prints sec/epoch and rank 0's
# share of training time spent waiting in gradient all-reduces (comm_wait_sec), for the default
# buckets and for small ones (parallel.bucket_mb, which starts all-reduces earlier in backward).
#
#   scripts/bench_hosts.sh [--threads N] [--epochs E] [--repeats R]
#
# N threads per rank (default: half the cores). Full epochs of Fashion-MNIST, global batch 256.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/bench/options.sh"
bench_options "$0" "$@"
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

run_one() {  # run_one TAG BUCKET_MB: two ranks on this machine
  # shellcheck disable=SC2046
  "$bin" train $(common) --set 'parallel.devices=["cpu","cpu"]' --set parallel.bucket_mb="$2" \
    --output "$work/run-$1" >"$work/run-$1.log" 2>&1 || { cat "$work/run-$1.log" >&2; exit 1; }
}

run_hosts() {  # run_hosts TAG BUCKET_MB: one rank on each test host
  local port=$((29600 + RANDOM % 1000)) pids=()
  for h in 0 1; do
    # shellcheck disable=SC2046
    DPTRAIN_JOB_SECRET=$secret ip netns exec "$ns$h" "$bin" train $(common) \
      --set 'parallel.devices=["cpu"]' --set parallel.bucket_mb="$2" --nnodes 2 --node-rank "$h" \
      --master-addr 10.79.0.1 --master-port "$port" --output "$work/run-$1$([[ $h -eq 1 ]] && echo -node1)" \
      >"$work/run-$1-$h.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$work/run-$1-"*.log >&2; exit 1; }; done
}

settings=("one 25" "one 0.05" "hosts-0ms 25" "hosts-0ms 0.05" "hosts-2ms 25" "hosts-10ms 25"
  "hosts-10ms 0.05")

machine_line
echo "settings: $half threads per rank, $epochs epoch(s) per run, $repeats rounds, link $link, data $data_dir"
declare -A secs shares
for ((r = 1; r <= repeats; r++)); do
  while read -r s; do
    read -r name bucket <<<"$s"
    tag="$name-$bucket-$r"
    if [[ $name == one ]]; then
      run_one "$tag" "$bucket"
    else
      delay=${name#hosts-}
      connect "${delay%ms}"
      run_hosts "$tag" "$bucket"
    fi
    sec=$(run_sec_per_epoch "$tag")
    share=$(wait_share "$tag")
    secs[$s]+="$sec "
    shares[$s]+="$share "
    printf 'round %d: %-10s bucket_mb %-5s %6.2f sec/epoch, all-reduce wait %.1f%%\n' \
      "$r" "$name" "$bucket" "$sec" "$(awk -v w="$share" 'BEGIN {print 100 * w}')"
  done < <(printf '%s\n' "${settings[@]}" | shuf)
done

echo
printf '%-10s %9s %12s %12s %14s\n' setting bucket_mb "sec/epoch" "time vs one" "all-reduce wait"
m_one=$(median ${secs["one 25"]})
for s in "${settings[@]}"; do
  read -r name bucket <<<"$s"
  m=$(median ${secs[$s]})
  printf '%-10s %9s %12.2f %11.2fx %13.1f%%\n' "$name" "$bucket" "$m" \
    "$(awk -v a="$m_one" -v b="$m" 'BEGIN {print b / a}')" \
    "$(awk -v w="$(median ${shares[$s]})" 'BEGIN {print 100 * w}')"
done
