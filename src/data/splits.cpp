#include "data/splits.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "data/holdout.h"
#include "data/transformed_dataset.h"
#include "data/transforms.h"

namespace dptrain::data {

std::vector<int64_t> model_sample_shape(const config::DataConfig& data,
                                        const std::vector<int64_t>& stored) {
  const std::vector<int64_t> trained =
      shape_after(data.train_transforms, stored, "data.train_transforms");
  const std::vector<int64_t> evaluated =
      shape_after(data.eval_transforms, stored, "data.eval_transforms");
  if (trained != evaluated) {
    throw core::Error(core::ErrorCode::kConfig,
                      fmt::format("data.train_transforms make samples of {}x{} and "
                                  "data.eval_transforms of {}x{}",
                                  trained[2], trained[1], evaluated[2], evaluated[1]),
                      "end both lists with the size the model takes (a resize or a crop)");
  }
  return trained;
}

TrainingSplits make_splits(const config::Config& config, const OpenedData& opened) {
  TrainingSplits out;
  out.train = opened.train;
  out.test = opened.test;
  if (config.data.val_split > 0) {
    HeldOut held = hold_out(opened.train, config.data.val_split, config.seed);
    out.train = held.train;
    out.val = held.val;
    spdlog::info("data: {} training samples, {} held out for validation", out.train->size(),
                 out.val->size());
  }
  const auto through = [&](std::shared_ptr<const Dataset>& split,
                           const std::vector<config::TransformSpec>& transforms) {
    if (!split || transforms.empty()) return false;
    auto transformed = std::make_shared<const TransformedDataset>(split, transforms, config.seed);
    const bool random = transformed->random();
    split = std::move(transformed);
    return random;
  };
  out.stored_shape = out.train->sample_shape();
  out.random = through(out.train, config.data.train_transforms);
  through(out.val, config.data.eval_transforms);
  through(out.test, config.data.eval_transforms);
  return out;
}

}  // namespace dptrain::data
