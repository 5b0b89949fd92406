#include "kernels/cpu_kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <tuple>
#include <vector>

#include <ATen/Parallel.h>

#include "core/torch_compat.h"
#include "kernels/conv_input_grad.h"
#include "kernels/conv_weight_grad.h"
#include "kernels/double_backward.h"

namespace dptrain::kernels {

bool use_onednn_path(const torch::Tensor& t) {
  return t.device().is_cpu() && at::hasMKLDNN();
}

bool is_cpu_fp32(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.layout() == torch::kStrided;
}

namespace {

// oneDNN's inner product through LibTorch's mkldnn_linear ops, which take and give oneDNN tensors
// (a copy each way of the batch's activations). LeNet's 800 -> 128 layer at batch 256, 2 threads
// (the dev machine; docs/performance.md): forward 0.25 ms, weight gradient 0.31, input gradient
// 0.25, against 0.64 + 1.70 ms for the same product as a 1x1 convolution. The input gradient is
// the forward op times the transposed weight: the backward op's generic GEMM took 0.26 to 0.70.
class OneDnnDense : public torch::autograd::Function<OneDnnDense> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    return at::mkldnn_linear(x.to_mkldnn(), weight, bias).to_dense();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    refuse_double_backward("the CPU dense layer");
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor grad = grads[0].contiguous().to_mkldnn();
    torch::Tensor x_grad;
    if (ctx->needs_input_grad(0)) {
      x_grad = at::mkldnn_linear(grad, weight.t().contiguous(), {}).to_dense();
    }
    torch::Tensor weight_grad, bias_grad;
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      std::tie(weight_grad, bias_grad) =
          at::mkldnn_linear_backward_weights(grad, x.to_mkldnn(), weight, /*bias_defined=*/true);
    }
    return {x_grad, weight_grad, bias_grad};
  }
};

bool onednn_dense_applies(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
  // Under CPU autocast the product is LibTorch's 1x1 convolution, in bfloat16 as the precision
  // promises.
  if (!at::hasMKLDNN() || core::compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  return is_cpu_fp32(x) && is_cpu_fp32(weight) && is_cpu_fp32(bias) && x.dim() == 2 &&
         weight.dim() == 2 && bias.dim() == 1 && x.size(1) == weight.size(1) &&
         bias.size(0) == weight.size(0) && x.size(0) > 0;
}

// A stride-1 unpadded convolution on channels-last tensors whose gradients are dptrain's own
// kernels (kernels/conv_input_grad.h and kernels/conv_weight_grad.h say why); the forward pass is
// oneDNN's, as torch::conv2d's, and so are the gradients of shapes the kernels do not take.
class ConvOwnGrads : public torch::autograd::Function<ConvOwnGrads> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    return torch::conv2d(x, weight.contiguous(torch::MemoryFormat::ChannelsLast), bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    refuse_double_backward("the CPU convolution");
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor grad = grads[0].contiguous(torch::MemoryFormat::ChannelsLast);
    const bool needs_x = ctx->needs_input_grad(0);
    const bool needs_weight = ctx->needs_input_grad(1), needs_bias = ctx->needs_input_grad(2);
    const bool own_x = needs_x && conv_input_grad_applies(grad, weight, x.sizes());
    const bool own_params =
        (needs_weight || needs_bias) && conv_weight_grad_applies(grad, x, weight);
    torch::Tensor x_grad, weight_grad, bias_grad;
    if (own_x) x_grad = conv_input_grad(grad, weight, x.sizes());
    if (own_params) std::tie(weight_grad, bias_grad) = conv_weight_grad(grad, x, weight);
    // What the kernels do not take (an image too large for them) is oneDNN's.
    const std::array<bool, 3> rest = {needs_x && !own_x, needs_weight && !own_params,
                                      needs_bias && !own_params};
    if (rest[0] || rest[1] || rest[2]) {
      const int64_t bias_size = weight.size(0);
      auto [onednn_x, onednn_weight, onednn_bias] = at::convolution_backward(
          grad, x, weight.contiguous(torch::MemoryFormat::ChannelsLast), at::IntArrayRef(bias_size),
          /*stride=*/{1, 1}, /*padding=*/{0, 0}, /*dilation=*/{1, 1}, /*transposed=*/false,
          /*output_padding=*/{0, 0}, /*groups=*/1, rest);
      if (rest[0]) x_grad = onednn_x;
      if (rest[1]) weight_grad = onednn_weight;
      if (rest[2]) bias_grad = onednn_bias;
    }
    if (!needs_weight) weight_grad = torch::Tensor();
    if (!needs_bias) bias_grad = torch::Tensor();
    return {x_grad, weight_grad, bias_grad};
  }
};

bool own_grads_apply(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  if (!at::hasMKLDNN() || core::compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  return is_cpu_fp32(x) && is_cpu_fp32(weight) && is_cpu_fp32(bias) && x.dim() == 4 &&
         weight.dim() == 4 && bias.dim() == 1 && x.size(1) == weight.size(1) &&
         bias.size(0) == weight.size(0) && x.size(0) > 0 && x.size(2) >= weight.size(2) &&
         x.size(3) >= weight.size(3) && weight.numel() > 0;
}

}  // namespace

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& weight,
                    const torch::Tensor& bias) {
  if (onednn_dense_applies(x, weight, bias)) {
    return OneDnnDense::apply(x.contiguous(), weight.contiguous(), bias.contiguous());
  }
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
  if (own_grads_apply(x, weight, bias)) {
    return ConvOwnGrads::apply(x.contiguous(kLast), weight, bias);
  }
  return torch::conv2d(x.contiguous(kLast), weight.contiguous(kLast), bias);
}

void record_output(at::RecordFunction& guard, const torch::Tensor& output) {
  if (guard.isActive() && guard.needsOutputs()) guard.setOutputs(std::vector<c10::IValue>{output});
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

}  // namespace dptrain::kernels
