// PowerSGD (Vogels et al., 2019) as PyTorch's powerSGD_hook computes it, in exact arithmetic (Q is
// not re-orthogonalised before P = MQ, which changes no P after orthogonalisation): for the first
// `powersgd_start_step` optimizer steps each bucket is all-reduced whole; after them, the bucket
// plus what earlier approximations left out (error feedback) is split into its parameters. Each
// parameter, as a matrix M of shape[0] rows, is compressed only where P (rows x r) and Q (cols x r)
// are `powersgd_min_compression` times smaller than M; the rest are all-reduced whole, end to end.
// Per compressed matrix: P = M Q, all-reduced, orthogonalised; Q = M^T P, all-reduced; M ~ P Q^T.
// Q starts from a seeded normal draw, the same on every rank, and then from the last step's Q (warm
// start). Three collectives per bucket instead of one: it saves bytes, not round trips.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/grad_compression.h"

namespace dptrain::parallel {

class PowerSgd : public GradCompression {
 public:
  // `options`: the gradients' dtype and device, which the state takes.
  PowerSgd(const CompressionSpec& spec, const std::vector<BucketShape>& buckets,
           torch::TensorOptions options);

  std::unique_ptr<InFlight> start(distributed::Communicator& comm, const torch::Tensor& bucket,
                                  size_t index, int64_t step) override;
  torch::Tensor state() override { return state_; }

  // A compressed parameter of a bucket: where it lies, as a matrix, and its Q in state().
  struct Matrix {
    int64_t offset = 0;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t rank = 0;      // min(rows, cols, powersgd_rank)
    torch::Tensor q;       // cols x rank, a view of state()
    int64_t p_offset = 0;  // where its P lies in the bucket's P buffer
  };
  struct Plan {
    std::vector<Matrix> matrices;
    std::vector<BucketShape::Member> whole;  // all-reduced uncompressed
    int64_t p_numel = 0;
    int64_t whole_numel = 0;
    torch::Tensor error;  // the bucket's error feedback, a view of state()
    torch::Tensor qs;     // every Q of the bucket end to end, a view of state()
  };

 private:
  int64_t start_step_;
  std::vector<Plan> plans_;
  torch::Tensor state_;  // every bucket's error, then every bucket's Qs
};

// Orthonormalises the columns of `m` (rows x r) in place by Gram-Schmidt, in column order; a
// column of (nearly) zero norm stays (nearly) zero instead of dividing by zero.
void orthogonalize_columns(torch::Tensor& m);

}  // namespace dptrain::parallel
