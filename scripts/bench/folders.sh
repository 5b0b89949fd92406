# Parts 3 to 6 of scripts/bench_loader.sh (its header says what each measures), sourced by it
# after scripts/bench/common.sh: folders of the real pictures, dptrain's loader beside
# torchvision's DataLoader(ImageFolder) with the same transforms, and LeNet's epoch from the PNG
# tree and ResNet-18's steps from the 96x96 tree against the same from memory.
"$py" -c 'import torchvision, PIL, numpy' 2>/dev/null ||
  { echo "bench: the folders part needs python3-torchvision and python3-pil (scripts/setup.sh)" >&2; exit 1; }
echo "== folders of the real pictures in $folders"
"$py" "$root/scripts/bench/write_folders.py" "$data_dir" "$folders"

lenet_aug='[{"name": "random_crop", "size": 28, "padding": 2}, {"name": "random_horizontal_flip"}]'
resnet_aug='[{"name": "random_resized_crop", "size": 96}, {"name": "random_horizontal_flip"}]'
# The figure a side's line ends with: images/s, and the peak resident memory it printed.
rate_of() { sed -n 's/.*: \([0-9]*\) images\/s.*/\1/p'; }
rss_of() { sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p'; }

for kind in png28 jpeg28 jpeg96; do
  channels=1 aug=$lenet_aug
  [[ $kind == jpeg96 ]] && channels=3 aug=$resnet_aug
  sets=(--set data.dataset=folder --set data.dir="$folders/$kind" --set data.channels=$channels
    --set "data.train_transforms=$aug")
  echo "== $kind: loader only, the 60,000 training pictures in batches of 256, one intra-op thread;"
  echo "   images/s, median of $repeats runs (each the median of $passes passes), sides alternating"
  for workers in 0 1 2; do
    ours=() theirs=() our_rss=() their_line=""
    for ((r = 1; r <= repeats; r++)); do
      dptrain_side() {
        local line
        line=$("${bin%/*}/dptrain_bench_folder" "${sets[@]}" --workers "$workers" --passes "$passes")
        ours+=("$(rate_of <<<"$line")") our_rss+=("$(rss_of <<<"$line")")
      }
      torchvision_side() {
        their_line=$("$py" "$root/scripts/bench/folder_loader.py" --root "$folders/$kind" \
          --channels $channels --transforms "$aug" --workers "$workers" --passes "$passes")
        theirs+=("$(rate_of <<<"$their_line")")
      }
      if ((r % 2)); then dptrain_side; torchvision_side; else torchvision_side; dptrain_side; fi
    done
    a=$(median "${ours[@]}") b=$(median "${theirs[@]}")
    printf '%s W=%s: dptrain %s images/s (peak RSS %s MiB), %s, %s images/s: %.2fx\n' "$kind" \
      "$workers" "$a" "$(median "${our_rss[@]}")" "${their_line%%:*}" "$b" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')"
    echo "   torchvision's memory: ${their_line#*images/s, }"
  done
  "${bin%/*}/dptrain_bench_folder" "${sets[@]}" --breakdown 5000 --passes 1 | sed -n '1s/^/   dptrain /p'
done

echo "== LeNet, one epoch with $lenet_aug and 2 workers: the PNG tree against the IDX files"
from_folder=() from_memory=()
for ((r = 1; r <= repeats; r++)); do
  common=(--set train.epochs=1 --set data.num_workers=2 --set "data.train_transforms=$lenet_aug")
  folder_run() {
    from_folder+=("$(dptrain_sec_per_epoch "folder-$r" "${common[@]}" --set data.dataset=folder \
      --set data.dir="$folders/png28" --set data.channels=1)")
  }
  memory_run() { from_memory+=("$(dptrain_sec_per_epoch "memory-$r" "${common[@]}")"); }
  if ((r % 2)); then folder_run; memory_run; else memory_run; folder_run; fi
done
a=$(median "${from_folder[@]}") b=$(median "${from_memory[@]}")
printf 'LeNet epoch: from the folder %.2f s, from memory %.2f s: %.2fx (medians of %s)\n' "$a" "$b" \
  "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$repeats"

steps=6
echo "== ResNet-18, $steps steps of 32 with $resnet_aug and 2 workers: the 96x96 RGB JPEG tree"
echo "   against the IDX files in memory (28x28 grey, the same transforms: a stem of one channel)"
from_folder=() from_memory=()
for ((r = 1; r <= repeats; r++)); do
  common=(--set model.name=resnet18 --set train.epochs=1 --set data.batch_size=32
    --set train.limit_train_batches=$steps --set train.limit_eval_batches=1
    --set data.num_workers=2 --set "data.train_transforms=$resnet_aug"
    --set 'data.eval_transforms=[{"name": "resize", "size": [96, 96]}]')
  folder_run() {
    from_folder+=("$(dptrain_sec_per_epoch "resnet-folder-$r" "${common[@]}" \
      --set data.dataset=folder --set data.dir="$folders/jpeg96" --set data.channels=3)")
  }
  memory_run() { from_memory+=("$(dptrain_sec_per_epoch "resnet-memory-$r" "${common[@]}")"); }
  if ((r % 2)); then folder_run; memory_run; else memory_run; folder_run; fi
done
a=$(median "${from_folder[@]}") b=$(median "${from_memory[@]}")
printf 'ResNet-18 %s steps: from the folder %.2f s, from memory %.2f s: %.2fx (medians of %s)\n' \
  "$steps" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$repeats"
