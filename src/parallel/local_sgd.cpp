#include "parallel/local_sgd.h"

#include "core/timer.h"

namespace dptrain::parallel {

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
  std::vector<torch::Tensor> flat;
  for (const auto& p : params_) flat.push_back(p.reshape({-1}));
  torch::Tensor all = torch::cat(flat).div_(comm_.world_size());
  const core::Stopwatch waiting;
  comm_.all_reduce(all, "local SGD's averaging of parameters");
  wait_seconds_ += waiting.seconds();
  int64_t at = 0;
  for (auto& p : params_) {
    p.copy_(all.narrow(0, at, p.numel()).view_as(p));
    at += p.numel();
  }
  diverged_ = false;
}

namespace {

// The state tensors of every parameter that has them, in order: what a row holds after the
// parameters.
std::vector<torch::Tensor> state_tensors(const optim::StateList& states) {
  std::vector<torch::Tensor> tensors;
  for (const auto& s : states) {
    if (!s) continue;
    for (const auto& t : s->tensors) {
      if (t.defined()) tensors.push_back(t);
    }
  }
  return tensors;
}

}  // namespace

torch::Tensor LocalSgd::state(const torch::optim::Optimizer& optimizer) const {
  std::vector<torch::Tensor> flat;
  for (const auto& p : params_) flat.push_back(p.detach().reshape({-1}));
  for (const auto& t : state_tensors(optim::read_state(optimizer, params_))) {
    flat.push_back(t.reshape({-1}).to(params_.front().scalar_type()));
  }
  return torch::cat(flat).cpu();
}

int64_t LocalSgd::state_numel(const optim::StateList& optimizer) const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.numel();
  for (const auto& t : state_tensors(optimizer)) n += t.numel();
  return n;
}

void LocalSgd::load_state(torch::optim::Optimizer& optimizer, const torch::Tensor& row) {
  torch::NoGradGuard no_grad;
  const optim::StateList states = optim::read_state(optimizer, params_);
  TORCH_CHECK(row.dim() == 1 && row.numel() == state_numel(states), "local SGD: a rank's state of ",
              row.numel(), " values for ", state_numel(states));
  int64_t at = 0;
  const auto take = [&](torch::Tensor t) {
    t.copy_(row.narrow(0, at, t.numel()).view_as(t));
    at += t.numel();
  };
  for (auto& p : params_) take(p);
  for (auto& t : state_tensors(states)) take(t);
}

}  // namespace dptrain::parallel
