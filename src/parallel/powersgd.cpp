#include "parallel/powersgd.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <optional>
#include <string>

namespace dptrain::parallel {
namespace {

// PyTorch's random_seed default: every rank draws the same first Q.
constexpr uint64_t kQSeed = 0;

// PyTorch's _should_compress: the factors, `min_compression` times over, are smaller than M.
bool worth_compressing(int64_t rows, int64_t cols, int64_t rank, double min_compression) {
  return static_cast<double>((rows + cols) * rank) * min_compression <
         static_cast<double>(rows * cols);
}

torch::Tensor as_matrix(const torch::Tensor& bucket, const PowerSgd::Matrix& m) {
  return bucket.narrow(0, m.offset, m.rows * m.cols).view({m.rows, m.cols});
}

// What start() launched, and what finish() needs to complete it.
class Approximation : public InFlight {
 public:
  Approximation(distributed::Communicator& comm, torch::Tensor bucket, const PowerSgd::Plan& plan,
                size_t index)
      : comm_(comm), bucket_(std::move(bucket)), plan_(plan), index_(index) {}

  void launch() {
    torch::NoGradGuard no_grad;
    bucket_.add_(plan_.error);
    input_ = bucket_.clone();
    if (plan_.whole_numel > 0) {
      whole_ = torch::empty({plan_.whole_numel}, bucket_.options());
      int64_t at = 0;
      for (const auto& w : plan_.whole) {
        const int64_t n = numel_of(w);
        whole_.narrow(0, at, n).copy_(bucket_.narrow(0, w.offset, n));
        at += n;
      }
      whole_pending_.emplace(comm_.all_reduce_async(whole_, what("uncompressed tensors")));
    }
    ps_ = torch::empty({plan_.p_numel}, bucket_.options());
    for (const auto& m : plan_.matrices) {
      torch::Tensor p = p_of(m);
      torch::matmul_out(p, as_matrix(bucket_, m), m.q);
    }
    p_pending_.emplace(comm_.all_reduce_async(ps_, what("P")));
  }

  void finish() override {
    torch::NoGradGuard no_grad;
    if (whole_pending_) {
      whole_pending_->wait();
      int64_t at = 0;
      for (const auto& w : plan_.whole) {
        const int64_t n = numel_of(w);
        bucket_.narrow(0, w.offset, n).copy_(whole_.narrow(0, at, n));
        at += n;
      }
    }
    p_pending_->wait();
    for (const auto& m : plan_.matrices) {
      torch::Tensor p = p_of(m);
      orthogonalize_columns(p);
      torch::Tensor q = m.q;
      torch::matmul_out(q, as_matrix(input_, m).t(), p);
    }
    comm_.all_reduce(plan_.qs, what("Q"));
    for (const auto& m : plan_.matrices) {
      torch::Tensor approximation = as_matrix(bucket_, m);
      torch::matmul_out(approximation, p_of(m), m.q.t());
    }
    // What this rank sent less its share of the mean it got back: PyTorch's input - output,
    // divided by the world size as the input is. Summed over the ranks, what the approximation
    // left out.
    torch::Tensor error = plan_.error;
    torch::sub_out(error, input_, bucket_ / comm_.world_size());
  }

  void abandon() override {
    if (whole_pending_) whole_pending_->wait();
    p_pending_->wait();
  }

 private:
  static int64_t numel_of(const BucketShape::Member& member) {
    return c10::multiply_integers(member.sizes);
  }
  torch::Tensor p_of(const PowerSgd::Matrix& m) const {
    return ps_.narrow(0, m.p_offset, m.rows * m.rank).view({m.rows, m.rank});
  }
  std::string what(const char* part) const {
    return "PowerSGD's all-reduce of " + std::string(part) + " of gradient bucket " +
           std::to_string(index_);
  }

  distributed::Communicator& comm_;
  torch::Tensor bucket_;
  const PowerSgd::Plan& plan_;
  size_t index_;
  torch::Tensor input_;  // the bucket plus error feedback, before approximation
  torch::Tensor whole_;
  torch::Tensor ps_;
  std::optional<distributed::Communicator::Pending> whole_pending_;
  std::optional<distributed::Communicator::Pending> p_pending_;
};

}  // namespace

void orthogonalize_columns(torch::Tensor& m) {
  // PyTorch's orthogonalization_epsilon (0 by default there): a zero gradient then gives a zero
  // column, not nan.
  constexpr double kEpsilon = 1e-8;
  const int64_t r = m.size(1);
  for (int64_t i = 0; i < r; ++i) {
    torch::Tensor column = m.narrow(1, i, 1);
    column.div_(column.norm() + kEpsilon);
    if (i + 1 < r) {
      torch::Tensor rest = m.narrow(1, i + 1, r - i - 1);
      rest.sub_(column * (column * rest).sum(0, /*keepdim=*/true));
    }
  }
}

PowerSgd::PowerSgd(const CompressionSpec& spec, const std::vector<BucketShape>& buckets,
                   torch::TensorOptions options)
    : start_step_(spec.powersgd_start_step) {
  int64_t error_numel = 0;
  int64_t q_numel = 0;
  for (const auto& shape : buckets) {
    Plan plan;
    for (const auto& member : shape.members) {
      const int64_t rows = member.sizes.empty() ? 1 : member.sizes[0];
      const int64_t numel = c10::multiply_integers(member.sizes);
      const int64_t cols = rows == 0 ? 0 : numel / rows;
      const int64_t rank = std::min({rows, cols, spec.powersgd_rank});
      if (rank > 0 && worth_compressing(rows, cols, rank, spec.powersgd_min_compression)) {
        plan.matrices.push_back({member.offset, rows, cols, rank, {}, plan.p_numel});
        plan.p_numel += rows * rank;
      } else {
        plan.whole.push_back(member);
        plan.whole_numel += numel;
      }
    }
    error_numel += shape.numel;
    for (const auto& m : plan.matrices) q_numel += m.cols * m.rank;
    plans_.push_back(std::move(plan));
  }
  // One tensor, so that a checkpoint carries this rank's state in one piece.
  torch::Tensor state = torch::zeros({error_numel + q_numel}, torch::kFloat32);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(kQSeed);
  state.narrow(0, error_numel, q_numel).normal_(0, 1, generator);
  state_ = state.to(options);
  int64_t error_at = 0;
  int64_t q_at = error_numel;
  for (size_t b = 0; b < plans_.size(); ++b) {
    Plan& plan = plans_[b];
    plan.error = state_.narrow(0, error_at, buckets[b].numel);
    error_at += buckets[b].numel;
    const int64_t qs_begin = q_at;
    for (auto& m : plan.matrices) {
      m.q = state_.narrow(0, q_at, m.cols * m.rank).view({m.cols, m.rank});
      q_at += m.cols * m.rank;
    }
    plan.qs = state_.narrow(0, qs_begin, q_at - qs_begin);
  }
}

std::unique_ptr<InFlight> PowerSgd::start(distributed::Communicator& comm,
                                          const torch::Tensor& bucket, size_t index, int64_t step) {
  const Plan& plan = plans_.at(index);
  if (step < start_step_ || plan.matrices.empty()) {
    return std::make_unique<PendingReduction>(comm.all_reduce_async(
        bucket, "the all-reduce of gradient bucket " + std::to_string(index)));
  }
  auto approximation = std::make_unique<Approximation>(comm, bucket, plan, index);
  approximation->launch();
  return approximation;
}

}  // namespace dptrain::parallel
