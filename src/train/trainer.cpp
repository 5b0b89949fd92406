#include "train/trainer.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <optional>
#include <ostream>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/terminal.h"
#include "core/timer.h"
#include "model/state_dict.h"
#include "run/checkpoints.h"
#include "run/layout.h"
#include "run/metrics_files.h"
#include "run/run_files.h"
#include "run/run_log.h"
#include "run/tensorboard_log.h"
#include "serialize/torch_file.h"
#include "train/checkpoint_io.h"
#include "train/console_log.h"
#include "train/early_stopping.h"
#include "train/epoch_state.h"
#include "train/evaluate.h"
#include "train/live_progress.h"
#include "train/model_file.h"
#include "train/parameters.h"
#include "train/precision.h"
#include "train/preemption_poll.h"
#include "train/report.h"
#include "train/run_end.h"
#include "train/session.h"
#include "train/start_file.h"
#include "train/step.h"

namespace dptrain::train {
namespace {

// One run from its first (or resumed) epoch to its files. Read from run() down: each epoch is
// trained (train_epoch), evaluated (evaluate_epoch), logged and checkpointed (end_epoch); a
// preemption stops it with a checkpoint; finish() writes the results.
class Training {
 public:
  Training(const config::Config& config, const std::filesystem::path& output_dir,
           std::ostream& console, const launch::RankInfo& rank, const run::RunOrigin& origin)
      : s_(build_session(config, rank)),
        config_(s_.config),
        console_(console),
        writer_(s_.backend->rank() == 0),
        origin_(origin),
        files_(output_dir, config_, origin_),
        watcher_(config_.early_stopping, config_.checkpoint.save_best),
        checkpoints_(config_, run::checkpoint_dir(config_, output_dir, origin.run.run_id), writer_),
        // -q (log.level warn and above) leaves stdout d2l's final line alone.
        chatty_(writer_ && config_.log.level <= config::LogLevel::kInfo),
        live_(console, chatty_ && progress_wanted(config_.log.progress)) {
    logs_.add(std::make_unique<ConsoleLog>(console, live_, chatty_, config_.train.epochs));
    spdlog::info("training {} on {} ({} backend, {} threads), {} batches per epoch, output {}",
                 config_.model.name, s_.backend->devices_text(), s_.backend->name(),
                 torch::get_num_threads(), s_.train_loader->batches_per_epoch(),
                 output_dir.string());
  }

  // Where the run begins: rank 0's checkpoint to resume, or else its weights to start from, each
  // read by every rank after checking that they all hold its bytes (train/start_file.h).
  void begin() {
    // Checkpoints of local SGD and PowerSGD hold each rank's own state too.
    const uint64_t largest = serialize::largest_file_bytes(model::decode_limits(s_.state_specs)) +
                             run::rank_states_bound(s_.state_specs, s_.backend->world_size());
    std::optional<core::Error> refused;
    try {
      if (const auto checkpoint = agree_on_start_file(*s_.backend, "resume", origin_.resume,
                                                      "the checkpoint to resume", largest)) {
        resume_from(*checkpoint);
      } else if (const auto weights = agree_on_start_file(*s_.backend, "init", origin_.init_from,
                                                          "the weights to start from", largest)) {
        copy_into_model(*s_.backend, read_model_file(weights->path, weights->file, s_.state_specs));
        spdlog::info("initial weights from {}", weights->path.string());
      }
    } catch (const core::Error& e) {
      if (s_.backend->world_size() == 1) throw;
      refused = e;  // each rank reads its own row of a checkpoint: the others must hear of it
    } catch (const std::exception& e) {  // LibTorch's (a device out of memory), bad_alloc
      if (s_.backend->world_size() == 1) throw;
      refused = core::Error(core::ErrorCode::kRuntime,
                            "could not take the run's start: " + std::string(e.what()));
    }
    agree_that_every_rank_began(refused);
    s_.backend->start_at_step(global_step_);
  }

  // Rank 0 moves an abandoned branch aside and rewrites the run's files once it starts them:
  // only after every rank took its start. A rank that refused it throws its own error; every
  // other throws one of the same kind naming it, and the folder stays as it was.
  void agree_that_every_rank_began(const std::optional<core::Error>& refused) {
    if (s_.backend->world_size() == 1) return;
    std::vector<double> codes(static_cast<size_t>(s_.backend->world_size()), 0.0);
    if (refused)
      codes[static_cast<size_t>(s_.backend->rank())] = static_cast<int>(refused->code()) + 1;
    try {
      s_.backend->all_reduce_sum(codes);
    } catch (const core::Error&) {
      if (refused) throw *refused;  // its own reason, not the peers' going
      throw;
    }
    if (refused) throw *refused;
    for (size_t r = 0; r < codes.size(); ++r) {
      if (codes[r] == 0) continue;
      throw core::Error(static_cast<core::ErrorCode>(static_cast<int>(codes[r]) - 1),
                        "rank " + std::to_string(r) +
                            " could not take the run's start (its error "
                            "says why): no rank trained, and the run folder was left as it was",
                        "see rank " + std::to_string(r) + "'s error above");
    }
  }

