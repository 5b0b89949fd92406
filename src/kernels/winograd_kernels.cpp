#include "kernels/winograd_kernels.h"

#include <algorithm>

#include <ATen/Parallel.h>

#include "kernels/lanes.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {

namespace {

// The transform's 4x4 points; weights, inputs and products are held point by point.
constexpr int64_t kPoints = 16;
constexpr int64_t kStrip = kWinogradChannelStep;
// A product call sums 6 rows (tiles, or input channels for the weight gradient) times a strip of
// 16 output channels: 12 accumulators, 6 broadcasts and 2 weight vectors in AVX2's 16 registers.
constexpr int kRows = 6;
// Tiles per block of the forward pass: the block's transformed inputs and products (16 x 60 x
// channels floats each) stay in the L2 cache between the three steps at 64 channels (240 KB
// each); at 512 (1.9 MB) they do not, and the products' reads of the weights (16 MB) dominate.
constexpr int64_t kBlockTiles = 60;
// The weight gradient transforms this many bytes of inputs and gradients at a time, then sums
// their products point by point, each point's sums on one thread, kSumTiles tiles at a time in
// registers: the order of every sum is fixed by the shape alone.
constexpr int64_t kChunkBytes = int64_t{8} << 20;
constexpr int64_t kSumTiles = 32;

struct Tile {
  int64_t image, row, col;  // row and col in tiles
};

Tile tile_at(const WinogradShape& s, int64_t t) {
  const int64_t per_image = s.tiles_high() * s.tiles_wide();
  const int64_t in_image = t % per_image;
  return {t / per_image, in_image / s.tiles_wide(), in_image % s.tiles_wide()};
}

// B^T d B of a 4x4 patch, one vector of channels per entry, in place.
__attribute__((always_inline)) inline void input_transform(Lanes d[4][4]) {
  for (int b = 0; b < 4; ++b) {
    const Lanes d0 = d[0][b], d1 = d[1][b], d2 = d[2][b], d3 = d[3][b];
    d[0][b] = d0 - d2;
    d[1][b] = d1 + d2;
    d[2][b] = d2 - d1;
    d[3][b] = d1 - d3;
  }
  for (int a = 0; a < 4; ++a) {
    const Lanes e0 = d[a][0], e1 = d[a][1], e2 = d[a][2], e3 = d[a][3];
    d[a][0] = e0 - e2;
    d[a][1] = e1 + e2;
    d[a][2] = e2 - e1;
    d[a][3] = e1 - e3;
  }
}

// Tiles [first, first + count) of x [images][height][width][channels], transformed:
// out[(point * rows + i) * channels + c] for tile first + i.
DPTRAIN_VECTOR_CLONES
void transform_inputs(const float* __restrict x, const WinogradShape& s, int64_t channels,
                      int64_t first, int64_t count, float* __restrict out, int64_t rows) {
  const Lanes zero = {};
  for (int64_t i = 0; i < count; ++i) {
    const Tile tile = tile_at(s, first + i);
    const float* image = x + tile.image * s.height * s.width * channels;
    for (int64_t c = 0; c < channels; c += kLanes) {
      Lanes d[4][4];
      for (int a = 0; a < 4; ++a) {
        const int64_t y = 2 * tile.row - 1 + a;  // padding 1
        for (int b = 0; b < 4; ++b) {
          const int64_t x_at = 2 * tile.col - 1 + b;
          const bool inside = y >= 0 && y < s.height && x_at >= 0 && x_at < s.width;
          d[a][b] = inside ? load<Lanes>(image + (y * s.width + x_at) * channels + c) : zero;
        }
      }
      input_transform(d);
      for (int p = 0; p < kPoints; ++p) store(out + (p * rows + i) * channels + c, d[p / 4][p % 4]);
    }
  }
}

// A^T m A of the 4x4 products of a tile plus the bias, written to the 2x2 outputs inside the image.
DPTRAIN_VECTOR_CLONES
void transform_outputs(const float* __restrict m, const WinogradShape& s, int64_t channels,
                       int64_t first, int64_t count, const float* bias, float* __restrict y) {
  for (int64_t i = 0; i < count; ++i) {
    const Tile tile = tile_at(s, first + i);
    float* image = y + tile.image * s.height * s.width * channels;
    for (int64_t k = 0; k < channels; k += kLanes) {
      Lanes e[2][4];
      for (int b = 0; b < 4; ++b) {
        const auto at = [&](int a) {
          return load<Lanes>(m + ((a * 4 + b) * count + i) * channels + k);
        };
        const Lanes q1 = at(1), q2 = at(2);
        e[0][b] = at(0) + q1 + q2;
        e[1][b] = q1 - q2 - at(3);
      }
      const Lanes bias_k = bias ? load<Lanes>(bias + k) : Lanes{};
      for (int a = 0; a < 2 && 2 * tile.row + a < s.height; ++a) {
        const Lanes out[2] = {e[a][0] + e[a][1] + e[a][2] + bias_k,
                              e[a][1] - e[a][2] - e[a][3] + bias_k};
        for (int b = 0; b < 2 && 2 * tile.col + b < s.width; ++b) {
          store(image + ((2 * tile.row + a) * s.width + 2 * tile.col + b) * channels + k, out[b]);
        }
      }
    }
  }
}

// A g A^T of each tile's 2x2 output gradients (zero past the image's edge):
// out[(point * rows + i) * channels + k].
DPTRAIN_VECTOR_CLONES
void transform_grads(const float* __restrict grad, const WinogradShape& s, int64_t channels,
                     int64_t first, int64_t count, float* __restrict out, int64_t rows) {
  const Lanes zero = {};
  for (int64_t i = 0; i < count; ++i) {
    const Tile tile = tile_at(s, first + i);
    const float* image = grad + tile.image * s.height * s.width * channels;
    for (int64_t k = 0; k < channels; k += kLanes) {
      Lanes g[2][2];
      for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
          const int64_t y = 2 * tile.row + a, x_at = 2 * tile.col + b;
          const bool inside = y < s.height && x_at < s.width;
          g[a][b] = inside ? load<Lanes>(image + (y * s.width + x_at) * channels + k) : zero;
        }
      }
      const Lanes e[4][2] = {{g[0][0], g[0][1]},
                             {g[0][0] + g[1][0], g[0][1] + g[1][1]},
                             {g[0][0] - g[1][0], g[0][1] - g[1][1]},
                             {-g[1][0], -g[1][1]}};
      for (int a = 0; a < 4; ++a) {
        const Lanes f[4] = {e[a][0], e[a][0] + e[a][1], e[a][0] - e[a][1], -e[a][1]};
        for (int b = 0; b < 4; ++b) store(out + ((a * 4 + b) * rows + i) * channels + k, f[b]);
      }
    }
  }
}

