#include "kernels/fused_input_block.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ATen/record_function.h>

#include "core/torch_compat.h"
#include "kernels/cpu_kernels.h"
#include "kernels/double_backward.h"
#include "kernels/lanes.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {

namespace {

// The inner loops work on kLanes channels at a time, as one vector (kernels/lanes.h). Channels are
// padded to a multiple of kLanes in every buffer of the kernel's own, so no loop has a scalar tail.
// ReLU's mask keeps one bit per pre-activation: a byte per kLanes channels (lane i is bit i) at
// each of a pooling window's 4 positions, the window's 4 bytes side by side.
constexpr LaneInts kLaneBits = {1, 2, 4, 8, 16, 32, 64, 128};
static_assert(kLanes == 8, "a mask byte holds kLanes bits");

// Images per block of the weight gradient's partial sums: fixed, so that the order of the sums,
// and with it every bit of the result, is the same at any thread count.
constexpr int64_t kBlockImages = 8;

struct Geometry {
  int64_t images, height, width;  // the input
  int64_t kernel, channels;       // kernel x kernel taps, output channels
  int64_t padded;                 // channels rounded up to kLanes
  int64_t pooled_h, pooled_w;     // the output; the convolution covers 2 x that (the rest is
                                  // cut off by the pooling, as avg_pool2d floors)
  int64_t taps() const { return kernel * kernel; }
  int64_t pixels() const { return 4 * pooled_h * pooled_w; }
  int64_t blocks() const { return padded / kLanes; }
  int64_t mask_bytes() const { return pixels() * blocks(); }  // an image's
  // Where pooled output (i, j)'s window keeps channel block `block`'s 4 mask bytes.
  int64_t mask_offset(int64_t i, int64_t j, int64_t block) const {
    return ((i * pooled_w + j) * blocks() + block) * 4;
  }
};

Geometry geometry_of(const torch::Tensor& x, int64_t channels, int64_t kernel) {
  Geometry g;
  g.images = x.size(0);
  g.height = x.size(2);
  g.width = x.size(3);
  g.kernel = kernel;
  g.channels = channels;
  g.padded = (g.channels + kLanes - 1) / kLanes * kLanes;
  g.pooled_h = (g.height - g.kernel + 1) / 2;
  g.pooled_w = (g.width - g.kernel + 1) / 2;
  return g;
}

// weight [C, 1, k, k] -> [k*k, padded]: a tap's channels side by side, zeros past C.
torch::Tensor taps_by_channel(const torch::Tensor& weight, const Geometry& g) {
  torch::Tensor taps = torch::zeros({g.taps(), g.padded}, weight.options());
  taps.narrow(1, 0, g.channels).copy_(weight.reshape({g.channels, g.taps()}).t());
  return taps;
}

torch::Tensor padded_bias(const torch::Tensor& bias, const Geometry& g) {
  torch::Tensor padded = torch::zeros({g.padded}, bias.options());
  padded.narrow(0, 0, g.channels).copy_(bias);
  return padded;
}

// The kernels take up to kGroupBlocks blocks of kLanes channels at a time and keep NB x 4
// accumulators (4 convolution outputs, or 4 pixels' sums): each weight or gradient vector loaded
// serves 4 of them, and consecutive FMAs do not wait on each other (an FMA's latency is 4 cycles;
// one chain of dependent FMAs ran at an eighth of the core's rate). AVX-512's 32 registers hold
// them all; AVX2's 16 spill some at 4 blocks (LeNet has 3), the baseline's SSE more.
constexpr int64_t kGroupBlocks = 4;

// One image's channels [cb, cb + NB kLanes) of the forward pass (see forward_image).
template <int NB>
__attribute__((always_inline)) inline void forward_group(
    const float* __restrict in, const float* __restrict taps, const float* __restrict bias,
    const Geometry& g, int64_t cb, float* __restrict pooled, uint8_t* __restrict mask) {
  const Lanes zero = {};
  for (int64_t i = 0; i < g.pooled_h; ++i) {
    for (int64_t j = 0; j < g.pooled_w; ++j) {
      // The pooling window's 4 pre-activations, in avg_pool2d's order: (2i, 2j), (2i, 2j + 1),
      // (2i + 1, 2j), (2i + 1, 2j + 1). Each is the bias plus the taps in order, as before.
      Lanes pre[4][NB];
      for (int p = 0; p < 4; ++p)
        for (int b = 0; b < NB; ++b) pre[p][b] = load<Lanes>(bias + cb + b * kLanes);
      const float* corner = in + 2 * i * g.width + 2 * j;
      for (int64_t ky = 0; ky < g.kernel; ++ky) {
        for (int64_t kx = 0; kx < g.kernel; ++kx) {
          const float* tap = taps + (ky * g.kernel + kx) * g.padded + cb;
          const float* at = corner + ky * g.width + kx;
          const float v[4] = {at[0], at[1], at[g.width], at[g.width + 1]};
          for (int b = 0; b < NB; ++b) {
            const Lanes w = load<Lanes>(tap + b * kLanes);
            for (int p = 0; p < 4; ++p) pre[p][b] += w * v[p];
          }
        }
      }
      for (int b = 0; b < NB; ++b) {
        Lanes sum = zero;
        LaneInts bits = {};  // position p's mask in bits 8p to 8p + 7
        for (int p = 0; p < 4; ++p) {
          // relu's rule: x <= 0 gives 0, anything else (NaN too) passes.
          const LaneInts blocked = pre[p][b] <= zero;  // -1 where blocked, else 0
          sum += blocked ? zero : pre[p][b];
          bits |= ~blocked & (kLaneBits << (8 * p));
        }
        store(pooled + (i * g.pooled_w + j) * g.padded + cb + b * kLanes, sum * 0.25f);
        if (mask != nullptr) {
          // One reduction across the lanes for all 4 positions (one each cost as much as the
          // taps' FMAs).
          uint32_t word = 0;
          for (int lane = 0; lane < kLanes; ++lane) word |= static_cast<uint32_t>(bits[lane]);
          uint8_t* here = mask + g.mask_offset(i, j, cb / kLanes + b);
          for (int p = 0; p < 4; ++p) here[p] = static_cast<uint8_t>(word >> (8 * p));
        }
      }
    }
  }
}

// Up to kGroupBlocks blocks from block `first` on. The groups are dispatched by a switch in each
// cloned function, not through a lambda: a lambda is a function of its own, compiled for the
// baseline target, and the vector loops inside it ran at half the speed of the old scalar ones.
inline int64_t group_blocks(const Geometry& g, int64_t first) {
  return std::min(kGroupBlocks, g.blocks() - first);
}

// One image: pooled [pooled_h, pooled_w, padded] and, where mask is not null, whether ReLU let
// each pre-activation through, [pooled_h, pooled_w, padded / kLanes, 4] bytes. The pooling adds
// its 4 inputs in avg_pool2d's order and divides by 4 exactly (x 0.25).
DPTRAIN_VECTOR_CLONES
void forward_image(const float* __restrict in, const float* __restrict taps,
                   const float* __restrict bias, const Geometry& g, float* __restrict pooled,
                   uint8_t* __restrict mask) {
  for (int64_t first = 0; first < g.blocks(); first += kGroupBlocks) {
    const int64_t cb = first * kLanes;
    switch (group_blocks(g, first)) {
      case 1:
        forward_group<1>(in, taps, bias, g, cb, pooled, mask);
        break;
      case 2:
        forward_group<2>(in, taps, bias, g, cb, pooled, mask);
        break;
      case 3:
        forward_group<3>(in, taps, bias, g, cb, pooled, mask);
        break;
      default:
        forward_group<4>(in, taps, bias, g, cb, pooled, mask);
        break;
    }
  }
}

// One image's share of the gradients of channels [cb, cb + NB kLanes), pooled row by pooled row:
// first the gradient that reaches each of the row's 2 x 2 pooled_w pre-activations (`through`,
// [2 pooled_w x 2, NB kLanes]: the pooled gradient where ReLU passed, else 0), then for each tap
// its sum times the input under it, over 4 pixels at a time in 4 x NB accumulators.
template <int NB>
__attribute__((always_inline)) inline void backward_group(
    const float* __restrict in, const float* __restrict grad, const uint8_t* __restrict mask,
    const Geometry& g, int64_t cb, float* __restrict through, float* __restrict taps_grad,
    float* __restrict bias_grad) {
  const Lanes zero = {};
  const int64_t row = 2 * g.pooled_w;  // pre-activations in a row the pooling covers
  constexpr int64_t kWidth = NB * kLanes;
  for (int64_t i = 0; i < g.pooled_h; ++i) {
    Lanes bias_sum[NB];
    for (int b = 0; b < NB; ++b) bias_sum[b] = zero;
    for (int64_t q = 0; q < 2 * row; ++q) {
      const int64_t x = q % row;
      const float* grad_here = grad + (i * g.pooled_w + x / 2) * g.padded + cb;
      const int64_t position = 2 * (q / row) + x % 2;  // in its pooling window
      for (int b = 0; b < NB; ++b) {
        const uint8_t bits = mask[g.mask_offset(i, x / 2, cb / kLanes + b) + position];
        const LaneInts passed = (LaneInts{} + bits) & kLaneBits;
        const Lanes t = passed != 0 ? load<Lanes>(grad_here + b * kLanes) : zero;
        store(through + q * kWidth + b * kLanes, t);
        bias_sum[b] += t;
      }
    }
    for (int b = 0; b < NB; ++b) {
      float* bias_here = bias_grad + cb + b * kLanes;
      store(bias_here, load<Lanes>(bias_here) + bias_sum[b]);
    }
    for (int64_t ky = 0; ky < g.kernel; ++ky) {
      for (int64_t kx = 0; kx < g.kernel; ++kx) {
        // Input pixel (2i + r + ky, x + kx) lies under pre-activation (2i + r, x) for this tap.
        const float* top = in + (2 * i + ky) * g.width + kx;
        Lanes acc[4][NB];
        for (int u = 0; u < 4; ++u)
          for (int b = 0; b < NB; ++b) acc[u][b] = zero;
        for (int64_t x = 0; x < row; x += 2) {  // row is even: 2 columns of both rows at a time
          const float v[4] = {top[x], top[x + 1], top[g.width + x], top[g.width + x + 1]};
          const int64_t q[4] = {x, x + 1, row + x, row + x + 1};
          for (int u = 0; u < 4; ++u)
            for (int b = 0; b < NB; ++b)
              acc[u][b] += load<Lanes>(through + q[u] * kWidth + b * kLanes) * v[u];
        }
        float* tap = taps_grad + (ky * g.kernel + kx) * g.padded + cb;
        for (int b = 0; b < NB; ++b) {
          const Lanes sum = (acc[0][b] + acc[1][b]) + (acc[2][b] + acc[3][b]);
          store(tap + b * kLanes, load<Lanes>(tap + b * kLanes) + sum);
        }
      }
    }
  }
}

// One image's share of the gradients: `grad` is the pooled output's gradient already divided by
// 4 ([pooled_h, pooled_w, padded]); adds into taps_grad [k*k, padded] and bias_grad [padded].
// `through` is scratch of 4 pooled_w x kGroupBlocks x kLanes floats.
DPTRAIN_VECTOR_CLONES
void backward_image(const float* __restrict in, const float* __restrict grad,
                    const uint8_t* __restrict mask, const Geometry& g, float* __restrict through,
                    float* __restrict taps_grad, float* __restrict bias_grad) {
  for (int64_t first = 0; first < g.blocks(); first += kGroupBlocks) {
    const int64_t cb = first * kLanes;
    switch (group_blocks(g, first)) {
      case 1:
        backward_group<1>(in, grad, mask, g, cb, through, taps_grad, bias_grad);
        break;
      case 2:
        backward_group<2>(in, grad, mask, g, cb, through, taps_grad, bias_grad);
        break;
      case 3:
        backward_group<3>(in, grad, mask, g, cb, through, taps_grad, bias_grad);
        break;
      default:
        backward_group<4>(in, grad, mask, g, cb, through, taps_grad, bias_grad);
        break;
    }
  }
}

// Copies `rows` rows of `from_width` floats into rows of `to_width`, times `scale`, zero past the
// narrower width: between the output's C channels a pixel and the kernel's padded ones.
void copy_rows(const float* from, int64_t from_width, float* to, int64_t to_width, int64_t rows,
               float scale) {
  const int64_t common = std::min(from_width, to_width);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < common; ++c) to[r * to_width + c] = from[r * from_width + c] * scale;
    for (int64_t c = common; c < to_width; ++c) to[r * to_width + c] = 0.0f;
  }
}

