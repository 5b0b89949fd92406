#include "data/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <numeric>

namespace dptrain::data {

std::vector<int64_t> SequentialSampler::epoch_indices(int64_t /*epoch*/) const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

std::vector<int64_t> RandomSampler::epoch_indices(int64_t epoch) const {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed_ + epoch));
  const torch::Tensor perm = torch::randperm(n_, generator, torch::kInt64);
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n_);
}

}  // namespace dptrain::data