// NR rows of `v` (row stride `depth`) times the depth x 16 strip `u`, to NR rows of m (stride
// m_stride): one point's products for NR tiles.
template <int NR>
__attribute__((always_inline)) inline void multiply_rows(const float* v, int64_t depth,
                                                         const float* u, float* m,
                                                         int64_t m_stride) {
  Lanes sum[NR][2] = {};
  for (int64_t c = 0; c < depth; ++c) {
    const Lanes u0 = load<Lanes>(u + c * kStrip), u1 = load<Lanes>(u + c * kStrip + kLanes);
    for (int r = 0; r < NR; ++r) {
      const float b = v[r * depth + c];
      sum[r][0] += b * u0;
      sum[r][1] += b * u1;
    }
  }
  for (int r = 0; r < NR; ++r) {
    store(m + r * m_stride, sum[r][0]);
    store(m + r * m_stride + kLanes, sum[r][1]);
  }
}

template <int NR>
__attribute__((always_inline)) inline void multiply_rows_of(int64_t rows, const float* v,
                                                            int64_t depth, const float* u, float* m,
                                                            int64_t m_stride) {
  if constexpr (NR > 1) {
    if (rows < NR) return multiply_rows_of<NR - 1>(rows, v, depth, u, m, m_stride);
  }
  multiply_rows<NR>(v, depth, u, m, m_stride);
}

// A block's products: m[point][tile][output] = v[point][tile][:] . weights[point][:][output].
DPTRAIN_VECTOR_CLONES
void multiply_block(const float* __restrict v, int64_t count, int64_t inputs,
                    const float* __restrict weights, int64_t outputs, float* __restrict m) {
  const int64_t strips = outputs / kStrip;
  for (int64_t p = 0; p < kPoints; ++p) {
    for (int64_t strip = 0; strip < strips; ++strip) {
      const float* u = weights + (p * strips + strip) * inputs * kStrip;
      for (int64_t t = 0; t < count; t += kRows) {
        multiply_rows_of<kRows>(std::min<int64_t>(kRows, count - t), v + (p * count + t) * inputs,
                                inputs, u, m + (p * count + t) * outputs + strip * kStrip, outputs);
      }
    }
  }
}

