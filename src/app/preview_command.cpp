// `dptrain preview`: the first samples of a split as training or evaluation sees them (the
// hold-out cut, the transforms with an epoch's draws), as a PNG sheet for a person and as a
// torch.save file of the very tensors for a script.
#include <spdlog/spdlog.h>

#include <iostream>
#include <numeric>

#include "app/commands.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/terminal.h"
#include "data/preview_sheet.h"
#include "data/sources.h"
#include "data/splits.h"
#include "serialize/torch_file.h"

namespace dptrain::app {
namespace {

// The most bytes of float32 samples a preview may gather (its .pt file holds them all).
constexpr int64_t kMaxPreviewBytes = int64_t{1} << 30;

std::shared_ptr<const data::Dataset> split_named(const data::TrainingSplits& splits,
                                                 const std::string& name) {
  if (name == "train") return splits.train;
  if (name == "test") return splits.test;
  if (!splits.val) {
    usage_error("--split val: this experiment holds out no validation set (data.val_split is 0)",
                "use --split train or test, or --set data.val_split=0.1");
  }
  return splits.val;
}

// The first `count` samples of `split`, checked against the bounds (theirs and their sheet's)
// before any is made.
data::Batch first_samples(const data::Dataset& split, int64_t count, int64_t epoch) {
  const int64_t n = std::min(count, split.size());
  const std::vector<int64_t> shape = split.sample_shape();
  const int64_t values =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  if (n * values * 4 > kMaxPreviewBytes) {
    usage_error("--count " + std::to_string(count) + ": " + std::to_string(n) + " samples of " +
                    std::to_string(values) + " values are more than " +
                    std::to_string(kMaxPreviewBytes >> 20) + " MiB",
                "ask for fewer samples");
  }
  if (const int64_t pixels = data::preview_sheet_pixels(n, shape[1], shape[2]);
      pixels > data::kMaxSheetPixels) {
    usage_error("--count " + std::to_string(count) + ": a sheet of " + std::to_string(n) +
                    " samples of " + std::to_string(shape[2]) + "x" + std::to_string(shape[1]) +
                    " would have " + std::to_string(pixels) + " pixels, more than " +
                    std::to_string(data::kMaxSheetPixels),
                "ask for fewer samples");
  }
  std::vector<int64_t> indices(n);
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), shape.begin(), shape.end());
  data::Batch batch{torch::empty(dims, torch::kFloat32), torch::empty({n}, torch::kInt64)};
  split.fill_epoch_batch(indices, epoch, batch.images, batch.labels);
  return batch;
}

void write_preview(const std::filesystem::path& dir, const std::string& split,
                   const data::Batch& batch, const data::PreviewSheet& sheet) {
  core::ensure_own_folder(dir, "the preview folder");
  // What torch.load(path, weights_only=True) opens: a dict of the two tensors.
  const auto tensors =
      serialize::dict({{serialize::text("images"), serialize::tensor(batch.images)},
                       {serialize::text("labels"), serialize::tensor(batch.labels)}});
  core::write_file_atomic(dir / (split + ".pt"), serialize::encode_torch_file(*tensors));
  core::write_file_atomic(dir / (split + ".png"), sheet.png);
}

// Training draws epoch e's random transforms as epoch e - 1 of the loaders (the console counts
// from 1); evaluation draws its transforms the same in every epoch, as the loaders' epoch 0.
int64_t loader_epoch(const cli::Command& command) {
  if (command.preview.split == "train") return command.preview.epoch - 1;
  if (command.preview.epoch != 1) {
    usage_error("--epoch " + std::to_string(command.preview.epoch) + " with --split " +
                    command.preview.split +
                    ": evaluation draws data.eval_transforms alike in every epoch",
                "leave --epoch out for the val and test splits");
  }
  return 0;
}

}  // namespace

int run_preview(const cli::Command& command) {
  const int64_t epoch = loader_epoch(command);
  const config::Config given = resolve(command);
  core::init_logging(config::name_of(given.log.level), 0);
  data::OpenedData data = data::open_data(given.data);
  data.sample_shape = data::model_sample_shape(given.data, data.sample_shape);
  config::Config config = given;
  config.data = data::with_data_facts(given.data, data);
  data::load_data(data);
  if (data.skipped.count > 0) {
    spdlog::warn("data.on_bad_file skip: {} pictures left out (`dptrain train` names them)",
                 data.skipped.count);
  }
  const data::TrainingSplits splits = data::make_splits(config, data);
  const std::shared_ptr<const data::Dataset> split = split_named(splits, command.preview.split);
  const data::Batch batch = first_samples(*split, command.preview.count, epoch);
  const std::vector<std::string>& classes = config.data.classes;
  std::vector<std::string> captions;
  for (int64_t i = 0; i < batch.size(); ++i) {
    const int64_t label = batch.labels[i].item<int64_t>();
    captions.push_back(std::to_string(label) + " " + classes.at(label));
    std::cout << fmt::format("{:>5}  {:>5}  {:<20}  {}\n", i, label,
                             core::printable(classes.at(label)),
                             core::printable(split->sample_name(i)));
  }
  const data::PreviewSheet sheet = data::preview_sheet(batch.images, captions);
  const std::filesystem::path dir = command.output_dir.value_or("preview");
  write_preview(dir, command.preview.split, batch, sheet);
  const std::string stem = core::printable((dir / command.preview.split).string());
  std::cout << fmt::format(
      "{} {} samples (epoch {}'s draws) of {}x{}x{}: {}.png ({}x{}, values {:g} to {:g} shown "
      "black to white), {}.pt (images float32, labels int64)\n",
      batch.size(), command.preview.split, command.preview.epoch, batch.images.size(1),
      batch.images.size(2), batch.images.size(3), stem, sheet.width, sheet.height, sheet.low,
      sheet.high, stem);
  return 0;
}

}  // namespace dptrain::app