  TrainResult run() {
    if (writer_) start_files();
    for (int64_t epoch = resumed_.epoch; epoch < config_.train.epochs && !steps_used_up();
         ++epoch) {
      const bool rest_of_epoch = epoch == resumed_.epoch && resumed_.batches_done > 0;
      EpochState e = train_epoch(epoch, rest_of_epoch ? &resumed_ : nullptr);
      if (e.preempted) stop_for_preemption(e);
      evaluate_epoch(e.m);
      if (!end_epoch(e.m)) break;
    }
    finish();
    return result_;
  }

  // A run that ends in an error says so in state.json (a preempted one already has).
  void mark_stopped(bool interrupted) noexcept {
    if (!writer_) return;
    files_.record_state(interrupted ? run::RunState::kInterrupted : run::RunState::kFailed);
  }

 private:
  // One pass over the training set, or the rest of one that a preemption cut short (`resume`),
  // in optimizer steps of s_.accumulate batches.
  EpochState train_epoch(int64_t epoch, const run::ResumePoint* resume) {
    parallel::Backend& backend = *s_.backend;
    EpochState e(epoch, backend, resume, global_step_);
    const int64_t batches = s_.train_loader->batches_per_epoch();
    backend.set_training(true);
    s_.train_loader->start_epoch_at(epoch, e.m.batches);  // after those trained on before
    e.start_clock();
    const std::vector<torch::Tensor> params = backend.optimizer_parameters();
    while (auto batch = s_.train_loader->next()) {
      const int64_t index = e.m.batches % s_.accumulate;
      const int64_t group = group_size(e.m.batches - index, batches, s_.accumulate);
      const MicroBatchOutput mb =
          accumulate_micro_batch(s_, batch->images, batch->labels, index, group);
      e.add(mb, *batch);
      core::throw_if_interrupted(where_in_epoch(e.m.epoch, e.m.batches, batches));
      if (index + 1 < group) continue;

      e.m.lr = s_.schedule->at(global_step_);
      if (!take_optimizer_step(s_, params, e.m.lr)) ++e.tally.skipped_steps;
      ++global_step_;
      backend.after_optimizer_step(global_step_);
      report_step(e, batches, mb);
      if (config_.train.max_steps > 0 && global_step_ >= config_.train.max_steps) break;
      if (e.m.batches < batches) checkpoint_within(e);
      if (preemption_.voted(backend)) {
        e.preempted = true;
        break;
      }
    }
    live_.clear();
    e.finish(backend, global_step_, s_.scaler);
    measure_memory(backend, *s_.optimizer, e.m);
    return e;
  }

  // The validation (when held out) and test figures of the parameters as they are now, with the
  // live line while they are computed.
  void evaluate_epoch(run::EpochMetrics& m) {
    core::Stopwatch timer;
    const AutocastScope autocast(s_.backend->devices(), s_.autocast);
    const auto progress = [&](const std::string& what) {
      return [this, &timer, &m, what](int64_t batch, int64_t batches) {
        if (live_.due()) {
          live_.update(
              EvalProgress{m.epoch, config_.train.epochs, what, batch, batches, timer.seconds()});
        }
      };
    };
    if (s_.val_loader) {
      const EvalResult val = evaluate(*s_.backend, *s_.val_loader, s_.classes(), progress("val"));
      m.has_val = true;
      m.val_loss = val.loss;
      m.val_acc = val.accuracy;
    }
    const EvalResult test = evaluate(*s_.backend, *s_.test_loader, s_.classes(), progress("test"));
    live_.clear();
    m.test_loss = test.loss;
    m.test_acc = test.accuracy;
    m.test_correct = test.correct;
    m.test_samples = test.samples;
    m.eval_sec = timer.seconds();
  }

