#include "kernels/conv_weight_grad.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "kernels/conv_geometry.h"
#include "kernels/conv_input_grad.h"
#include "kernels/cpu_kernels.h"
#include "kernels/lanes.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {

namespace {

// A tile of 3 output channels x up to 4 vectors of the strip: 12 accumulators, 3 broadcasts of
// the gradient and one input vector at a time fill AVX2's 16 registers, 7 loads for 12 FMAs (the
// input gradient's kernel, kernels/conv_input_grad.cpp, with the roles of weight and input
// swapped).
constexpr int64_t kTileChannels = 3;
constexpr int64_t kMaxVectors = 4;
// Images per block of partial sums: fixed, so that the order of the sums, and with it every bit
// of the result, is the same at any thread count.
constexpr int64_t kBlockImages = 8;
// Blocks whose partial sums are held at once, at least: 32 blocks of conv2 are 3.3 MB, and a batch
// of 256 is one group. Rounded up to a multiple of the thread count, so that every thread has a
// block in each group.
constexpr int64_t kGroupBlocks = 32;

// One image's share of the tile of NO output channels from o and NV vectors of the strip from
// `first`, under kernel row kh, added to the block's partial sums `tile` (packed layout). `grad`
// is the image's [pixels][out_channels], `in` its [in_h][in_w][in_channels] with whole vectors
// readable after the last strip (what the lanes after a strip read lands in the packed layout's
// padding, which unpacking drops).
template <int NO, int NV>
__attribute__((always_inline)) inline void add_tile(const float* __restrict grad,
                                                    const float* __restrict in,
                                                    const ConvGeometry& g, int64_t kh, int64_t o,
                                                    int64_t first, float* __restrict partial) {
  Lanes sum[NO][NV];
  for (int c = 0; c < NO; ++c) {
    for (int v = 0; v < NV; ++v) {
      sum[c][v] = load<Lanes>(partial + g.packed_row(kh, o + c) + (first + v) * kLanes);
    }
  }
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const float* pixel_grad = grad + (oh * g.out_w + ow) * g.out_channels + o;
      const float* strip = in + g.strip_at(oh, ow, kh) + first * kLanes;
      float gs[NO];
      for (int c = 0; c < NO; ++c) gs[c] = pixel_grad[c];
      for (int v = 0; v < NV; ++v) {
        const Lanes x = load<Lanes>(strip + v * kLanes);
        for (int c = 0; c < NO; ++c) sum[c][v] += gs[c] * x;
      }
    }
  }
  for (int c = 0; c < NO; ++c) {
    for (int v = 0; v < NV; ++v) {
      store(partial + g.packed_row(kh, o + c) + (first + v) * kLanes, sum[c][v]);
    }
  }
}

// add_tile<NO, nv> for a run-time nv in [1, NV], inlined into the caller's clone.
template <int NO, int NV>
__attribute__((always_inline)) inline void add_tile_of(int64_t nv, const float* grad,
                                                       const float* in, const ConvGeometry& g,
                                                       int64_t kh, int64_t o, int64_t first,
                                                       float* partial) {
  if constexpr (NV > 1) {
    if (nv < NV) return add_tile_of<NO, NV - 1>(nv, grad, in, g, kh, o, first, partial);
  }
  add_tile<NO, NV>(grad, in, g, kh, o, first, partial);
}

// One image added to its block's partial sums of the weight gradient (packed layout) and of the
// bias gradient. Kernel row by kernel row, tile by tile: the image (its gradient and input, 30 KB
// for conv2) stays in the L1 cache over the tiles.
DPTRAIN_VECTOR_CLONES
void add_image(const float* __restrict grad, const float* __restrict in, const ConvGeometry& g,
               float* __restrict partial, float* __restrict bias_partial) {
  const int64_t chunks = (g.vectors() + kMaxVectors - 1) / kMaxVectors;
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    for (int64_t o = 0; o < g.out_channels; o += kTileChannels) {
      const int64_t channels = std::min(kTileChannels, g.out_channels - o);
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t first = chunk * g.vectors() / chunks;  // near-equal chunks
        const int64_t nv = (chunk + 1) * g.vectors() / chunks - first;
        switch (channels) {
          case 1:
            add_tile_of<1, kMaxVectors>(nv, grad, in, g, kh, o, first, partial);
            break;
          case 2:
            add_tile_of<2, kMaxVectors>(nv, grad, in, g, kh, o, first, partial);
            break;
          default:
            add_tile_of<kTileChannels, kMaxVectors>(nv, grad, in, g, kh, o, first, partial);
            break;
        }
      }
    }
  }
  for (int64_t p = 0; p < g.pixels(); ++p) {
    for (int64_t o = 0; o < g.out_channels; ++o) bias_partial[o] += grad[p * g.out_channels + o];
  }
}

