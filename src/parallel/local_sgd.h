// Post-local SGD for the ddp backend, as PyTorch's post_localSGD_hook with a PostLocalSGDOptimizer
// and PeriodicModelAverager (warmup_steps = start_localSGD_iter): after `warmup` plain ddp steps,
// each rank steps on its own gradients with no all-reduce, and the ranks' parameters are averaged
// after the first local step and every `period` steps after it (one all-reduce of every parameter
// end to end, each divided by the world size first). Each rank's optimizer state stays its own.
// Unlike PyTorch, evaluation sees averaged parameters: average_if_diverged() before it. Periods
// are counted in the run's optimizer steps, so a resumed run averages where the uninterrupted one
// does; a checkpoint carries each rank's parameters and optimizer state (state()), so that a
// resume mid-period goes on with them.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "optim/param_state.h"

namespace dptrain::parallel {

class LocalSgd {
 public:
  LocalSgd(int64_t period, int64_t warmup, std::vector<torch::Tensor> params,
           distributed::Communicator& comm);

  // Whether the step after `steps_taken` steps is local: its backward reduced by no one.
  bool local_step(int64_t steps_taken) const { return steps_taken >= warmup_; }
  // After optimizer step number `steps_taken` (counting it): averages when it ends a period.
  void after_step(int64_t steps_taken);
  // Averages when a local step was taken since the parameters were last equal.
  void average_if_diverged();
  // Whether the ranks' parameters may differ now.
  bool diverged() const { return diverged_; }
  // A run that goes on after `steps_taken` steps (0, or a checkpoint's): whether its parameters
  // may differ between the ranks follows from where the last period ended.
  void start_at(int64_t steps_taken);

  // This rank's parameters, then its optimizer's state tensors (parameter by parameter), end to
  // end in one flat tensor of the parameters' dtype on the CPU.
  torch::Tensor state(const torch::optim::Optimizer& optimizer) const;
  // That tensor's length for an optimizer state laid out as `optimizer` (every rank's is).
  int64_t state_numel(const optim::StateList& optimizer) const;
  // Puts a row state() wrote into this rank's parameters and `optimizer`'s state tensors, which
  // must already be laid out as the row's (a checkpoint's main state applied).
  void load_state(torch::optim::Optimizer& optimizer, const torch::Tensor& row);
  // Seconds spent in averagings' all-reduces so far (nothing hides them).
  double wait_seconds() const { return wait_seconds_; }

 private:
  void average();
  bool period_ends(int64_t steps_taken) const;

  int64_t period_;
  int64_t warmup_;
  std::vector<torch::Tensor> params_;
  distributed::Communicator& comm_;
  bool diverged_ = false;
  double wait_seconds_ = 0;
};

}  // namespace dptrain::parallel