  // Reports an evaluated epoch and checkpoints; false when early stopping ends the run.
  bool end_epoch(const run::EpochMetrics& m) {
    result_.epochs.push_back(m);
    logs_.epoch(m);
    const EarlyStopWatch::Verdict verdict = watcher_.after_epoch(*s_.backend, m);
    checkpoints_.after_epoch(m.epoch, global_step_, verdict.improved, steps_used_up(),
                             gather(resume_point(m.epoch, 0, run::EpochTally{})));
    return !verdict.stop;
  }

  // The step record every log.every_steps optimizer steps, and the live line when it is due.
  void report_step(const EpochState& e, int64_t batches, const MicroBatchOutput& mb) {
    const int64_t every = config_.log.every_steps;
    if (every > 0 && global_step_ % every == 0) {
      logs_.step({e.m.epoch, e.m.batches, batches, global_step_, mb.loss.item<double>(), e.m.lr});
    }
    if (live_.due()) live_.update(e.progress_figures(config_.train.epochs, batches));
  }

  // The run's first files, once it can start (a start that fails leaves its folder as it was),
  // and the metric sinks that write the rest.
  void start_files() {
    files_.begin(origin_.resume ? std::optional<run::Position>(resumed_.position()) : std::nullopt);
    logs_.add(run::metrics_jsonl(files_.dir(), result_.epochs));
    logs_.add(run::metrics_csv(files_.dir(), result_.epochs));
    if (config_.log.tensorboard) {
      logs_.add(std::make_unique<run::TensorBoardLog>(
          files_.dir(), run::LogStart{global_step_, result_.epochs}, config::to_json(config_)));
    }
  }

  // Decoded and checked whole before anything is applied (train/checkpoint_io.h).
  void resume_from(const StartFile& checkpoint) {
    run::CheckpointContents contents = run::read_checkpoint_file(
        checkpoint.path, checkpoint.file, config_, s_.backend->parameters(), s_.backend->buffers(),
        rank_state_spec(*s_.backend));
    check_same_data(checkpoint.path, contents.point.data_listing);
    check_fits_epoch(checkpoint.path, contents.point.batches_done);
    resumed_ = apply_checkpoint(std::move(contents), checkpoint.path, *s_.backend, *s_.optimizer);
    resumed_.run_id = origin_.run.run_id;  // the folder's, which its checkpoints from now carry
    result_.epochs = resumed_.epochs;
    watcher_.restore(resumed_.early_stopping, resumed_.best_weights);
    s_.scaler.restore(resumed_.scaler);
    global_step_ = resumed_.global_step;
    spdlog::info("resumed from {}: epoch {}, batch {} (optimizer step {})",
                 checkpoint.path.string(), resumed_.epoch + 1, resumed_.batches_done, global_step_);
  }

  // A folder whose pictures were added, removed or renamed since the checkpoint numbers and
  // shuffles its samples otherwise: resuming would go on with another epoch's order.
  void check_same_data(const std::filesystem::path& path, const std::string& listing) const {
    if (listing == s_.data_listing) return;
    throw core::Error(
        core::ErrorCode::kData,
        path.string() + ": a checkpoint of a run over " +
            (listing.empty()
                 ? std::string("IDX files")
                 : "a folder listed otherwise (listing " + listing.substr(0, 12) + "...)") +
            ", and data.dir " + core::printable(config_.data.dir) + " lists as " +
            (s_.data_listing.empty() ? std::string("IDX files")
                                     : s_.data_listing.substr(0, 12) + "...") +
            " now: " +
            (listing.empty() || s_.data_listing.empty()
                 ? std::string("other data")
                 : std::string("pictures were added, removed or renamed (in train/ or test/)")) +
            ", and its samples would be numbered and shuffled otherwise",
        "put the folder back as it was to resume, or start a new run from the checkpoint's "
        "weights (train --init-from " +
            path.string() + ")");
  }

  // A checkpoint taken within an epoch longer than this run's (its data settings changed, or the
  // file is damaged) would have the loop skip batches that are not there.
  void check_fits_epoch(const std::filesystem::path& path, int64_t batches_done) const {
    const int64_t batches = s_.train_loader->batches_per_epoch();
    if (batches_done <= batches) return;
    throw core::Error(core::ErrorCode::kConfig,
                      path.string() + ": a checkpoint taken after batch " +
                          std::to_string(batches_done) + " of an epoch, but this run's epochs " +
                          "have " + std::to_string(batches) + " batches",
                      "resume with the settings it was written with (data.*, "
                      "train.limit_train_batches, and parallel.devices and the node count, which "
                      "split each epoch between ranks), or from a checkpoint taken at an epoch's "
                      "end");
  }

