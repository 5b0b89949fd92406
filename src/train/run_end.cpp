#include "train/run_end.h"

#include "core/interrupt.h"
#include "core/torch_compat.h"
#include "core/torch_info.h"
#include "core/wall_clock.h"
#include "kernels/kernel_isa.h"
#include "train/epoch_state.h"

namespace dptrain::train {
namespace {

// How to go on after an interrupted or preempted run (from `where`): the exact command where
// rank 0 knows it.
std::string resume_hint(const run::RunOrigin& origin, const std::string& where,
                        const std::string& checkpoint) {
  if (!origin.resume_command.empty()) return "go on " + where + " with: " + origin.resume_command;
  return "run the same command with --resume auto" +
         (checkpoint.empty() ? std::string() : " (or --resume " + checkpoint + ")") + " to go on " +
         where;
}

}  // namespace

core::Error preempted_error(const run::EpochMetrics& m, int64_t batches,
                            const std::filesystem::path& path, bool writer,
                            const run::RunOrigin& origin) {
  const std::string where = where_in_epoch(m.epoch, m.batches, batches);
  return core::Error(
      core::ErrorCode::kPreempted,
      "stopped by " + core::preemption_signal_name() + " (a preemption notice) " + where + "; " +
          (writer ? "checkpoint written to " + path.string() : "rank 0 wrote the checkpoint"),
      resume_hint(origin, "from there", path.string()));
}

core::Error interrupted_error(const core::Error& e, const run::RunOrigin& origin) {
  return core::Error(e.code(), e.what(),
                     "the finished epochs are in the run folder's metrics.jsonl; " +
                         resume_hint(origin, "from the newest checkpoint", ""));
}

void describe_run(parallel::Backend& backend, const config::Config& config,
                  const run::RunOrigin& origin, std::chrono::system_clock::time_point started_at,
                  run::RunSummary& summary) {
  summary.backend = backend.name();
  for (const auto& d : backend.devices()) summary.devices.push_back(d.str());
  summary.world_size = backend.world_size();
  summary.threads = torch::get_num_threads();
  summary.precision = config::name_of(config.precision);
  summary.libtorch_version = core::compat::libtorch_version();
  summary.cpu_kernels = kernels::kernel_isa().level + ", ATen " + core::aten_cpu_capability();
  summary.hosts = backend.all_gather_text("summary-host", core::host_name());
  summary.command = origin.command;
  summary.started_at = core::utc_iso8601(started_at);
  summary.finished_at = core::utc_iso8601(std::chrono::system_clock::now());
  summary.dptrain_version = DPTRAIN_VERSION;
}

}  // namespace dptrain::train