// NR input channels' rows of one point's weight-gradient sums (`sums`, stride `outputs`) plus
// the products of `count` tiles: v[t][r] (packed, kRows a tile) times g[t][k] (packed, kStrip).
template <int NR>
__attribute__((always_inline)) inline void add_products(const float* v, const float* g,
                                                        int64_t count, int64_t outputs,
                                                        float* sums) {
  Lanes sum[NR][2] = {};
  for (int64_t t = 0; t < count; ++t) {
    const Lanes g0 = load<Lanes>(g + t * kStrip), g1 = load<Lanes>(g + t * kStrip + kLanes);
    for (int r = 0; r < NR; ++r) {
      const float b = v[t * kRows + r];
      sum[r][0] += b * g0;
      sum[r][1] += b * g1;
    }
  }
  for (int r = 0; r < NR; ++r) {
    store(sums + r * outputs, load<Lanes>(sums + r * outputs) + sum[r][0]);
    store(sums + r * outputs + kLanes, load<Lanes>(sums + r * outputs + kLanes) + sum[r][1]);
  }
}

template <int NR>
__attribute__((always_inline)) inline void add_products_of(int64_t rows, const float* v,
                                                           const float* g, int64_t count,
                                                           int64_t outputs, float* sums) {
  if constexpr (NR > 1) {
    if (rows < NR) return add_products_of<NR - 1>(rows, v, g, count, outputs, sums);
  }
  add_products<NR>(v, g, count, outputs, sums);
}

// `count` rows of v [t][inputs] and g [t][outputs] repacked so that add_products reads them in
// order: vp[group][t][kRows] (input channels in groups of kRows) and gp[strip][t][kStrip]. Read in
// place, the rows of one group lie a row apart: at 512 channels 2 KB, so that 32 of them fall on
// two sets of the L1 cache and evict each other (the weight gradient took 1.9x the forward pass's
// time at 512 channels, against 1.2x at 64).
void pack_rows(const float* __restrict v, const float* __restrict g, int64_t count, int64_t inputs,
               int64_t outputs, float* __restrict vp, float* __restrict gp) {
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t c = 0; c < inputs; c += kRows) {
      std::copy_n(v + t * inputs + c, std::min<int64_t>(kRows, inputs - c),
                  vp + (c * count + t * kRows));
    }
    for (int64_t k = 0; k < outputs; k += kStrip) {
      std::copy_n(g + t * outputs + k, kStrip, gp + (k * count + t * kStrip));
    }
  }
}

// One point's sums [inputs][outputs] += v[point]^T g[point] over a chunk's `count` tiles, kSumTiles
// at a time. `packed` holds kSumTiles x (inputs + kRows + outputs) floats (the last group of
// input channels may be short).
DPTRAIN_VECTOR_CLONES
void sum_point_products(const float* __restrict v, const float* __restrict g, int64_t count,
                        int64_t inputs, int64_t outputs, float* __restrict packed,
                        float* __restrict sums) {
  float* vp = packed;
  float* gp = packed + kSumTiles * (inputs + kRows);
  for (int64_t t = 0; t < count; t += kSumTiles) {
    const int64_t here = std::min(kSumTiles, count - t);
    pack_rows(v + t * inputs, g + t * outputs, here, inputs, outputs, vp, gp);
    for (int64_t k = 0; k < outputs; k += kStrip) {
      for (int64_t c = 0; c < inputs; c += kRows) {
        add_products_of<kRows>(std::min<int64_t>(kRows, inputs - c), vp + c * here, gp + k * here,
                               here, outputs, sums + c * outputs + k);
      }
    }
  }
}

