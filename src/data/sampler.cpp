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

namespace {

std::vector<int64_t> permutation(int64_t n, int64_t seed) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  const torch::Tensor perm = torch::randperm(n, generator, torch::kInt64);
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

void check_rank(int64_t world_size, int64_t rank) {
  TORCH_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "sampler: rank ", rank,
              " is not in a world of ", world_size);
}

}  // namespace

std::vector<int64_t> RandomSampler::epoch_indices(int64_t epoch) const {
  return permutation(n_, seed_ + epoch);
}

DistributedSampler::DistributedSampler(int64_t n, Options options) : n_(n), options_(options) {
  check_rank(options_.world_size, options_.rank);
  const int64_t w = options_.world_size;
  // torch: with drop_last, ceil((n - W) / W) when n % W != 0, which equals floor(n / W).
  per_rank_ = options_.drop_last ? n_ / w : (n_ + w - 1) / w;
  TORCH_CHECK(per_rank_ > 0 || n_ == 0, "sampler: ", n_, " samples cannot be shared by ", w,
              " ranks with drop_last");
}

std::vector<int64_t> DistributedSampler::epoch_indices(int64_t epoch) const {
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = permutation(n_, options_.seed + epoch);
  } else {
    order.resize(static_cast<size_t>(n_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t total = per_rank_ * options_.world_size;
  // Pads by repeating the order from its start (several times over when n < W), as torch does.
  for (int64_t i = n_; i < total; ++i) order.push_back(order[static_cast<size_t>(i % n_)]);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t i = options_.rank; i < total; i += options_.world_size) {
    mine.push_back(order[static_cast<size_t>(i)]);
  }
  return mine;
}

ShardSampler::ShardSampler(int64_t n, int64_t world_size, int64_t rank)
    : n_(n), world_size_(world_size), rank_(rank) {
  check_rank(world_size_, rank_);
}

int64_t ShardSampler::size() const {
  return n_ > rank_ ? (n_ - rank_ + world_size_ - 1) / world_size_ : 0;
}

std::vector<int64_t> ShardSampler::epoch_indices(int64_t /*epoch*/) const {
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(size()));
  for (int64_t i = rank_; i < n_; i += world_size_) mine.push_back(i);
  return mine;
}

}  // namespace dptrain::data
