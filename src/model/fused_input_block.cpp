#include "model/fused_input_block.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include <ATen/record_function.h>

#include "core/torch_compat.h"
#include "model/double_backward.h"
#include "model/vector_clones.h"

namespace dptrain::model {

namespace {

// The inner loops work on kLanes channels at a time, as one vector (GCC's and clang's vector
// extension: one AVX register, two SSE ones; written out because the compilers left the same
// loops over small arrays scalar). Channels are padded to a multiple of kLanes in every buffer of
// the kernel's own, so no loop has a scalar tail.
constexpr int64_t kLanes = 8;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t LaneInts __attribute__((vector_size(kLanes * sizeof(int32_t))));
typedef uint8_t LaneBytes __attribute__((vector_size(kLanes)));

// GCC warns that passing these by value changes with AVX: they are forced inline and file-local,
// so no call between differently compiled code exists (without always_inline an -O0 build would
// call one baseline copy from the AVX clones, each expecting the vector elsewhere).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

template <typename Vector, typename Element>
__attribute__((always_inline)) inline Vector load(const Element* from) {
  Vector v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
template <typename Vector, typename Element>
__attribute__((always_inline)) inline void store(Element* to, const Vector& v) {
  std::memcpy(to, &v, sizeof v);
}

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

// One image: pooled [pooled_h, pooled_w, padded] and, where mask is not null, whether ReLU let
// each pre-activation through, [2 pooled_h, 2 pooled_w, padded]. The pooling adds its 4 inputs
// in avg_pool2d's order and divides by 4 exactly (x 0.25).
DPTRAIN_VECTOR_CLONES
void forward_image(const float* __restrict in, const float* __restrict taps,
                   const float* __restrict bias, const Geometry& g, float* __restrict pooled,
                   uint8_t* __restrict mask) {
  const Lanes zero = {};
  for (int64_t i = 0; i < g.pooled_h; ++i) {
    for (int64_t j = 0; j < g.pooled_w; ++j) {
      for (int64_t cb = 0; cb < g.padded; cb += kLanes) {
        Lanes sum = zero;
        for (int64_t y = 2 * i; y < 2 * i + 2; ++y) {
          for (int64_t x = 2 * j; x < 2 * j + 2; ++x) {
            Lanes pre = load<Lanes>(bias + cb);
            for (int64_t ky = 0; ky < g.kernel; ++ky) {
              for (int64_t kx = 0; kx < g.kernel; ++kx) {
                const float v = in[(y + ky) * g.width + x + kx];
                pre += load<Lanes>(taps + (ky * g.kernel + kx) * g.padded + cb) * v;
              }
            }
            // relu's rule: x <= 0 gives 0, anything else (NaN too) passes.
            const LaneInts blocked = pre <= zero;  // -1 where blocked, else 0
            sum += blocked ? zero : pre;
            if (mask != nullptr) {
              store(mask + (y * 2 * g.pooled_w + x) * g.padded + cb,
                    __builtin_convertvector(blocked + 1, LaneBytes));
            }
          }
        }
        store(pooled + (i * g.pooled_w + j) * g.padded + cb, sum * 0.25f);
      }
    }
  }
}

// One image's share of the gradients: `grad` is the pooled output's gradient already divided by
// 4 ([pooled_h, pooled_w, padded]); adds into taps_grad [k*k, padded] and bias_grad [padded].
DPTRAIN_VECTOR_CLONES
void backward_image(const float* __restrict in, const float* __restrict grad,
                    const uint8_t* __restrict mask, const Geometry& g, float* __restrict taps_grad,
                    float* __restrict bias_grad) {
  const Lanes zero = {};
  for (int64_t y = 0; y < 2 * g.pooled_h; ++y) {
    for (int64_t x = 0; x < 2 * g.pooled_w; ++x) {
      const float* grad_here = grad + ((y / 2) * g.pooled_w + x / 2) * g.padded;
      const uint8_t* mask_here = mask + (y * 2 * g.pooled_w + x) * g.padded;
      for (int64_t cb = 0; cb < g.padded; cb += kLanes) {
        const LaneInts passed = __builtin_convertvector(load<LaneBytes>(mask_here + cb), LaneInts);
        const Lanes through = passed != 0 ? load<Lanes>(grad_here + cb) : zero;
        store(bias_grad + cb, load<Lanes>(bias_grad + cb) + through);
        for (int64_t ky = 0; ky < g.kernel; ++ky) {
          for (int64_t kx = 0; kx < g.kernel; ++kx) {
            const float v = in[(y + ky) * g.width + x + kx];
            float* tap = taps_grad + (ky * g.kernel + kx) * g.padded + cb;
            store(tap, load<Lanes>(tap) + through * v);
          }
        }
      }
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
  if (keep_mask)
    mask = torch::empty({g.images, g.pixels() * g.padded}, x.options().dtype(torch::kUInt8));
  const int64_t image_size = g.height * g.width;
  const int64_t pooled_pixels = g.pooled_h * g.pooled_w;
  at::parallel_for(0, g.images, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded_out(static_cast<size_t>(pooled_pixels * g.padded));
    for (int64_t n = begin; n < end; ++n) {
      forward_image(input.data_ptr<float>() + n * image_size, taps.data_ptr<float>(),
                    bias_padded.data_ptr<float>(), g, padded_out.data(),
                    keep_mask ? mask.data_ptr<uint8_t>() + n * g.pixels() * g.padded : nullptr);
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
    for (int64_t b = begin; b < end; ++b) {
      float* partial = partials.data_ptr<float>() + b * partial_size;
      for (int64_t n = b * kBlockImages; n < std::min(g.images, (b + 1) * kBlockImages); ++n) {
        // avg_pool2d's backward: each of the 4 inputs gets the output's gradient / 4.
        copy_rows(grad.data_ptr<float>() + n * pooled_pixels * g.channels, g.channels,
                  padded_grad.data(), g.padded, pooled_pixels, 0.25f);
        backward_image(input.data_ptr<float>() + n * image_size, padded_grad.data(),
                       mask.data_ptr<uint8_t>() + n * g.pixels() * g.padded, g, partial,
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
  const auto cpu_float = [](const torch::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
           t.layout() == torch::kStrided;
  };
  // Under CPU autocast the convolution is LibTorch's, in bfloat16, as the precision promises.
  if (core::compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  return cpu_float(x) && cpu_float(weight) && cpu_float(bias) && !x.requires_grad() &&
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
  if (guard.isActive() && guard.needsOutputs()) guard.setOutputs(std::vector<c10::IValue>{out});
  return out;
}

}  // namespace dptrain::model
