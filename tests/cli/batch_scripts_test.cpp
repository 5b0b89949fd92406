// scripts/slurm/'s batch scripts decide whether an attempt is requeued from dptrain's exit status.
// Run here with stand-ins for srun, scontrol and dptrain that end as a real attempt would, so
// that the policy the scripts state is the one they follow: a preemption, whether dptrain wrote
// its checkpoint (75) or the notice killed it while LibTorch was still loading (143, 138), is
// requeued without counting as a crash; a mistake is never requeued.
#include "support/catch.h"

#include <sys/stat.h>

#include "core/fs.h"
#include "support/fixtures.h"

using namespace dptrain::testing;

namespace {

void write_program(const std::filesystem::path& path, const std::string& body) {
  write_text(path, "#!/bin/sh\n" + body + "\n");
  ::chmod(path.c_str(), 0755);
}

// Whether `script` asked scontrol to requeue the job after dptrain (or srun) ended with `status`,
// in the job's first attempt and with no crash requeues allowed.
bool requeued(const std::string& script, int status) {
  TempDir dir;
  const auto bin = dir / "bin";
  std::filesystem::create_directories(bin);
  write_program(bin / "srun", "exit " + std::to_string(status));
  write_program(bin / "scontrol", "echo \"$@\" >> '" + (dir / "scontrol.log").string() + "'");
  write_program(dir / "dptrain", "exit " + std::to_string(status));
  const auto result = run_program(
      "/bin/bash", "'" + std::string(DPTRAIN_SOURCE_DIR) + "/scripts/slurm/" + script + "'",
      dir.path(),
      {"PATH=" + bin.string() + ":/usr/bin:/bin", "DPTRAIN_BIN=" + (dir / "dptrain").string(),
       "DPTRAIN_HOME=" + std::string(DPTRAIN_SOURCE_DIR), "DPTRAIN_RUNS=" + (dir / "runs").string(),
       "DPTRAIN_MAX_REQUEUES=0", "SLURM_JOB_ID=41", "SLURM_RESTART_COUNT=0",
       "SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_JOB_ID=40"});
  INFO(script << " after status " << status << ": " << result.out << result.err);
  CHECK(result.status == status);
  if (!std::filesystem::exists(dir / "scontrol.log")) return false;
  CHECK(dptrain::core::read_text_file(dir / "scontrol.log") == "requeue 41\n");
  return true;
}

}  // namespace

TEST_CASE(
    "the batch scripts requeue a preemption, even one that killed dptrain before main, and "
    "never a mistake",
    "[cli][slurm]") {
  for (const std::string script : {"ddp.sbatch", "sweep.sbatch"}) {
    INFO(script);
    CHECK(requeued(script, 75));   // preempted, with a checkpoint
    CHECK(requeued(script, 143));  // SIGTERM while LibTorch loaded
    CHECK(requeued(script, 138));  // SIGUSR1 the same
    CHECK_FALSE(requeued(script, 0));
    CHECK_FALSE(requeued(script, 3));    // a bad config
    CHECK_FALSE(requeued(script, 4));    // missing data
    CHECK_FALSE(requeued(script, 137));  // SIGKILL: a crash, and no crash requeues are left
  }
}
