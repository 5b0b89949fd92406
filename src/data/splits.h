// The splits a run's loaders take, made from the opened data set as training makes them: the
// hold-out cut from the training set (data.val_split), then each part through its transforms.
// One place for training and `dptrain preview`, so that a preview shows what training sees.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "data/sources.h"

namespace dptrain::data {

struct TrainingSplits {
  std::shared_ptr<const Dataset> train, val, test;  // val: only with data.val_split > 0
  bool random = false;                              // whether the training transforms draw
  std::vector<int64_t> stored_shape;                // the training samples' before them
};

// The shape the model takes: what data.train_transforms make of the stored sample shape. A config
// error when data.eval_transforms make another (the model would see two sizes).
std::vector<int64_t> model_sample_shape(const config::DataConfig& data,
                                        const std::vector<int64_t>& stored);

// `opened` must be loaded (load_data).
TrainingSplits make_splits(const config::Config& config, const OpenedData& opened);

}  // namespace dptrain::data
