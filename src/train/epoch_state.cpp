#include "train/epoch_state.h"

#include "core/gpu_memory.h"
#include "core/heap.h"

namespace dptrain::train {
EpochState::EpochState(int64_t epoch, parallel::Backend& backend, const run::ResumePoint* resume,
                       int64_t global_step)
    : index(epoch),
      waited_before_(backend.communication_wait_seconds()),
      bytes_before_(backend.communication_bytes()),
      steps_before_(global_step) {
  const auto options = torch::TensorOptions().device(backend.input_device());
  loss_ = torch::zeros({}, options.dtype(torch::kFloat64));
  correct_ = torch::zeros({}, options.dtype(torch::kInt64));
  m.epoch = epoch + 1;
  if (resume) {
    m.batches = resume->batches_done;  // an optimizer step's end: checkpoints are taken at one
    tally = resume->partial;
    // The checkpoint holds the sums over every rank; rank 0 carries them on alone.
    if (backend.rank() != 0) tally.loss = tally.correct = tally.samples = 0;
    loss_.fill_(tally.loss);
    correct_.fill_(tally.correct);
  }
  samples_before_ = tally.samples;
}

void EpochState::add(const MicroBatchOutput& mb, const data::Batch& batch) {
  {
    torch::NoGradGuard no_grad;
    loss_ += mb.loss.detach().to(torch::kFloat64) * batch.size();
    correct_ += mb.logits.argmax(1).eq(batch.labels).sum();
  }
  tally.samples += batch.size();
  ++m.batches;
}

ProgressFigures EpochState::progress_figures(int64_t epochs, int64_t batches) const {
  ProgressFigures f;
  f.epoch = m.epoch;
  f.epochs = epochs;
  f.batch = m.batches;
  f.batches = batches;
  f.samples = tally.samples - samples_before_;
  // Rank 0's sums: its own samples, and a resumed epoch's from every rank.
  f.loss = tally.samples > 0 ? loss_.item<double>() / static_cast<double>(tally.samples) : 0;
  f.lr = m.lr;
  f.elapsed_sec = timer_.seconds();
  return f;
}

run::EpochTally EpochState::reduced(parallel::Backend& backend, double seconds) const {
  std::vector<double> totals = {loss_.item<double>(), static_cast<double>(correct_.item<int64_t>()),
                                static_cast<double>(tally.samples)};
  backend.all_reduce_sum(totals);
  run::EpochTally sums = tally;
  sums.loss = totals[0];
  sums.correct = static_cast<int64_t>(totals[1]);
  sums.samples = static_cast<int64_t>(totals[2]);
  sums.train_sec += seconds;
  return sums;
}

run::EpochTally EpochState::reduced_so_far(parallel::Backend& backend) const {
  return reduced(backend, timer_.seconds());
}

void EpochState::finish(parallel::Backend& backend, int64_t global_step, const GradScaler& scaler) {
  backend.synchronize_device();
  tally = reduced(backend, timer_.seconds());
  m.comm_wait_sec = backend.communication_wait_seconds() - waited_before_;
  m.comm_bytes = backend.communication_bytes() - bytes_before_;
  if (global_step > steps_before_) {
    m.comm_bytes_per_step =
        static_cast<double>(m.comm_bytes) / static_cast<double>(global_step - steps_before_);
  }
  m.global_step = global_step;
  if (scaler.enabled()) m.loss_scale = scaler.scale();
  m.train_samples = tally.samples;
  m.skipped_steps = tally.skipped_steps;
  m.train_sec = tally.train_sec;
  if (!preempted && tally.samples > 0) {
    m.train_loss = tally.loss / static_cast<double>(tally.samples);
    m.train_acc = static_cast<double>(tally.correct) / static_cast<double>(tally.samples);
  }
}

void measure_memory(parallel::Backend& backend, const torch::optim::Optimizer& optimizer,
                    run::EpochMetrics& m) {
  const auto world = static_cast<size_t>(backend.world_size());
  const auto me = static_cast<size_t>(backend.rank());
  std::vector<double> bytes(4 * world, 0.0);  // exact: far below 2^53
  bytes[me] = static_cast<double>(backend.optimizer_state_bytes(optimizer));
  bytes[world + me] = static_cast<double>(backend.gradient_bytes());
  bytes[2 * world + me] = static_cast<double>(core::peak_resident_bytes());
  bytes[3 * world + me] = static_cast<double>(core::peak_gpu_bytes(backend.devices()));
  backend.all_reduce_sum(bytes);
  const auto column = [&](size_t k) {
    std::vector<int64_t> per_rank(world);
    for (size_t r = 0; r < world; ++r) per_rank[r] = static_cast<int64_t>(bytes[k * world + r]);
    return per_rank;
  };
  m.optimizer_state_bytes = column(0);
  m.gradient_bytes = column(1);
  m.peak_rss_bytes = column(2);
  m.peak_gpu_bytes = column(3);
}

std::string where_in_epoch(int64_t epoch, int64_t batch, int64_t batches) {
  return "in epoch " + std::to_string(epoch) + " after batch " + std::to_string(batch) + " of " +
         std::to_string(batches);
}

}  // namespace dptrain::train
