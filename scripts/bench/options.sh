# The options bench_ddp.sh and bench_zero.sh share: `bench_options "$0" "$@"` sets `threads`
# (default: every core), `half` (per rank of two), `epochs` (1) and `repeats` (3).
bench_options() {
  local script=$1
  shift
  threads=$(nproc) epochs=1 repeats=3
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --threads) threads=$2; shift 2 ;;
      --epochs) epochs=$2; shift 2 ;;
      --repeats) repeats=$2; shift 2 ;;
      *) echo "usage: $script [--threads N] [--epochs E] [--repeats R]" >&2; exit 2 ;;
    esac
  done
  half=$(( threads / 2 > 0 ? threads / 2 : 1 ))
}