// The pooled output [N, C, pooled_h, pooled_w] in channels-last, and the ReLU mask when asked.
std::pair<torch::Tensor, torch::Tensor> run_forward(const torch::Tensor& x,
                                                    const torch::Tensor& weight,
                                                    const torch::Tensor& bias, bool keep_mask) {
  const Geometry g = geometry_of(x, weight.size(0), weight.size(2));
  const torch::Tensor input = x.contiguous();
  const torch::Tensor taps = taps_by_channel(weight, g);
  const torch::Tensor bias_padded = padded_bias(bias, g);
  torch::Tensor pooled = torch::empty({g.images, g.channels, g.pooled_h, g.pooled_w},
                                      x.options().memory_format(torch::MemoryFormat::ChannelsLast));
  torch::Tensor mask;
  if (keep_mask) mask = torch::empty({g.images, g.mask_bytes()}, x.options().dtype(torch::kUInt8));
  const int64_t image_size = g.height * g.width;
  const int64_t pooled_pixels = g.pooled_h * g.pooled_w;
  at::parallel_for(0, g.images, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded_out(static_cast<size_t>(pooled_pixels * g.padded));
    for (int64_t n = begin; n < end; ++n) {
      forward_image(input.data_ptr<float>() + n * image_size, taps.data_ptr<float>(),
                    bias_padded.data_ptr<float>(), g, padded_out.data(),
                    keep_mask ? mask.data_ptr<uint8_t>() + n * g.mask_bytes() : nullptr);
      copy_rows(padded_out.data(), g.padded,
                pooled.data_ptr<float>() + n * pooled_pixels * g.channels, g.channels,
                pooled_pixels, 1.0f);
    }
  });
  return {pooled, mask};
}

