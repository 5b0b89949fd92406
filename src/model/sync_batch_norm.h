// SyncBatchNorm's training forward and backward as one autograd function: the batch's mean and
// variance come from per-channel sums over every rank, and backward sums the two per-channel terms
// that the input's gradient needs (the weight's and bias's gradients stay local: the gradient
// reducer averages those like any other). LibTorch's C++ API has no SyncBatchNorm.
#pragma once

#include <torch/torch.h>

#include "model/batch_norm.h"

namespace dptrain::model {

// x [N, C, H, W] normalised with the global batch's statistics, which also update the running
// ones (variance unbiased over the global count). Computed in fp32; returns x's dtype.
torch::Tensor sync_batch_norm(const torch::Tensor& x, BatchNorm2dImpl& bn, StatisticsSum& over);

}  // namespace dptrain::model
