#include "config/idle_keys.h"

namespace dptrain::config {
namespace {

// How each launcher restarts a job's ranks, for the hint.
std::string restarts_of(const std::string& launcher) {
  if (launcher == "torchrun") return "torchrun's --max_restarts";
  if (launcher == "slurm") return "SLURM's requeue (scripts/slurm/ddp.sbatch)";
  return "requeueing the job";
}

}  // namespace

std::vector<std::string> idle_key_warnings(const Config& config, const std::string& launcher) {
  const ParallelConfig defaults;
  const ParallelConfig& p = config.parallel;
  std::vector<std::string> warnings;
  if (config.data.dataset != Dataset::kFolder && config.data.on_bad_file != BadFiles::kError) {
    warnings.push_back("data.on_bad_file applies to a folder of pictures, and data.dataset is \"" +
                       std::string(name_of(config.data.dataset)) + "\": it is ignored");
  }
  if (p.backend != Backend::kDdp) {
    const std::string backend = std::string(name_of(p.backend));
    const auto idle = [&](const char* key, bool set) {
      if (set) {
        warnings.push_back(std::string(key) +
                           " applies to ddp's ranks, and parallel.backend is \"" + backend +
                           "\": it is ignored");
      }
    };
    idle("parallel.dist_backend", p.dist_backend != defaults.dist_backend);
    idle("parallel.bucket_mb", p.bucket_mb != defaults.bucket_mb);
    idle("parallel.timeout_s", p.timeout_s != defaults.timeout_s);
    idle("parallel.max_restarts", p.max_restarts != defaults.max_restarts);
    idle("parallel.powersgd_rank", p.powersgd_rank != defaults.powersgd_rank);
    idle("parallel.powersgd_start_step", p.powersgd_start_step != defaults.powersgd_start_step);
    idle("parallel.powersgd_min_compression",
         p.powersgd_min_compression != defaults.powersgd_min_compression);
    idle("parallel.local_sgd_warmup_steps",
         p.local_sgd_warmup_steps != defaults.local_sgd_warmup_steps);
    idle("model.sync_batchnorm", config.model.sync_batchnorm);  // dp refuses it (load.cpp)
    return warnings;
  }
  const bool powersgd_tuned = p.powersgd_rank != defaults.powersgd_rank ||
                              p.powersgd_start_step != defaults.powersgd_start_step ||
                              p.powersgd_min_compression != defaults.powersgd_min_compression;
  if (powersgd_tuned && p.grad_compression != GradCompression::kPowerSgd) {
    warnings.push_back(
        "parallel.powersgd_* apply to parallel.grad_compression \"powersgd\", "
        "and it is \"" +
        std::string(name_of(p.grad_compression)) + "\": they are ignored");
  }
  if (p.local_sgd_warmup_steps != defaults.local_sgd_warmup_steps && p.local_sgd == 0) {
    warnings.push_back(
        "parallel.local_sgd_warmup_steps applies to parallel.local_sgd, which is 0: it is ignored");
  }
  if (p.max_restarts != defaults.max_restarts && launcher != "dptrain") {
    warnings.push_back(
        launcher == "none"
            ? std::string("parallel.max_restarts applies to ranks that dptrain's launcher starts, "
                          "and this job's one rank runs in this process: it is ignored")
            : "parallel.max_restarts applies to ranks that dptrain's launcher starts, and " +
                  launcher + " started these: it is ignored (restart them with " +
                  restarts_of(launcher) + ")");
  }
  return warnings;
}

}  // namespace dptrain::config
