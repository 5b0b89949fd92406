// Every ddp rank must train the same experiment on the same data: a rank given another
// data.val_split, seed, transform or picture size (by its own --set, or its own copy of a folder)
// would otherwise run other collectives than its peers, and Gloo ends the process, or train
// something else under the same indices without a word. Checked once the job is up, before
// the first step.
#pragma once

#include "config/config.h"
#include "data/sources.h"
#include "parallel/backend.h"

namespace dptrain::train {

// Compares this rank's experiment (every key that decides what is computed: not log.*,
// runtime.*, parallel.devices, nor where and how the data is read) and its data's listing digest,
// classes and sample counts with rank 0's, through the job's store. A distributed error on every
// rank, naming the first key that differs and the rank, when they are not all alike.
void agree_on_experiment(parallel::Backend& backend, const config::Config& config,
                         const data::OpenedData& data);

}  // namespace dptrain::train
