// The machine's measured peak: how many FLOP/s LibTorch's own kernels reach on this CPU at a
// given thread count, for fp32 and bf16, at sizes large enough to saturate them. This is the
// figure a training run's FLOP rate is a share of (scripts/bench_train.sh prints that share).
// Three kernels are timed, each the median of several calls after a warm-up:
//  - a 3x3 convolution, 256 -> 256 channels on 32 images of 28x28, channels-last (oneDNN);
//  - a matrix product 4096x1024 . 1024x1024 as a 1x1 convolution (oneDNN's GEMM path, which is
//    where dptrain sends dense layers on a CPU);
//  - a 1024^3 product through torch::mm (the system BLAS that LibTorch was linked with; smaller,
//    because Debian's default reference BLAS takes seconds for the larger one).
// The peak is the best of them. Prints one line per kernel and a last line of JSON.
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/timer.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// GFLOP/s of `run`, which does `flops` floating-point operations: the median of `repeats`
// timed calls after two untimed ones (oneDNN compiles its kernels in the first).
template <typename Run>
double gflops(Run run, double flops, int repeats) {
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 2; ++i) run();
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    dptrain::core::Stopwatch watch;
    run();
    seconds.push_back(watch.seconds());
  }
  return flops / median(seconds) / 1e9;
}

double convolution_3x3(torch::Dtype dtype, int repeats) {
  constexpr int64_t kImages = 32, kChannels = 256, kSide = 28;
  const auto options = torch::TensorOptions().dtype(dtype);
  const auto x = torch::randn({kImages, kChannels, kSide, kSide}, options)
                     .contiguous(torch::MemoryFormat::ChannelsLast);
  const auto w = torch::randn({kChannels, kChannels, 3, 3}, options)
                     .contiguous(torch::MemoryFormat::ChannelsLast);
  const double flops = 2.0 * kImages * kSide * kSide * kChannels * kChannels * 9;
  return gflops([&] { return torch::conv2d(x, w, {}, 1, 1); }, flops, repeats);
}

constexpr int64_t kRows = 4096, kInner = 1024, kColumns = 1024;
constexpr double kProductFlops = 2.0 * kRows * kInner * kColumns;

double product_as_convolution(torch::Dtype dtype, int repeats) {
  const auto options = torch::TensorOptions().dtype(dtype);
  const auto a = torch::randn({kRows, kInner, 1, 1}, options);
  const auto b = torch::randn({kColumns, kInner, 1, 1}, options);
  return gflops([&] { return torch::conv2d(a, b); }, kProductFlops, repeats);
}

double product_by_mm(torch::Dtype dtype, int repeats) {
  constexpr int64_t kSide = 1024;
  const auto options = torch::TensorOptions().dtype(dtype);
  const auto a = torch::randn({kSide, kSide}, options);
  const auto b = torch::randn({kSide, kSide}, options);
  return gflops([&] { return torch::mm(a, b); }, 2.0 * kSide * kSide * kSide, repeats);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"LibTorch's measured peak FLOP rate on this CPU, fp32 and bf16"};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int repeats = 5;
  app.add_option("--threads", threads, "intra-op threads")->check(CLI::Range(1, 4096));
  app.add_option("--repeats", repeats, "timed calls per kernel (the median is printed)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(threads);
  std::cout << "threads: " << threads << "\n";
  std::map<std::string, double> peak;
  for (const auto& [name, dtype] :
       {std::pair{"fp32", torch::kFloat32}, std::pair{"bf16", torch::kBFloat16}}) {
    const double conv = convolution_3x3(dtype, repeats);
    const double gemm = product_as_convolution(dtype, repeats);
    const double mm = product_by_mm(dtype, repeats);
    std::cout << name << ": 3x3 convolution " << conv << " GFLOP/s, product as 1x1 convolution "
              << gemm << ", torch::mm " << mm << "\n";
    peak[name] = std::max({conv, gemm, mm});
  }
  std::cout << "{\"threads\": " << threads << ", \"fp32_gflops\": " << peak["fp32"]
            << ", \"bf16_gflops\": " << peak["bf16"] << "}\n";
  return 0;
}