// G g G^T of one 3x3 kernel: out[p] for the 16 points.
void weight_transform(const float g[3][3], float out[kPoints]) {
  float t[4][3];
  for (int s = 0; s < 3; ++s) {
    t[0][s] = g[0][s];
    t[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
    t[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
    t[3][s] = g[2][s];
  }
  for (int a = 0; a < 4; ++a) {
    out[a * 4 + 0] = t[a][0];
    out[a * 4 + 1] = 0.5f * (t[a][0] + t[a][1] + t[a][2]);
    out[a * 4 + 2] = 0.5f * (t[a][0] - t[a][1] + t[a][2]);
    out[a * 4 + 3] = t[a][2];
  }
}

// G^T q G: a 4x4 point gradient back to the 3x3 kernel's, into out[9].
void weight_transform_back(const float q[4][4], float* out) {
  float e[3][4];
  for (int b = 0; b < 4; ++b) {
    e[0][b] = q[0][b] + 0.5f * (q[1][b] + q[2][b]);
    e[1][b] = 0.5f * (q[1][b] - q[2][b]);
    e[2][b] = 0.5f * (q[1][b] + q[2][b]) + q[3][b];
  }
  for (int a = 0; a < 3; ++a) {
    out[a * 3 + 0] = e[a][0] + 0.5f * (e[a][1] + e[a][2]);
    out[a * 3 + 1] = 0.5f * (e[a][1] - e[a][2]);
    out[a * 3 + 2] = 0.5f * (e[a][1] + e[a][2]) + e[a][3];
  }
}

}  // namespace

std::vector<float> winograd_weights(const float* weight, int64_t outputs, int64_t inputs,
                                    bool for_input_grad) {
  // The convolution these weights compute: `to` outputs from `from` inputs.
  const int64_t to = for_input_grad ? inputs : outputs;
  const int64_t from = for_input_grad ? outputs : inputs;
  const int64_t strips = to / kStrip;
  std::vector<float> packed(kPoints * to * from);
  at::parallel_for(0, to, kStrip, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      for (int64_t c = 0; c < from; ++c) {
        // for_input_grad: kernel (c -> k) of the input gradient is kernel (k -> c) turned around.
        const float* kernel = weight + (for_input_grad ? c * inputs + k : k * inputs + c) * 9;
        float g[3][3];
        for (int r = 0; r < 9; ++r) g[r / 3][r % 3] = for_input_grad ? kernel[8 - r] : kernel[r];
        float points[kPoints];
        weight_transform(g, points);
        for (int p = 0; p < kPoints; ++p) {
          packed[((p * strips + k / kStrip) * from + c) * kStrip + k % kStrip] = points[p];
        }
      }
    }
  });
  return packed;
}

void winograd_convolution(const float* x, const WinogradShape& shape, int64_t inputs,
                          const std::vector<float>& weights, int64_t outputs, const float* bias,
                          float* y) {
  const int64_t tiles = shape.tiles();
  // As many blocks of up to kBlockTiles as the threads share evenly: at batch 32 the 512-channel
  // stage has 128 tiles, which would be 3 blocks of 60 for 2 threads. Each tile's outputs are its
  // own, so the blocks' size changes no result.
  // Not under 2 x kRows tiles, though: each block reads all the transformed weights again.
  const int64_t threads = at::get_num_threads();
  const int64_t even_blocks =
      ((tiles + kBlockTiles - 1) / kBlockTiles + threads - 1) / threads * threads;
  const int64_t block_tiles = std::max((tiles + even_blocks - 1) / even_blocks, 2 * int64_t{kRows});
  const int64_t blocks = (tiles + block_tiles - 1) / block_tiles;
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> v(kPoints * block_tiles * inputs), m(kPoints * block_tiles * outputs);
    for (int64_t block = begin; block < end; ++block) {
      const int64_t first = block * block_tiles;
      const int64_t count = std::min(block_tiles, tiles - first);
      transform_inputs(x, shape, inputs, first, count, v.data(), count);
      multiply_block(v.data(), count, inputs, weights.data(), outputs, m.data());
      transform_outputs(m.data(), shape, outputs, first, count, bias, y);
    }
  });
}

void winograd_weight_grad(const float* x, const float* grad, const WinogradShape& shape,
                          int64_t inputs, int64_t outputs, float* weight_grad) {
  const int64_t tiles = shape.tiles();
  const int64_t chunk = std::max<int64_t>(
      kSumTiles, kChunkBytes / (kPoints * int64_t{sizeof(float)} * (inputs + outputs)));
  std::vector<float> v(kPoints * chunk * inputs), g(kPoints * chunk * outputs);
  std::vector<float> sums(kPoints * inputs * outputs, 0.0f);
  for (int64_t first = 0; first < tiles; first += chunk) {
    const int64_t count = std::min(chunk, tiles - first);
    at::parallel_for(0, count, kSumTiles, [&](int64_t begin, int64_t end) {
      transform_inputs(x, shape, inputs, first + begin, end - begin, v.data() + begin * inputs,
                       count);
      transform_grads(grad, shape, outputs, first + begin, end - begin, g.data() + begin * outputs,
                      count);
    });
    at::parallel_for(0, kPoints, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> packed(kSumTiles * (inputs + kRows + outputs));
      for (int64_t p = begin; p < end; ++p) {
        sum_point_products(v.data() + p * count * inputs, g.data() + p * count * outputs, count,
                           inputs, outputs, packed.data(), sums.data() + p * inputs * outputs);
      }
    });
  }
  at::parallel_for(0, outputs, kStrip, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      for (int64_t c = 0; c < inputs; ++c) {
        float q[4][4];
        for (int p = 0; p < kPoints; ++p) q[p / 4][p % 4] = sums[(p * inputs + c) * outputs + k];
        weight_transform_back(q, weight_grad + (k * inputs + c) * 9);
      }
    }
  });
}

}  // namespace dptrain::kernels
