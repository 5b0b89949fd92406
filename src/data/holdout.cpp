#include "data/holdout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "data/subset.h"

namespace dptrain::data {

HeldOut hold_out(const std::shared_ptr<const Dataset>& train, double fraction, int64_t seed) {
  const int64_t n = train->size();
  const auto n_val = static_cast<int64_t>(std::llround(fraction * static_cast<double>(n)));
  if (n_val < 1 || n_val >= n) {
    throw core::Error(
        core::ErrorCode::kConfig,
        fmt::format("data.val_split: {:g} of {} training samples leaves ", fraction, n) +
            (n_val < 1 ? std::string("no validation set") : "nothing to train on"),
        "use a fraction that holds out at least one sample and keeps at least one");
  }
  // Salted, so that the hold-out is not the permutation the sampler draws for epoch 0 (seed + 0).
  auto generator =
      at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) ^ 0x9E3779B97F4A7C15ULL);
  const torch::Tensor perm = torch::randperm(n, generator, torch::kInt64);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<int64_t> val(p, p + n_val);
  std::vector<int64_t> rest(p + n_val, p + n);
  std::sort(val.begin(), val.end());
  std::sort(rest.begin(), rest.end());
  return {std::make_shared<const SubsetDataset>(train, std::move(rest)),
          std::make_shared<const SubsetDataset>(train, std::move(val))};
}

}  // namespace dptrain::data
