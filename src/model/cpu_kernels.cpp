#include "model/cpu_kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <ATen/Parallel.h>

namespace dptrain::model {

bool use_onednn_path(const torch::Tensor& t) {
  return t.device().is_cpu() && at::hasMKLDNN();
}

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& weight,
                    const torch::Tensor& bias) {
  if (!use_onednn_path(x)) return torch::linear(x, weight, bias);
  const int64_t n = x.size(0);
  const int64_t out = weight.size(0);
  const int64_t in = weight.size(1);
  return torch::conv2d(x.reshape({n, in, 1, 1}), weight.view({out, in, 1, 1}), bias).view({n, out});
}

torch::Tensor conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  if (!use_onednn_path(x)) return torch::conv2d(x, weight, bias);
  constexpr auto kLast = torch::MemoryFormat::ChannelsLast;
  return torch::conv2d(x.contiguous(kLast), weight.contiguous(kLast), bias);
}

int own_kernel_threads() {
  // One item per thread: each thread that takes part sets its own bit.
  const int64_t threads = std::min(at::get_num_threads(), 64);
  std::atomic<uint64_t> seen{0};
  at::parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    seen.fetch_or(uint64_t{1} << (at::get_thread_num() % 64));
  });
  return __builtin_popcountll(seen.load());
}

}  // namespace dptrain::model