  // train.max_steps optimizer steps taken: the run ends after this epoch's evaluation.
  bool steps_used_up() const {
    return config_.train.max_steps > 0 && global_step_ >= config_.train.max_steps;
  }

  // Where the run stands after `batches_done` batches of `epoch` (0-based), their sums `partial`.
  run::ResumePoint resume_point(int64_t epoch, int64_t batches_done,
                                const run::EpochTally& partial) const {
    run::ResumePoint p;
    p.run_id = origin_.run.run_id;
    p.epoch = epoch;
    p.batches_done = batches_done;
    p.global_step = global_step_;
    p.partial = partial;
    p.epochs = result_.epochs;
    p.early_stopping = watcher_.state();
    p.best_weights = watcher_.best_weights();
    p.scaler = s_.scaler.state();
    p.data_listing = s_.data_listing;
    return p;
  }

  run::Checkpointer::Gather gather(run::ResumePoint point) {
    return [this, point = std::move(point)] {
      return gather_checkpoint(point, *s_.backend, *s_.optimizer);
    };
  }

  // checkpoint.every_steps: the epoch so far, its sums reduced over the ranks as a preemption's
  // checkpoint holds them (a collective: every rank comes here after the same steps).
  void checkpoint_within(const EpochState& e) {
    checkpoints_.within_epoch(e.index, e.m.batches, global_step_, [&] {
      const run::EpochTally so_far = e.reduced_so_far(*s_.backend);
      return gather_checkpoint(resume_point(e.index, e.m.batches, so_far), *s_.backend,
                               *s_.optimizer);
    });
  }

  [[noreturn]] void stop_for_preemption(const EpochState& e) {
    const auto path = checkpoints_.save(run::checkpoint_name(e.index, e.m.batches),
                                        gather(resume_point(e.index, e.m.batches, e.tally)));
    // No rank exits before rank 0 has written it: a launcher may stop the rest when one exits
    // (srun --kill-on-bad-exit).
    if (writer_) files_.record_state(run::RunState::kPreempted);
    std::vector<double> barrier = {0};
    s_.backend->all_reduce_sum(barrier);
    throw preempted_error(e.m, s_.train_loader->batches_per_epoch(), path, writer_, origin_);
  }

  void finish() {
    run::RunSummary& summary = result_.summary;
    summary = run::summarize(result_.epochs);
    for (const auto& line : watcher_.finish(*s_.backend, result_.epochs, summary)) {
      if (chatty_) console_ << line << std::endl;
    }
    describe_run(*s_.backend, config_, origin_, started_at_, summary);
    summary.skipped_files = s_.skipped_files;
    if (!writer_) return;
    model::save_state_dict(files_.dir() / run::kModelFile,
                           named_host_copies(*s_.backend, s_.state_specs),
                           config::to_json(config_).dump());
    files_.finish(summary);
    console_ << format_summary_line(summary.test_acc, summary.sec_per_epoch,
                                    s_.backend->devices_text())
             << std::endl;
  }

  Session s_;
  // The run's resolved config with what the data is filled in (config.json, checkpoints).
  const config::Config& config_;
  std::ostream& console_;
  const bool writer_;
  const run::RunOrigin origin_;  // train() takes it by reference
  run::RunFiles files_;          // rank 0's
  EarlyStopWatch watcher_;
  run::Checkpointer checkpoints_;
  const bool chatty_;  // rank 0 prints the epoch lines
  LiveProgress live_;
  const std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
  int64_t global_step_ = 0;  // optimizer steps taken since the run began
  PreemptionPoll preemption_;
  run::ResumePoint resumed_;  // where a resumed run went on from (epoch 0 for a new one)
  TrainResult result_;
  run::RunLogs logs_;  // the console's, and rank 0's files once the run starts
};

}  // namespace

TrainResult train(const config::Config& config, const std::filesystem::path& output_dir,
                  std::ostream& console, const launch::RankInfo& rank,
                  const run::RunOrigin& origin) {
  Training training(config, output_dir, console, rank, origin);
  // A checkpoint holds the weights too: a requeued job that began from --init-from resumes.
  training.begin();
  try {
    return training.run();
  } catch (const core::Error& e) {
    if (e.code() == core::ErrorCode::kPreempted) throw;
    training.mark_stopped(e.code() == core::ErrorCode::kInterrupted);
    if (e.code() != core::ErrorCode::kInterrupted) throw;
    throw interrupted_error(e, origin);  // Ctrl-C writes no checkpoint
  } catch (...) {
    training.mark_stopped(/*interrupted=*/false);
    throw;
  }
}

}  // namespace dptrain::train
