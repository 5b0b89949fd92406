#include "parallel/local_sgd.h"

#include <ATen/ATen.h>

#include "core/timer.h"

namespace dptrain::parallel {

namespace {

// `flat`'s consecutive pieces into `targets`, shaped as each.
void copy_from_flat(const torch::Tensor& flat, const std::vector<torch::Tensor>& targets) {
  const std::vector<torch::Tensor> pieces = at::unflatten_dense_tensors(flat, targets);
  for (size_t i = 0; i < targets.size(); ++i) {
    torch::Tensor target = targets[i];
    target.copy_(pieces[i]);
  }
}

// The parameters, then the state tensors of every parameter that has them, in order: what a row
// holds.
std::vector<torch::Tensor> row_tensors(const std::vector<torch::Tensor>& params,
                                       const optim::StateList& states) {
  std::vector<torch::Tensor> tensors = params;
  for (const auto& s : states) {
    if (!s) continue;
    for (const auto& t : s->tensors) {
      if (t.defined()) tensors.push_back(t);
    }
  }
  return tensors;
}

}  // namespace

LocalSgd::LocalSgd(int64_t period, int64_t warmup, std::vector<torch::Tensor> params,
                   distributed::Communicator& comm)
    : period_(period), warmup_(warmup), params_(std::move(params)), comm_(comm) {}

// PeriodicModelAverager's schedule: the first local step is averaged, then every period-th after
// it (steps warmup + 1, warmup + 1 + period, ... counted from 1).
bool LocalSgd::period_ends(int64_t steps_taken) const {
  return steps_taken > warmup_ && (steps_taken - warmup_ - 1) % period_ == 0;
}

void LocalSgd::after_step(int64_t steps_taken) {
  if (steps_taken <= warmup_) return;  // a plain ddp step: equal parameters
  diverged_ = true;
  if (period_ends(steps_taken)) average();
}

void LocalSgd::average_if_diverged() {
  if (diverged_) average();
}

void LocalSgd::start_at(int64_t steps_taken) {
  diverged_ = steps_taken > warmup_ && !period_ends(steps_taken);
}

void LocalSgd::average() {
  torch::NoGradGuard no_grad;
  const torch::Tensor all = at::flatten_dense_tensors(params_).div_(comm_.world_size());
  const core::Stopwatch waiting;
  comm_.all_reduce(all, "local SGD's averaging of parameters");
  wait_seconds_ += waiting.seconds();
  copy_from_flat(all, params_);
  diverged_ = false;
}

torch::Tensor LocalSgd::state(const torch::optim::Optimizer& optimizer) const {
  torch::NoGradGuard no_grad;
  return at::flatten_dense_tensors(row_tensors(params_, optim::read_state(optimizer, params_)))
      .cpu();
}

int64_t LocalSgd::state_numel(const optim::StateList& optimizer) const {
  int64_t n = 0;
  for (const auto& t : row_tensors(params_, optimizer)) n += t.numel();
  return n;
}

void LocalSgd::load_state(torch::optim::Optimizer& optimizer, const torch::Tensor& row) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> targets =
      row_tensors(params_, optim::read_state(optimizer, params_));
  int64_t numel = 0;
  for (const auto& t : targets) numel += t.numel();
  TORCH_CHECK(row.dim() == 1 && row.numel() == numel, "local SGD: a rank's state of ", row.numel(),
              " values for ", numel);
  copy_from_flat(row, targets);
}

}  // namespace dptrain::parallel
