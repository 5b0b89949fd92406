// The order in which a split is visited each epoch. Shuffled orders come from (seed, epoch) alone,
// through torch's own generator, so a run is reproducible and matches torch's samplers.
#pragma once

#include <cstdint>
#include <vector>

namespace dptrain::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual int64_t size() const = 0;  // indices per epoch
  virtual std::vector<int64_t> epoch_indices(int64_t epoch) const = 0;
};

// 0, 1, ..., n-1 every epoch (evaluation).
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

// A fresh permutation each epoch: torch.randperm(n, generator seeded with seed + epoch), as
// torch.utils.data.DistributedSampler draws it.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, int64_t seed) : n_(n), seed_(seed) {}
  int64_t size() const override { return n_; }
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;

 private:
  int64_t n_;
  int64_t seed_;
};

}  // namespace dptrain::data
