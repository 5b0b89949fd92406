// The order in which a split is visited each epoch, and each rank's share of it. Shuffled orders
// come from (seed, epoch) alone, through torch's own generator, so a run is reproducible and
// matches torch's samplers.
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

// One rank's share of an epoch, as torch.utils.data.DistributedSampler takes it: the permutation
// from seed + epoch (or 0..n-1 unshuffled), padded by repeating its start up to a multiple of the
// world size (or cut down to one, with drop_last), then every world_size-th index from `rank`.
// Every sample is seen once per epoch across ranks (padding aside), and the ranks' k-th batches
// of B / W together are the k-th global batch of B.
class DistributedSampler : public Sampler {
 public:
  struct Options {
    int64_t world_size = 1;
    int64_t rank = 0;
    bool shuffle = true;
    int64_t seed = 0;
    bool drop_last = false;
  };
  DistributedSampler(int64_t n, Options options);
  int64_t size() const override { return per_rank_; }
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;

 private:
  int64_t n_;
  Options options_;
  int64_t per_rank_;
};

// Evaluation's share: every world_size-th index from `rank`, unshuffled and unpadded, so that
// counts summed over ranks cover each sample exactly once (shares differ by at most one).
class ShardSampler : public Sampler {
 public:
  ShardSampler(int64_t n, int64_t world_size, int64_t rank);
  int64_t size() const override;
  std::vector<int64_t> epoch_indices(int64_t epoch) const override;

 private:
  int64_t n_;
  int64_t world_size_;
  int64_t rank_;
};

}  // namespace dptrain::data