// The gradients of weight and bias from the pooled output's gradient.
std::pair<torch::Tensor, torch::Tensor> run_backward(const torch::Tensor& x,
                                                     const torch::Tensor& mask,
                                                     const torch::Tensor& pooled_grad,
                                                     int64_t channels, int64_t kernel) {
  const Geometry g = geometry_of(x, channels, kernel);
  const torch::Tensor input = x.contiguous();
  // [N, C, h, w] channels-last is [N, h, w, C] in memory.
  const torch::Tensor grad = pooled_grad.contiguous(torch::MemoryFormat::ChannelsLast);
  const int64_t blocks = (g.images + kBlockImages - 1) / kBlockImages;
  const int64_t partial_size = (g.taps() + 1) * g.padded;  // taps, then the bias
  torch::Tensor partials = torch::zeros({blocks, partial_size}, x.options());
  const int64_t image_size = g.height * g.width;
  const int64_t pooled_pixels = g.pooled_h * g.pooled_w;
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded_grad(static_cast<size_t>(pooled_pixels * g.padded));
    std::vector<float> through(static_cast<size_t>(4 * g.pooled_w * kGroupBlocks * kLanes));
    for (int64_t b = begin; b < end; ++b) {
      float* partial = partials.data_ptr<float>() + b * partial_size;
      for (int64_t n = b * kBlockImages; n < std::min(g.images, (b + 1) * kBlockImages); ++n) {
        // avg_pool2d's backward: each of the 4 inputs gets the output's gradient / 4.
        copy_rows(grad.data_ptr<float>() + n * pooled_pixels * g.channels, g.channels,
                  padded_grad.data(), g.padded, pooled_pixels, 0.25f);
        backward_image(input.data_ptr<float>() + n * image_size, padded_grad.data(),
                       mask.data_ptr<uint8_t>() + n * g.mask_bytes(), g, through.data(), partial,
                       partial + g.taps() * g.padded);
      }
    }
  });
  // Block by block, in order: the same sums whatever the threads did.
  torch::Tensor total = torch::zeros({partial_size}, x.options());
  float* sum = total.data_ptr<float>();
  for (int64_t b = 0; b < blocks; ++b) {
    const float* partial = partials.data_ptr<float>() + b * partial_size;
    for (int64_t i = 0; i < partial_size; ++i) sum[i] += partial[i];
  }
  const torch::Tensor taps_grad =
      total.narrow(0, 0, g.taps() * g.padded).view({g.taps(), g.padded});
  const torch::Tensor weight_grad = taps_grad.narrow(1, 0, g.channels)
                                        .t()
                                        .reshape({g.channels, 1, g.kernel, g.kernel})
                                        .contiguous();
  const torch::Tensor bias_grad = total.narrow(0, g.taps() * g.padded, g.channels).clone();
  return {weight_grad, bias_grad};
}

