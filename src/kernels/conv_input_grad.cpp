#include "kernels/conv_input_grad.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "kernels/conv_geometry.h"
#include "kernels/cpu_kernels.h"
#include "kernels/lanes.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {

namespace {

// Three output pixels at a time share each weight load, with up to four vectors of the strip each:
// 12 accumulators, 3 broadcasts and the weight vector fill AVX2's 16 registers, 7 loads for 12
// FMAs. Measured on the AVX2 dev machine (LeNet's conv2 at batch 256, 2 threads): 6.9 ms, against
// 9.5 for one pixel with the whole strip of 13 vectors in registers (a load per FMA), 10.5 for two
// pixels (GCC then folded every weight load into its FMA) and 11.3 for oneDNN's.
constexpr int64_t kPixels = 3;
constexpr int64_t kMaxVectors = 4;

// The kernel has no blocking over an image's pixels: each kernel row and chunk sweeps the image's
// sums once more, which stay in the L2 cache up to this size (256 KB). Larger images are left to
// oneDNN; the speed above was measured at LeNet's 3,380 floats only.
constexpr int64_t kMaxImageFloats = 64 * 1024;

// An image's sums, with room for the padding of the last pixel's strip.
int64_t scratch_floats(const ConvGeometry& g) {
  return g.image_floats() + g.padded;
}

// NP output pixels' gradients (out_channels floats each) times NV vectors of packed weight rows,
// summed over the output channels in registers and added to the input strips at to[p], pixel by
// pixel in order. `last_lanes` keeps the lanes of the last vector that belong to the strip: the
// others, over the weights' zero padding, hold g x 0, an exact +0 for a finite g but NaN for an
// infinite one, which must not reach the next pixel's channels.
template <int NP, int NV>
__attribute__((always_inline)) inline void add_strips(const float* const* grad,
                                                      const float* __restrict rows,
                                                      int64_t row_stride, int64_t out_channels,
                                                      const LaneInts& last_lanes,
                                                      float* const* to) {
  Lanes sum[NP][NV] = {};
  for (int64_t o = 0; o < out_channels; ++o) {
    const float* row = rows + o * row_stride;
    float g[NP];
    for (int p = 0; p < NP; ++p) g[p] = grad[p][o];
    for (int v = 0; v < NV; ++v) {
      const Lanes w = load<Lanes>(row + v * kLanes);
      for (int p = 0; p < NP; ++p) sum[p][v] += g[p] * w;
    }
  }
  for (int p = 0; p < NP; ++p) {
    // A cast between vector types reinterprets the bits.
    sum[p][NV - 1] = (Lanes)((LaneInts)sum[p][NV - 1] & last_lanes);
    for (int v = 0; v < NV; ++v) {
      store(to[p] + v * kLanes, load<Lanes>(to[p] + v * kLanes) + sum[p][v]);
    }
  }
}

// add_strips<NP, nv> for a run-time nv in [1, NV]: a chain of compile-time cases, inlined into
// the caller's clone (a generic lambda here compiled the vector loops for the baseline CPU).
template <int NP, int NV>
__attribute__((always_inline)) inline void add_strips_of(int64_t nv, const float* const* grad,
                                                         const float* rows, int64_t row_stride,
                                                         int64_t out_channels,
                                                         const LaneInts& last_lanes,
                                                         float* const* to) {
  if constexpr (NV > 1) {
    if (nv < NV) {
      return add_strips_of<NP, NV - 1>(nv, grad, rows, row_stride, out_channels, last_lanes, to);
    }
  }
  add_strips<NP, NV>(grad, rows, row_stride, out_channels, last_lanes, to);
}

// One image: `grad` [out_h][out_w][out_channels], `sums` [in_h][in_w][in_channels] (+ padding),
// zeroed here. Kernel row by kernel row and a chunk of the strip at a time, so that the weight
// rows in use (out_channels x the chunk) stay in the L1 cache over the image's pixels.
DPTRAIN_VECTOR_CLONES
void image_input_grad(const float* __restrict grad, const float* __restrict packed,
                      const ConvGeometry& g, float* __restrict sums) {
  std::fill(sums, sums + scratch_floats(g), 0.0f);
  const int64_t chunks = (g.vectors() + kMaxVectors - 1) / kMaxVectors;
  LaneInts all_lanes, strip_end;  // all bits, or those of the lanes before the strip's end
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    all_lanes[lane] = -1;
    strip_end[lane] = (g.padded - kLanes + lane < g.strip) ? -1 : 0;
  }
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    const float* kernel_row = packed + g.packed_row(kh, 0);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      // Chunks of near-equal size: 13 vectors are 3 + 3 + 3 + 4, not 4 + 4 + 4 + 1.
      const int64_t first = chunk * g.vectors() / chunks;
      const int64_t nv = (chunk + 1) * g.vectors() / chunks - first;
      const float* rows = kernel_row + first * kLanes;
      const LaneInts& last_lanes = chunk + 1 < chunks ? all_lanes : strip_end;
      const int64_t pixels = g.pixels();
      for (int64_t p = 0; p < pixels; p += kPixels) {
        const float* pixel_grad[kPixels];
        float* to[kPixels];
        const int64_t here = std::min(kPixels, pixels - p);
        for (int64_t i = 0; i < here; ++i) {
          const int64_t oh = (p + i) / g.out_w, ow = (p + i) % g.out_w;
          pixel_grad[i] = grad + (p + i) * g.out_channels;
          to[i] = sums + g.strip_at(oh, ow, kh) + first * kLanes;
        }
        if (here == kPixels) {
          add_strips_of<kPixels, kMaxVectors>(nv, pixel_grad, rows, g.padded, g.out_channels,
                                              last_lanes, to);
        } else {  // the image's last pixels, one at a time
          for (int64_t i = 0; i < here; ++i) {
            add_strips_of<1, kMaxVectors>(nv, pixel_grad + i, rows, g.padded, g.out_channels,
                                          last_lanes, to + i);
          }
        }
      }
    }
  }
}

}  // namespace

