#include "kernels/winograd_conv.h"

#include <vector>

#include <ATen/record_function.h>

#include "core/torch_compat.h"
#include "kernels/cpu_kernels.h"
#include "kernels/double_backward.h"
#include "kernels/winograd_kernels.h"

namespace dptrain::kernels {

namespace {

constexpr auto kActivationLayout = torch::MemoryFormat::ChannelsLast;

WinogradShape winograd_shape_of(const torch::Tensor& x) {
  return {x.size(0), x.size(2), x.size(3)};
}

// `x` [N, C, H, W] (channels-last) convolved with the transformed weights to `outputs` channels.
torch::Tensor convolve(const torch::Tensor& x, const std::vector<float>& weights, int64_t outputs,
                       const torch::Tensor& bias) {
  torch::Tensor y = torch::empty({x.size(0), outputs, x.size(2), x.size(3)},
                                 x.options().memory_format(kActivationLayout));
  winograd_convolution(x.data_ptr<float>(), winograd_shape_of(x), x.size(1), weights, outputs,
                       bias.defined() ? bias.data_ptr<float>() : nullptr, y.data_ptr<float>());
  return y;
}

class WinogradConv : public torch::autograd::Function<WinogradConv> {
 public:
  // `bias` is empty for a convolution without one.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    // RECORD_FUNCTION declares the `guard` used below (1.13 to 2.x alike). The three ops record
    // their tensors (here x, weight, bias in aten::convolution's order, no bias the empty
    // stand-in) and their outputs: `dptrain info` counts FLOPs by them, and the tests hold each
    // call to float64's result.
    RECORD_FUNCTION(kWinogradConvOp, std::vector<c10::IValue>({x, weight, bias}));
    const torch::Tensor input = x.contiguous(kActivationLayout);
    const torch::Tensor kernels = weight.contiguous();
    ctx->save_for_backward({input, kernels});
    const bool has_bias = bias.numel() > 0;
    const std::vector<float> weights =
        winograd_weights(kernels.data_ptr<float>(), kernels.size(0), kernels.size(1), false);
    torch::Tensor y =
        convolve(input, weights, kernels.size(0), has_bias ? bias.contiguous() : torch::Tensor());
    record_output(guard, y);
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    refuse_double_backward("the CPU Winograd convolution");
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor grad = grads[0].contiguous(kActivationLayout);
    torch::Tensor x_grad, weight_grad, bias_grad;
    if (ctx->needs_input_grad(0)) {
      RECORD_FUNCTION(kWinogradInputGradOp, std::vector<c10::IValue>({grad, weight}));
      const std::vector<float> turned =
          winograd_weights(weight.data_ptr<float>(), weight.size(0), weight.size(1), true);
      x_grad = convolve(grad, turned, weight.size(1), torch::Tensor());
      record_output(guard, x_grad);
    }
    if (ctx->needs_input_grad(1)) {
      RECORD_FUNCTION(kWinogradWeightGradOp, std::vector<c10::IValue>({grad, x}));
      weight_grad = torch::empty(weight.sizes(), weight.options());
      winograd_weight_grad(x.data_ptr<float>(), grad.data_ptr<float>(), winograd_shape_of(x),
                           x.size(1), weight.size(0), weight_grad.data_ptr<float>());
      record_output(guard, weight_grad);
    }
    // The empty stand-in for no bias needs no gradient: only a real bias can ask for one.
    if (ctx->needs_input_grad(2)) bias_grad = grad.sum({0, 2, 3});
    return {x_grad, weight_grad, bias_grad};
  }
};

}  // namespace

bool winograd_conv_applies(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
  if (core::compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  if (!is_cpu_fp32(x) || !is_cpu_fp32(weight) || x.dim() != 4 || weight.dim() != 4) return false;
  if (bias.defined() && (!is_cpu_fp32(bias) || bias.dim() != 1 || bias.size(0) != weight.size(0))) {
    return false;
  }
  const int64_t inputs = weight.size(1), outputs = weight.size(0);
  return x.size(1) == inputs && weight.size(2) == 3 && weight.size(3) == 3 && x.size(0) > 0 &&
         x.size(2) > 0 && x.size(3) > 0 && inputs > 0 && outputs > 0 &&
         inputs % kWinogradChannelStep == 0 && outputs % kWinogradChannelStep == 0;
}

torch::Tensor winograd_conv(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
  TORCH_CHECK(winograd_conv_applies(x, weight, bias),
              "winograd_conv: shapes or tensors it does not take");
  // LibTorch 1.13's Function::apply cannot take an undefined tensor: no bias is an empty one.
  return WinogradConv::apply(x, weight, bias.defined() ? bias : torch::empty({0}, x.options()));
}

}  // namespace dptrain::kernels
