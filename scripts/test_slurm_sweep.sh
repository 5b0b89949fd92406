#!/bin/bash
# scripts/slurm/sweep.sbatch under a real SLURM: a one-node cluster on this machine (Debian's
# slurm-wlm and munge, as root), a 4-point array over the real Fashion-MNIST, task 1 preempted by
# SLURM's own notice (scancel --signal=USR1 -b) mid-epoch and requeued by the script. Passes when
# every task ends with status 0, task 1's log shows the preemption (75, "requeue: yes") and its
# second attempt, its point resumed from the checkpoint, and compare.md lists four finished points.
#   scripts/test_slurm_sweep.sh [--keep]     (--keep leaves the cluster's folder for a look)
# Needs: root, `apt-get install slurm-wlm munge`, and build/dptrain (scripts/build.sh). It starts
# its own munged (if none runs), slurmctld and slurmd on a private configuration and stops them
# at the end; nothing under /etc is changed. Not part of scripts/test.sh: SLURM is not in set-up.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
keep=no
[ "${1:-}" = --keep ] && keep=yes
fail() { echo "test_slurm_sweep: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run it as root (slurmd starts the jobs as their user)"
command -v slurmctld >/dev/null && command -v munged >/dev/null ||
  fail "no SLURM here; install it: apt-get install slurm-wlm munge"
[ -x "$repo/build/dptrain" ] || fail "no build/dptrain; build it first: scripts/build.sh"
data=/usr/share/datasets/fashion-mnist
[ -d "$data" ] || fail "no $data; install it: apt-get install dataset-fashion-mnist"

work=$(mktemp -d /tmp/dptrain-slurm.XXXXXX)
chmod 755 "$work"
pids=()
job=
cleanup() {
  # The array's tasks first, so that no point trains on into a folder being removed.
  if [ -n "$job" ]; then
    scancel "$job" 2>/dev/null || true
    for _ in $(seq 60); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$keep" = yes ]; then echo "test_slurm_sweep: left $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# munge: the machine's key (the package made it); a daemon of our own when none answers.
if ! munge -n </dev/null >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge: /run/munge
  runuser -u munge -- munged --foreground >"$work/munged.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.2; done
  munge -n </dev/null >/dev/null 2>&1 || fail "munged did not start: $(cat "$work/munged.log")"
fi

node=$(hostname -s)
cpus=$(nproc)
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=dptrain-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobRequeue=1
ReturnToService=2
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >"$work/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.3
done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
  fail "the one-node cluster did not come up; see $work/slurmctld.log and slurmd.log (--keep)"

# Four points of two epochs each, one CPU per task (two run at a time on two cores).
sweep=$work/sweep
job=$(sbatch --parsable --array=0-3 --gpus=0 --cpus-per-task=1 --time=20 \
  --chdir="$repo" --output="$work/task-%a.out" \
  --export=ALL,DPTRAIN_HOME="$repo",DPTRAIN_SWEEP_DIR="$sweep" \
  "$repo/scripts/slurm/sweep.sbatch" configs/d2l.json \
  --grid optimizer.lr=0.3,0.9 --grid data.batch_size=256,512 \
  --set data.dir="$data" --set train.epochs=2 --set parallel.devices=cpu \
  --set log.every_steps=1)
echo "test_slurm_sweep: submitted array job $job"

# Preempt task 1 once its point has taken some steps: SLURM signals the batch shell (-b).
for _ in $(seq 600); do
  [ -f "$work/task-1.out" ] && grep -q "(step 20)" "$work/task-1.out" && break
  sleep 0.5
done
grep -q "(step 20)" "$work/task-1.out" 2>/dev/null || fail "task 1 never reached step 20"
# scancel retries its request while the task is being requeued ("can not be altered now"): the
# notice is delivered by then, so the wait is cut short; the logs below tell what happened.
timeout 15 scancel --signal=USR1 -b "${job}_1" 2>"$work/scancel.err" || true
echo "test_slurm_sweep: sent USR1 to task 1's batch shell"

for _ in $(seq 1200); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$job")" ] || fail "the array did not finish in 20 minutes: $(squeue -j "$job")"

for i in 0 1 2 3; do
  grep -q "task $i attempt [0-9]* ended with status 0; requeue: no" "$work/task-$i.out" ||
    fail "task $i did not end with status 0: $(tail -5 "$work/task-$i.out")"
done
log1=$work/task-1.out
grep -q "task 1 attempt 1 ended with status 75; requeue: yes" "$log1" ||
  fail "task 1 was not preempted and requeued: $(grep sweep.sbatch "$log1")"
grep -q "task 1 of array job $job attempt 2" "$log1" || fail "task 1 had no second attempt"
grep -q "resumed from" "$log1" || fail "task 1's second attempt did not resume its checkpoint"
# The resumed epoch still trained on every sample once.
samples=$(grep -o '"train_samples": *[0-9]*' "$sweep/1/metrics.jsonl" 2>/dev/null |
  grep -o '[0-9]*$' | sort -u || true)
[ "$samples" = 60000 ] || fail "point 1's epochs trained on $samples samples, not 60000"
finished=$(grep -c "| finished | single | cpu | fp32 |" "$sweep/compare.md" || true)
[ "$finished" -eq 4 ] || fail "compare.md lists $finished finished points, not 4: $(cat "$sweep/compare.md")"
grep -q "not started" "$sweep/compare.md" && fail "compare.md still has points not started"
echo "test_slurm_sweep: passed. Task 1's attempts:"
grep "sweep.sbatch:" "$log1"
echo "compare.md:"
cat "$sweep/compare.md"
