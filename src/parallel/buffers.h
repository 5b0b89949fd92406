// What each backend does with a model's buffers (BatchNorm's running statistics), as the PyTorch
// wrappers it mirrors do:
//   - single: the one copy's, updated by its forwards;
//   - dp: the first replica's (the master copy's); the others get them before each forward and
//     their updates are dropped (torch.nn.DataParallel);
//   - ddp: rank 0's, broadcast before the first forward after a synced training step
//     (DistributedDataParallel with broadcast_buffers=True); each rank normalises its own shard,
//     unless model.sync_batchnorm sums the statistics over the ranks (torch.nn.SyncBatchNorm).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace dptrain::parallel {

// Rank 0's values into every rank's `tensors`, in one collective (as fp64, which holds every
// float and every integer count exactly).
void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors,
                          distributed::Communicator& comm, const std::string& what);

// Compares every rank's tensor shapes with rank 0's through the job's store, before a collective
// over them: ranks whose models differ (made for other data: another class count, channels or
// picture size) would otherwise broadcast buffers of other lengths, which Gloo answers by ending
// the process. A distributed error naming the rank and the first tensor that differs (`names`:
// the tensors' names, as the state_dict has them).
void check_same_shapes(const std::vector<std::string>& names,
                       const std::vector<torch::Tensor>& tensors, distributed::Communicator& comm);

// Makes every BatchNorm in `model` normalise with the statistics of the global batch, summed over
// `comm`'s ranks; returns how many there are. `comm` must outlive the model's forwards.
int sync_batchnorm_over(torch::nn::Module& model, distributed::Communicator& comm);
// Undoes sync_batchnorm_over(): the model may outlive the communicator (AnyModule shares it).
void stop_syncing_batchnorm(torch::nn::Module& model);

}  // namespace dptrain::parallel
