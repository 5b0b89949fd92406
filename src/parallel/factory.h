// Builds the backend that `parallel.backend` names, around a freshly initialised model, for this
// process's place in the job (`rank`: world size 1 when it runs alone).
#pragma once

#include <memory>

#include "config/config.h"
#include "distributed/rendezvous.h"
#include "parallel/backend.h"

namespace dptrain::parallel {

// `sync_batchnorm` (model.sync_batchnorm): ddp's BatchNorm layers normalise over the global batch.
std::unique_ptr<Backend> make_backend(const config::ParallelConfig& config,
                                      torch::nn::AnyModule model, const distributed::RankInfo& rank,
                                      bool sync_batchnorm = false);

}  // namespace dptrain::parallel