bool conv_input_grad_applies(const torch::Tensor& grad_output, const torch::Tensor& weight,
                             torch::IntArrayRef input_size) {
  if (!is_cpu_fp32(grad_output) || !is_cpu_fp32(weight) || grad_output.dim() != 4 ||
      weight.dim() != 4 || input_size.size() != 4) {
    return false;
  }
  return grad_output.size(1) == weight.size(0) && input_size[0] == grad_output.size(0) &&
         input_size[1] == weight.size(1) &&
         input_size[2] == grad_output.size(2) + weight.size(2) - 1 &&
         input_size[3] == grad_output.size(3) + weight.size(3) - 1 && weight.numel() > 0 &&
         input_size[1] * input_size[2] * input_size[3] <= kMaxImageFloats;
}

torch::Tensor conv_input_grad(const torch::Tensor& grad_output, const torch::Tensor& weight,
                              torch::IntArrayRef input_size) {
  TORCH_CHECK(conv_input_grad_applies(grad_output, weight, input_size),
              "conv_input_grad: shapes or tensors it does not take");
  RECORD_FUNCTION(kConvInputGradOp, std::vector<c10::IValue>({grad_output, weight}));
  const ConvGeometry g = conv_geometry(grad_output, weight);
  const torch::Tensor grad = grad_output.contiguous(torch::MemoryFormat::ChannelsLast);
  const std::vector<float> packed = pack_conv_weights(weight, g);
  torch::Tensor input_grad = torch::empty(
      input_size, grad_output.options().memory_format(torch::MemoryFormat::ChannelsLast));
  const float* grad_data = grad.data_ptr<float>();
  float* out = input_grad.data_ptr<float>();
  at::parallel_for(0, g.images, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> sums(scratch_floats(g));  // zeroed per image
    for (int64_t n = begin; n < end; ++n) {
      image_input_grad(grad_data + n * g.pixels() * g.out_channels, packed.data(), g, sums.data());
      std::copy(sums.begin(), sums.begin() + g.image_floats(), out + n * g.image_floats());
    }
  });
  return input_grad;
}

}  // namespace dptrain::kernels