class FusedInputBlock : public torch::autograd::Function<FusedInputBlock> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    auto [pooled, mask] = run_forward(x, weight, bias, /*keep_mask=*/true);
    ctx->save_for_backward({x, mask});
    // Only the sizes: saving the weight itself would forbid the optimizer's in-place update
    // between a forward and its backward.
    ctx->saved_data["channels"] = weight.size(0);
    ctx->saved_data["kernel"] = weight.size(2);
    return pooled;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    refuse_double_backward("LeNet's fused input block");
    const auto saved = ctx->get_saved_variables();
    auto [weight_grad, bias_grad] =
        run_backward(saved[0], saved[1], grads[0], ctx->saved_data["channels"].toInt(),
                     ctx->saved_data["kernel"].toInt());
    return {torch::Tensor(), weight_grad, bias_grad};
  }
};

}  // namespace

bool fused_input_block_applies(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
  // Under CPU autocast the convolution is LibTorch's, in bfloat16, as the precision promises.
  if (core::compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  return is_cpu_fp32(x) && is_cpu_fp32(weight) && is_cpu_fp32(bias) && !x.requires_grad() &&
         x.dim() == 4 && x.size(1) == 1 && weight.dim() == 4 && weight.size(1) == 1 &&
         weight.size(2) == weight.size(3) && bias.dim() == 1 && bias.size(0) == weight.size(0) &&
         x.size(2) - weight.size(2) + 1 >= 2 && x.size(3) - weight.size(3) + 1 >= 2;
}

torch::Tensor fused_input_block(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias) {
  // RECORD_FUNCTION declares the `guard` used below (1.13 to 2.x alike).
  RECORD_FUNCTION(kFusedInputBlockOp, std::vector<c10::IValue>({x, weight, bias}));
  const bool differentiate =
      torch::GradMode::is_enabled() && (weight.requires_grad() || bias.requires_grad());
  torch::Tensor out;
  if (differentiate) {
    out = FusedInputBlock::apply(x, weight, bias);
  } else {
    torch::NoGradGuard no_grad;
    out = run_forward(x, weight.detach(), bias.detach(), /*keep_mask=*/false).first;
  }
  record_output(guard, out);
  return out;
}

}  // namespace dptrain::kernels
