#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/gpu_memory.h"
#include "core/heap.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "core/wall_clock.h"
#include "model/state_dict.h"
#include "parallel/devices.h"
#include "parallel/zero_optimizer.h"
#include "serialize/torch_file.h"
#include "train/branch.h"
#include "train/checkpoint.h"
#include "train/console_log.h"
#include "train/early_stopping.h"
#include "train/evaluate.h"
#include "train/grad_scaler.h"
#include "train/live_progress.h"
#include "train/metrics_files.h"
#include "train/model_file.h"
#include "train/parameters.h"
#include "train/precision.h"
#include "train/report.h"
#include "train/run_dir.h"
#include "train/run_log.h"
#include "train/run_state.h"
#include "train/start_file.h"
#include "train/step.h"
#include "train/tensorboard_log.h"

namespace dptrain::train {

namespace {

// ddp ranks vote on a preemption every this many steps: a vote is an all-reduce that waits for
// the device, too costly for every step on a GPU. Alone (single, dp) the flag is read every step.
constexpr int64_t kPreemptionPollSteps = 16;

// Whether a scheduler asked this job to stop (SIGTERM, SIGUSR1), decided together so that every
// rank stops after the same step.
bool all_want_to_preempt(parallel::Backend& backend) {
  std::vector<double> votes = {core::preemption_requested() ? 1.0 : 0.0};
  backend.all_reduce_sum(votes);
  return votes[0] > 0;
}

struct EpochOutcome {
  EpochMetrics m;          // finished: the epoch's figures; preempted: the counts so far, no means
  TrainingSums sums;       // over every rank: what a preemption's checkpoint keeps
  bool preempted = false;  // stopped after m.batches batches for a preemption
};

// The running loss and hit count stay on the device, so that a step never waits to add them.
struct DeviceSums {
  torch::Tensor loss;     // float64
  torch::Tensor correct;  // int64
};

std::string where_in_epoch(int64_t epoch, int64_t batch, int64_t batches) {
  return "in epoch " + std::to_string(epoch) + " after batch " + std::to_string(batch) + " of " +
         std::to_string(batches);
}

// Sums the ranks' figures; the means of a finished epoch, or the sums of a preempted one.
void reduce_epoch(parallel::Backend& backend, const DeviceSums& device_sums, EpochOutcome& out) {
  std::vector<double> totals = {device_sums.loss.item<double>(),
                                static_cast<double>(device_sums.correct.item<int64_t>()),
                                static_cast<double>(out.sums.samples)};
  backend.all_reduce_sum(totals);
  out.sums.loss = totals[0];
  out.sums.correct = static_cast<int64_t>(totals[1]);
  out.sums.samples = static_cast<int64_t>(totals[2]);
  EpochMetrics& m = out.m;
  m.train_samples = out.sums.samples;
  m.skipped_steps = out.sums.skipped_steps;
  m.train_sec = out.sums.train_sec;
  if (!out.preempted && out.sums.samples > 0) {
    m.train_loss = out.sums.loss / static_cast<double>(out.sums.samples);
    m.train_acc = static_cast<double>(out.sums.correct) / static_cast<double>(out.sums.samples);
  }
}

// Each rank's optimizer-state, gradient, peak resident and peak GPU bytes, gathered into every
// rank's record.
void measure_memory(Session& s, EpochMetrics& m) {
  parallel::Backend& backend = *s.backend;
  const auto world = static_cast<size_t>(backend.world_size());
  const auto me = static_cast<size_t>(backend.rank());
  std::vector<double> bytes(4 * world, 0.0);  // exact: far below 2^53
  bytes[me] = static_cast<double>(parallel::optimizer_state_bytes(*s.optimizer));
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

// What an epoch needs to know of the run around it.
struct EpochPlan {
  int64_t epoch = 0;   // 0-based
  int64_t epochs = 0;  // train.epochs
  int64_t log_every = 0;
  int64_t max_steps = 0;  // 0: no limit
  LiveProgress* live = nullptr;
  RunLog* log = nullptr;  // fed a StepRecord every log_every steps
  // After each optimizer step but an epoch's last: checkpoint.every_steps, given the epoch so
  // far, this rank's running sums and the seconds trained since the epoch (or its rest) began.
  std::function<void(const EpochOutcome&, const DeviceSums&, double)> checkpoint_within;
};

void add_to_sums(DeviceSums& sums, const MicroBatchOutput& mb, const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  sums.loss += mb.loss.detach().to(torch::kFloat64) * batch.size();
  sums.correct += mb.logits.argmax(1).eq(batch.labels).sum();
}

// The step record every log.every_steps optimizer steps, and the live line when it is due.
// `fresh`: the samples this rank trained on since `timer` started (a resumption's are not).
void report_step(const EpochPlan& plan, const EpochOutcome& out, int64_t batches,
                 int64_t global_step, const MicroBatchOutput& mb, const DeviceSums& sums,
                 int64_t fresh, const core::Stopwatch& timer) {
  const EpochMetrics& m = out.m;
  if (plan.log_every > 0 && global_step % plan.log_every == 0) {
    plan.log->step({m.epoch, m.batches, batches, global_step, mb.loss.item<double>(), m.lr});
  }
  if (plan.live == nullptr || !plan.live->due()) return;
  ProgressFigures f;
  f.epoch = m.epoch;
  f.epochs = plan.epochs;
  f.batch = m.batches;
  f.batches = batches;
  f.samples = fresh;
  // Rank 0's sums: its own samples, and a resumed epoch's from every rank.
  f.loss =
      out.sums.samples > 0 ? sums.loss.item<double>() / static_cast<double>(out.sums.samples) : 0;
  f.lr = m.lr;
  f.elapsed_sec = timer.seconds();
  plan.live->update(f);
}

// One pass over the training set, or the rest of one that a preemption cut short (`resume`), in
// optimizer steps of s.accumulate batches; `global_step` counts the run's optimizer steps.
EpochOutcome train_epoch(Session& s, const EpochPlan& plan, const Progress* resume,
                         int64_t& global_step) {
  parallel::Backend& backend = *s.backend;
  const double waited_before = backend.communication_wait_seconds();
  const auto options = torch::TensorOptions().device(backend.input_device());
  DeviceSums device_sums{torch::zeros({}, options.dtype(torch::kFloat64)),
                         torch::zeros({}, options.dtype(torch::kInt64))};
  EpochOutcome out;
  EpochMetrics& m = out.m;
  m.epoch = plan.epoch + 1;
  if (resume) {
    m.batches = resume->batches_done;  // an optimizer step's end: checkpoints are taken at one
    out.sums = resume->partial;
    // The checkpoint holds the sums over every rank; rank 0 carries them on alone.
    if (backend.rank() != 0) out.sums.loss = out.sums.correct = out.sums.samples = 0;
    device_sums.loss.fill_(out.sums.loss);
    device_sums.correct.fill_(out.sums.correct);
  }
  const int64_t batches = s.train_loader->batches_per_epoch();
  const int64_t local_before = out.sums.samples;

  backend.set_training(true);
  s.train_loader->start_epoch(plan.epoch);
  for (int64_t k = 0; k < m.batches; ++k) s.train_loader->next();  // trained on before the stop
  core::Stopwatch timer;
  const std::vector<torch::Tensor> params = backend.optimizer_parameters();
  while (auto batch = s.train_loader->next()) {
    const int64_t index = m.batches % s.accumulate;
    const int64_t group = group_size(m.batches - index, batches, s.accumulate);
    const MicroBatchOutput mb =
        accumulate_micro_batch(s, batch->images, batch->labels, index, group);
    add_to_sums(device_sums, mb, *batch);
    out.sums.samples += batch->size();
    ++m.batches;
    core::throw_if_interrupted(where_in_epoch(m.epoch, m.batches, batches));
    if (index + 1 < group) continue;

    m.lr = s.schedule->at(global_step);
    if (!take_optimizer_step(s, params, m.lr)) ++out.sums.skipped_steps;
    ++global_step;
    report_step(plan, out, batches, global_step, mb, device_sums, out.sums.samples - local_before,
                timer);
    if (plan.max_steps > 0 && global_step >= plan.max_steps) break;
    if (m.batches < batches && plan.checkpoint_within) {
      plan.checkpoint_within(out, device_sums, timer.seconds());
    }
    if ((backend.world_size() == 1 || global_step % kPreemptionPollSteps == 0) &&
        all_want_to_preempt(backend)) {
      out.preempted = true;
      break;
    }
  }
  if (plan.live) plan.live->clear();
  parallel::synchronize(backend.input_device());
  out.sums.train_sec += timer.seconds();
  m.comm_wait_sec = backend.communication_wait_seconds() - waited_before;
  m.global_step = global_step;
  if (s.scaler.enabled()) m.loss_scale = s.scaler.scale();
  reduce_epoch(backend, device_sums, out);
  measure_memory(s, m);
  return out;
}

// The validation (when held out) and test figures of the parameters as they are now, with the
// live line while they are computed.
void evaluate_epoch(Session& s, EpochMetrics& m, LiveProgress& live, int64_t epochs) {
  core::Stopwatch timer;
  const AutocastScope autocast(s.backend->devices(), s.autocast);
  const auto progress = [&](const std::string& what) {
    return [&live, &timer, &m, epochs, what](int64_t batch, int64_t batches) {
      if (live.due())
        live.update(EvalProgress{m.epoch, epochs, what, batch, batches, timer.seconds()});
    };
  };
  if (s.val_loader) {
    const EvalResult val = evaluate(*s.backend, *s.val_loader, progress("val"));
    m.has_val = true;
    m.val_loss = val.loss;
    m.val_acc = val.accuracy;
  }
  const EvalResult test = evaluate(*s.backend, *s.test_loader, progress("test"));
  live.clear();
  m.test_loss = test.loss;
  m.test_acc = test.accuracy;
  m.test_correct = test.correct;
  m.test_samples = test.samples;
  m.eval_sec = timer.seconds();
}

// How to go on after an interrupted or preempted run (from `where`): the exact command where
// rank 0 knows it.
std::string resume_hint(const Start& start, const std::string& where,
                        const std::string& checkpoint) {
  if (!start.resume_command.empty()) return "go on " + where + " with: " + start.resume_command;
  return "run the same command with --resume auto" +
         (checkpoint.empty() ? std::string() : " (or --resume " + checkpoint + ")") + " to go on " +
         where;
}

// The error that ends a preempted run: exit status 75, so that a batch script can requeue it.
core::Error preempted(const EpochMetrics& m, int64_t batches, const std::filesystem::path& path,
                      bool writer, const Start& start) {
  const std::string where = where_in_epoch(m.epoch, m.batches, batches);
  return core::Error(
      core::ErrorCode::kPreempted,
      "stopped by " + core::preemption_signal_name() + " (a preemption notice) " + where + "; " +
          (writer ? "checkpoint written to " + path.string() : "rank 0 wrote the checkpoint"),
      resume_hint(start, "from there", path.string()));
}

// One run from its first (or resumed) epoch to its files: the epoch loop and what it keeps.
class RunLoop {
 public:
  RunLoop(const config::Config& config, const std::filesystem::path& output_dir,
          std::ostream& console, const distributed::RankInfo& rank, const Start& start)
      : config_(config),
        output_dir_(output_dir),
        console_(console),
        s_(build_session(config, rank)),
        writer_(s_.backend->rank() == 0),
        devices_(parallel::format_devices(s_.backend->devices())),
        watcher_(config.early_stopping, config.checkpoint.save_best),
        checkpoints_(config, checkpoint_dir(config, output_dir, start.run.run_id), writer_),
        // -q (log.level warn and above) leaves stdout d2l's final line alone.
        chatty_(writer_ && config.log.level <= config::LogLevel::kInfo),
        live_(console, chatty_ && progress_wanted(config.log.progress)),
        begun_(start) {
    logs_.add(std::make_unique<ConsoleLog>(console, live_, chatty_, config.train.epochs));
    spdlog::info("training {} on {} ({} backend, {} threads), {} batches per epoch, output {}",
                 config.model.name, devices_, s_.backend->name(), torch::get_num_threads(),
                 s_.train_loader->batches_per_epoch(), output_dir.string());
  }

  // Where the run begins: rank 0's checkpoint to resume, or else its weights to start from, each
  // read by every rank after checking that they all hold its bytes (train/start_file.h).
  void begin() {
    const uint64_t largest = serialize::largest_file_bytes(model::decode_limits(s_.state_specs));
    if (const auto checkpoint = agree_on_start_file(*s_.backend, "resume", begun_.resume,
                                                    "the checkpoint to resume", largest)) {
      resume_from(*checkpoint);
    } else if (const auto weights = agree_on_start_file(*s_.backend, "init", begun_.init_from,
                                                        "the weights to start from", largest)) {
      copy_into_model(*s_.backend, read_model_file(weights->path, weights->file, s_.state_specs));
      spdlog::info("initial weights from {}", weights->path.string());
    }
  }

  // A run that ends in an error says so in state.json (a preempted one already has).
  void mark_stopped(bool interrupted) noexcept {
    if (!writer_ || !files_written_) return;
    record_state(interrupted ? RunState::kInterrupted : RunState::kFailed);
  }

  // state.json is a report: failing to write it is a warning, never the end of the run. The error
  // that ended a run (a full disk, often) is the one to report, and a preempted run's other ranks
  // wait for rank 0 at a barrier.
  void record_state(RunState state) noexcept {
    try {
      write_run_state(output_dir_, state);
    } catch (const std::exception& e) {
      spdlog::warn("could not record the run's state ({}) in state.json: {}", name_of(state),
                   e.what());
    }
  }

  TrainResult run() {
    if (writer_) write_run_files();
    for (int64_t epoch = start_.epoch; epoch < config_.train.epochs && !steps_used_up(); ++epoch) {
      const bool rest_of_epoch = epoch == start_.epoch && start_.batches_done > 0;
      const EpochPlan plan{
          epoch,
          config_.train.epochs,
          config_.log.every_steps,
          config_.train.max_steps,
          &live_,
          &logs_,
          [this, epoch](const EpochOutcome& o, const DeviceSums& sums, double seconds) {
            checkpoint_within(epoch, o, sums, seconds);
          }};
      EpochOutcome outcome = train_epoch(s_, plan, rest_of_epoch ? &start_ : nullptr, global_step_);
      if (outcome.preempted) stop_for_preemption(epoch, outcome);
      if (!record_epoch(outcome.m)) break;
    }
    finish();
    return result_;
  }

 private:
  // The run's first files, once it can start (a start that fails leaves its folder as it was).
  void write_run_files() {
    // What a killed run left half-written is of no use to this one. The folder is locked and
    // nothing is being written yet, so each temporary there is a killed run's.
    const std::filesystem::path checkpoints =
        checkpoint_dir(config_, output_dir_, begun_.run.run_id);
    // Checked before anything in it is removed or moved: no planted link is followed.
    core::ensure_own_folder(checkpoints, "the checkpoint folder");
    // A checkpoint.dir elsewhere is under no lock of this run's (a copy of the run folder has
    // the same id): only the temporaries of writers gone are certain to be stale there.
    const bool elsewhere = !config_.checkpoint.dir.empty();
    for (const auto& dir : {output_dir_, checkpoints}) {
      const int removed = dir == checkpoints && elsewhere
                              ? core::remove_stale_temporaries(dir)
                              : core::remove_temporaries_in_locked_folder(dir);
      if (removed > 0) {
        spdlog::info("removed {} temporary file(s) that a killed run left in {}", removed,
                     dir.string());
      }
    }
    if (begun_.replace_earlier) remove_earlier_run(output_dir_, config_);
    if (begun_.resume) {
      // A checkpoint from outside the run's folder (the run it began from, an abandoned branch's
      // folder) begins a history of its own: every checkpoint there is of another.
      std::error_code ec;
      const bool own = std::filesystem::weakly_canonical(begun_.resume->parent_path(), ec) ==
                       std::filesystem::weakly_canonical(checkpoints, ec);
      set_aside_abandoned_branch(output_dir_, checkpoints,
                                 own ? std::make_pair(start_.epoch, start_.batches_done)
                                     : std::make_pair(int64_t{-1}, int64_t{-1}));
    }
    write_run_file(output_dir_, begun_.run);
    write_run_state(output_dir_, RunState::kRunning);
    files_written_ = true;
    const nlohmann::json config = config::to_json(config_);
    core::write_file_atomic(output_dir_ / "config.json", config.dump(2) + "\n");
    logs_.add(metrics_jsonl(output_dir_, result_.epochs));
    logs_.add(metrics_csv(output_dir_, result_.epochs));
    if (config_.log.tensorboard) {
      logs_.add(std::make_unique<TensorBoardLog>(output_dir_,
                                                 LogStart{global_step_, result_.epochs}, config));
    }
  }

  void resume_from(const StartFile& checkpoint) {
    start_ = read_checkpoint(checkpoint.path, checkpoint.file, config_, *s_.backend, *s_.optimizer);
    start_.run_id = begun_.run.run_id;  // the folder's, which its checkpoints from now on carry
    result_.epochs = start_.epochs;
    watcher_.restore(start_.early_stopping, start_.best_weights);
    s_.scaler.restore(start_.scaler);
    global_step_ = start_.global_step;
    spdlog::info("resumed from {}: epoch {}, batch {} (optimizer step {})",
                 checkpoint.path.string(), start_.epoch + 1, start_.batches_done, global_step_);
  }

  // train.max_steps optimizer steps taken: the run ends after this epoch's evaluation.
  bool steps_used_up() const {
    return config_.train.max_steps > 0 && global_step_ >= config_.train.max_steps;
  }

  Progress progress(int64_t epoch, int64_t batches_done, const TrainingSums& partial) const {
    Progress p;
    p.run_id = begun_.run.run_id;
    p.epoch = epoch;
    p.batches_done = batches_done;
    p.global_step = global_step_;
    p.partial = partial;
    p.epochs = result_.epochs;
    p.early_stopping = watcher_.state();
    p.best_weights = watcher_.best_weights();
    p.scaler = s_.scaler.state();
    return p;
  }

  // checkpoint.every_steps: the epoch so far, its sums reduced over the ranks as a preemption's
  // checkpoint holds them (a collective: every rank comes here after the same steps).
  void checkpoint_within(int64_t epoch, const EpochOutcome& so_far, const DeviceSums& sums,
                         double seconds) {
    const int64_t batches_done = so_far.m.batches;
    checkpoints_.within_epoch(
        epoch, batches_done, global_step_,
        [&] {
          EpochOutcome snapshot = so_far;
          snapshot.preempted = true;  // sums, not means
          snapshot.sums.train_sec += seconds;
          reduce_epoch(*s_.backend, sums, snapshot);
          return progress(epoch, batches_done, snapshot.sums);
        },
        *s_.backend, *s_.optimizer);
  }

  [[noreturn]] void stop_for_preemption(int64_t epoch, const EpochOutcome& outcome) {
    const EpochMetrics& m = outcome.m;
    const auto path =
        checkpoints_.save(checkpoint_name(epoch, m.batches),
                          progress(epoch, m.batches, outcome.sums), *s_.backend, *s_.optimizer);
    // No rank exits before rank 0 has written it: a launcher may stop the rest when one exits
    // (srun --kill-on-bad-exit).
    if (writer_) record_state(RunState::kPreempted);
    std::vector<double> barrier = {0};
    s_.backend->all_reduce_sum(barrier);
    throw preempted(m, s_.train_loader->batches_per_epoch(), path, writer_, begun_);
  }

  // Evaluates a finished epoch, reports it, checkpoints; false when early stopping ends the run.
  bool record_epoch(EpochMetrics& m) {
    evaluate_epoch(s_, m, live_, config_.train.epochs);
    result_.epochs.push_back(m);
    logs_.epoch(m);
    const EarlyStopWatch::Verdict verdict = watcher_.after_epoch(*s_.backend, m);
    checkpoints_.after_epoch(m.epoch, verdict.improved, steps_used_up(),
                             progress(m.epoch, 0, TrainingSums{}), *s_.backend, *s_.optimizer);
    return !verdict.stop;
  }

  void finish() {
    RunSummary& summary = result_.summary;
    summary = summarize(result_.epochs);
    for (const auto& line : watcher_.finish(*s_.backend, result_.epochs, summary)) {
      if (chatty_) console_ << line << std::endl;
    }
    summary.backend = s_.backend->name();
    for (const auto& d : s_.backend->devices()) summary.devices.push_back(d.str());
    summary.world_size = s_.backend->world_size();
    summary.threads = torch::get_num_threads();
    summary.precision = config::name_of(config_.precision);
    summary.libtorch_version = core::compat::libtorch_version();
    summary.hosts = s_.backend->all_gather_text("summary-host", core::host_name());
    summary.command = begun_.command;
    summary.started_at = core::utc_iso8601(started_at_);
    summary.finished_at = core::utc_iso8601(std::chrono::system_clock::now());
    summary.dptrain_version = DPTRAIN_VERSION;
    if (!writer_) return;
    model::save_state_dict(output_dir_ / "model.pt",
                           named_host_copies(*s_.backend, s_.state_specs));
    // A command line need not be UTF-8: such bytes become U+FFFD.
    core::write_file_atomic(
        output_dir_ / "summary.json",
        to_json(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    write_run_state(output_dir_, RunState::kFinished);
    console_ << format_summary_line(summary.test_acc, summary.sec_per_epoch, devices_) << std::endl;
  }

  const config::Config& config_;
  const std::filesystem::path output_dir_;
  std::ostream& console_;
  Session s_;
  const bool writer_;
  const std::string devices_;
  EarlyStopWatch watcher_;
  Checkpointer checkpoints_;
  const bool chatty_;  // rank 0 prints the epoch lines
  LiveProgress live_;
  const Start begun_;  // how the run was started (train() takes it by reference)
  const std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
  int64_t global_step_ = 0;  // optimizer steps taken since the run began
  Progress start_;
  TrainResult result_;
  RunLogs logs_;  // the console's, and rank 0's files once the run starts
  bool files_written_ = false;
};

}  // namespace

TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console, const distributed::RankInfo& rank, const Start& start) {
  RunLoop loop(config, output_dir, console, rank, start);
  // A checkpoint holds the weights too: a requeued job that began from --init-from resumes.
  loop.begin();
  try {
    return loop.run();
  } catch (const core::Error& e) {
    if (e.code() == core::ErrorCode::kPreempted) throw;
    loop.mark_stopped(e.code() == core::ErrorCode::kInterrupted);
    if (e.code() != core::ErrorCode::kInterrupted) throw;
    // Ctrl-C writes no checkpoint: the run goes on from its newest one.
    throw core::Error(e.code(), e.what(),
                      "the finished epochs are in the run folder's metrics.jsonl; " +
                          resume_hint(start, "from the newest checkpoint", ""));
  } catch (...) {
    loop.mark_stopped(/*interrupted=*/false);
    throw;
  }
}

}  // namespace dptrain::train