// Blocks [first, last) of kBlockImages images each into their partial sums, `partials` holding
// block `first`'s, then the next's (block_floats each, weights then bias), on every thread.
void add_blocks(const float* grad_data, const float* in_data, const ConvGeometry& g, int64_t first,
                int64_t last, float* partials) {
  const int64_t block_floats = g.packed_floats() + g.out_channels;
  // A strip reads up to padded - strip floats past its end, into the next pixel or image: the
  // images from which that would leave the tensor (the last, or more where images are tiny) are
  // read from a copy with room for it.
  const int64_t overrun = g.padded - g.strip;
  const int64_t all_floats = g.images * g.image_floats();
  at::parallel_for(first, last, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> padded_copy(g.image_floats() + overrun, 0.0f);
    for (int64_t b = begin; b < end; ++b) {
      float* partial = partials + (b - first) * block_floats;
      std::fill(partial, partial + block_floats, 0.0f);
      for (int64_t n = b * kBlockImages; n < std::min(g.images, (b + 1) * kBlockImages); ++n) {
        const float* image = in_data + n * g.image_floats();
        if ((n + 1) * g.image_floats() + overrun > all_floats) {
          std::copy(image, image + g.image_floats(), padded_copy.begin());
          image = padded_copy.data();
        }
        add_image(grad_data + n * g.pixels() * g.out_channels, image, g, partial,
                  partial + g.packed_floats());
      }
    }
  });
}

}  // namespace

bool conv_weight_grad_applies(const torch::Tensor& grad_output, const torch::Tensor& input,
                              const torch::Tensor& weight) {
  return is_cpu_fp32(input) && conv_input_grad_applies(grad_output, weight, input.sizes());
}

std::pair<torch::Tensor, torch::Tensor> conv_weight_grad(const torch::Tensor& grad_output,
                                                         const torch::Tensor& input,
                                                         const torch::Tensor& weight) {
  TORCH_CHECK(conv_weight_grad_applies(grad_output, input, weight),
              "conv_weight_grad: shapes or tensors it does not take");
  RECORD_FUNCTION(kConvWeightGradOp, std::vector<c10::IValue>({grad_output, input, weight}));
  const ConvGeometry g = conv_geometry(grad_output, weight);
  constexpr auto kLast = torch::MemoryFormat::ChannelsLast;
  const torch::Tensor grad = grad_output.contiguous(kLast);
  const torch::Tensor in = input.contiguous(kLast);
  const float* grad_data = grad.data_ptr<float>();
  const float* in_data = in.data_ptr<float>();
  const int64_t blocks = (g.images + kBlockImages - 1) / kBlockImages;
  const int64_t block_floats = g.packed_floats() + g.out_channels;  // weights, then the bias
  // Blocks are summed a group at a time into `total`, each group's in order after the last's: the
  // same order as summing all blocks at once, with partial sums held for one group only (3.3 MB
  // for conv2, whatever the batch). The first block's sum starts `total`: no images give zeros.
  const int64_t threads = at::get_num_threads();
  const int64_t group = std::min(blocks, (kGroupBlocks + threads - 1) / threads * threads);
  std::vector<float> partials(group * block_floats);
  std::vector<float> total(block_floats, 0.0f);
  for (int64_t first = 0; first < blocks; first += group) {
    const int64_t last = std::min(blocks, first + group);
    add_blocks(grad_data, in_data, g, first, last, partials.data());
    for (int64_t b = first; b < last; ++b) {  // in order, whatever the thread count
      const float* from = partials.data() + (b - first) * block_floats;
      if (b == 0) {
        std::copy(from, from + block_floats, total.begin());
      } else {
        for (int64_t i = 0; i < block_floats; ++i) total[i] += from[i];
      }
    }
  }
  torch::Tensor bias_grad = torch::empty({g.out_channels}, torch::kFloat32);
  std::copy(total.begin() + g.packed_floats(), total.end(), bias_grad.data_ptr<float>());
  return {unpack_conv_weights(total.data(), g), bias_grad};
}

}  // namespace dptrain::kernels
