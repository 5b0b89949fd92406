#include "kernels/relu_pool.h"

#include <ATen/record_function.h>

#include "kernels/double_backward.h"
#include "kernels/vector_clones.h"

namespace dptrain::kernels {

namespace {

constexpr auto kChannelsLast = torch::MemoryFormat::ChannelsLast;

struct PoolGeometry {
  int64_t images, height, width, channels, pooled_h, pooled_w;
};

PoolGeometry geometry_of(const torch::Tensor& x) {
  return {x.size(0), x.size(2), x.size(3), x.size(1), x.size(2) / 2, x.size(3) / 2};
}

// relu's rule: x <= 0 gives 0, anything else (NaN too) passes.
inline float relu(float v) {
  return v <= 0 ? 0.0f : v;
}

// One image: in [height, width, channels] -> out [pooled_h, pooled_w, channels].
DPTRAIN_VECTOR_CLONES
void forward_image(const float* __restrict in, const PoolGeometry& g, float* __restrict out) {
  const int64_t row = g.width * g.channels;
  for (int64_t i = 0; i < g.pooled_h; ++i) {
    for (int64_t j = 0; j < g.pooled_w; ++j) {
      const float* a = in + 2 * i * row + 2 * j * g.channels;  // the window's top left
      const float* b = a + g.channels;
      const float* c = a + row;
      const float* d = c + g.channels;
      float* o = out + (i * g.pooled_w + j) * g.channels;
      for (int64_t k = 0; k < g.channels; ++k) {
        o[k] = (relu(a[k]) + relu(b[k]) + relu(c[k]) + relu(d[k])) * 0.25f;
      }
    }
  }
}

// One image: the input's gradient [height, width, channels] from the output's.
DPTRAIN_VECTOR_CLONES
void backward_image(const float* __restrict in, const float* __restrict grad_out,
                    const PoolGeometry& g, float* __restrict grad_in) {
  for (int64_t y = 0; y < g.height; ++y) {
    for (int64_t x = 0; x < g.width; ++x) {
      const int64_t at = (y * g.width + x) * g.channels;
      float* gi = grad_in + at;
      if (y >= 2 * g.pooled_h || x >= 2 * g.pooled_w) {  // cut off by the pooling's floor
        for (int64_t k = 0; k < g.channels; ++k) gi[k] = 0.0f;
        continue;
      }
      const float* v = in + at;
      const float* go = grad_out + ((y / 2) * g.pooled_w + x / 2) * g.channels;
      // 0 + as avg_pool2d's backward adds into zeros: a gradient of -0 arrives as +0.
      for (int64_t k = 0; k < g.channels; ++k) gi[k] = v[k] <= 0 ? 0.0f : 0.0f + go[k] * 0.25f;
    }
  }
}

torch::Tensor run_forward(const torch::Tensor& x) {
  const PoolGeometry g = geometry_of(x);
  const torch::Tensor in = x.contiguous(kChannelsLast);
  torch::Tensor out = torch::empty({g.images, g.channels, g.pooled_h, g.pooled_w},
                                   x.options().memory_format(kChannelsLast));
  const int64_t in_size = g.height * g.width * g.channels;
  const int64_t out_size = g.pooled_h * g.pooled_w * g.channels;
  at::parallel_for(0, g.images, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      forward_image(in.data_ptr<float>() + n * in_size, g, out.data_ptr<float>() + n * out_size);
    }
  });
  return out;
}

torch::Tensor run_backward(const torch::Tensor& x, const torch::Tensor& grad_out) {
  const PoolGeometry g = geometry_of(x);
  const torch::Tensor go = grad_out.contiguous(kChannelsLast);
  torch::Tensor grad_in = torch::empty_like(x, x.options().memory_format(kChannelsLast));
  const int64_t in_size = g.height * g.width * g.channels;
  const int64_t out_size = g.pooled_h * g.pooled_w * g.channels;
  at::parallel_for(0, g.images, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      backward_image(x.data_ptr<float>() + n * in_size, go.data_ptr<float>() + n * out_size, g,
                     grad_in.data_ptr<float>() + n * in_size);
    }
  });
  return grad_in;
}

class ReluAvgPool : public torch::autograd::Function<ReluAvgPool> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const torch::Tensor in = x.contiguous(kChannelsLast);
    ctx->save_for_backward({in});
    return run_forward(in);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    refuse_double_backward("the fused ReLU and average pooling");
    return {run_backward(ctx->get_saved_variables()[0], grads[0])};
  }
};

}  // namespace

bool relu_avg_pool2_applies(const torch::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
         x.layout() == torch::kStrided && x.dim() == 4 && x.size(2) >= 2 && x.size(3) >= 2;
}

torch::Tensor relu_avg_pool2(const torch::Tensor& x) {
  RECORD_FUNCTION("dptrain::relu_avg_pool2", std::vector<c10::IValue>({x}));
  if (torch::GradMode::is_enabled() && x.requires_grad()) return ReluAvgPool::apply(x);
  torch::NoGradGuard no_grad;
  return run_forward(x.detach());
}

}  // namespace dptrain::kernels
