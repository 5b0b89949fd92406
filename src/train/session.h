// What one run trains with, put together from a resolved config: the backend around a freshly
// initialised model, the optimizer, the precision settings and the loaders, each rank taking its
// share of every global batch.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "data/loader.h"
#include "launch/environment.h"
#include "model/state_dict.h"
#include "optim/schedule.h"
#include "parallel/backend.h"
#include "train/grad_scaler.h"

namespace dptrain::train {

struct Session {
  // The resolved config with what the data is filled in (data.classes, channels, image_size):
  // what the run records, and what its model was made for.
  config::Config config;
  std::string data_listing;   // the digest of a folder's listing (data/sources.h); empty for IDX
  int64_t skipped_files = 0;  // pictures data.on_bad_file "skip" left out
  std::unique_ptr<parallel::Backend> backend;
  // The model state by name, in the order of train::model_state() (model.pt's keys).
  std::vector<model::StateSpec> state_specs;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::optional<optim::LearningRateSchedule> schedule;  // set once the loaders are known
  int64_t accumulate = 1;                               // micro-batches per optimizer step
  int64_t total_steps = 0;  // optimizer steps of the whole run (epochs and max_steps)
  std::optional<at::ScalarType> autocast;                   // none: fp32
  GradScaler scaler{GradScalerOptions{/*enabled=*/false}};  // fp16 only
  double grad_clip_norm = 0;
  std::unique_ptr<data::Loader> train_loader;
  std::unique_ptr<data::Loader> val_loader;  // only with data.val_split > 0
  std::unique_ptr<data::Loader> test_loader;

  int64_t classes() const { return static_cast<int64_t>(config.data.classes.size()); }
};

// data.batch_size is the global batch: each of W ranks takes B/W of it, as d2l splits a batch over
// its GPUs, so that W ranks take the optimizer step one device takes on B. A config error when
// it does not divide.
int64_t per_rank_batch(int64_t batch_size, int world_size);

// What a session is for: evaluation (`dptrain evaluate`) needs no optimizer and no plan of steps.
enum class SessionUse { kTrain, kEvaluate };

// Sets this process's intra-op threads, then builds the session. The data comes first: the model
// takes its channels and classes from it.
Session build_session(const config::Config& config, const launch::RankInfo& rank,
                      SessionUse use = SessionUse::kTrain);

}  // namespace dptrain::train
