#include "dist/store_plan.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/sha256.h"
#include "dist/rendezvous_file.h"

namespace dptrain::dist {
namespace {

constexpr size_t kMinSecret = 16;

[[noreturn]] void fail(const RankInfo& info, const std::string& what, const std::string& hint) {
  throw core::Error(core::ErrorCode::kDistributed,
                    "rank " + std::to_string(info.rank) + ": " + what, hint);
}

std::string rank_name(const RankInfo& info) {
  return "rank " + std::to_string(info.rank);
}

const char* const kSecretHint =
    "export DPTRAIN_JOB_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n') before starting "
    "the job, the same on every machine (scripts/slurm/ddp.sbatch does; mpirun passes Open MPI's "
    "own; torchrun and --nnodes need it exported on each machine)";

}  // namespace

std::string secret_from_environment(const EnvLookup& env) {
  if (const auto secret = env(kSecretVariable)) {
    if (secret->size() < kMinSecret) {
      throw core::Error(core::ErrorCode::kDistributed,
                        std::string(kSecretVariable) + " holds " + std::to_string(secret->size()) +
                            " characters, too few to be a secret (at least " +
                            std::to_string(kMinSecret) + ")",
                        kSecretHint);
    }
    return *secret;
  }
  // Open MPI makes a random key per job for its transports and hands it to every rank.
  return env("OMPI_MCA_orte_precondition_transports").value_or("");
}

std::string make_secret() {
  uint8_t bytes[32];
  for (size_t done = 0; done < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + done, sizeof bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw core::Error(
          core::ErrorCode::kDistributed,
          std::string("no random bytes for the job's secret: ") + std::strerror(errno),
          "this Linux lacks getrandom(2)");
    }
    done += static_cast<size_t>(n);
  }
  core::Sha256Digest as_digest{};
  std::memcpy(as_digest.data(), bytes, sizeof bytes);
  return core::hex(as_digest);
}

std::string secret_for_job(const EnvLookup& env, bool one_machine, const std::string& who) {
  std::string secret = secret_from_environment(env);
  if (!secret.empty()) return secret;
  if (one_machine) return make_secret();
  throw core::Error(core::ErrorCode::kDistributed,
                    who +
                        ": the ranks of a job across machines must share a secret to reach its "
                        "rendezvous store, and " +
                        std::string(kSecretVariable) + " is not set",
                    kSecretHint);
}

std::string key_prefix(const std::string& job_id, const std::string& secret, int generation) {
  const std::string digest =
      secret.empty() ? "open" : core::hex(core::sha256(secret)).substr(0, 16);
  return "dptrain/" + job_id + "/" + digest + "/" + std::to_string(generation) + "/";
}

StorePlan plan_store(const RankInfo& info, const EnvLookup& env) {
  StorePlan plan;
  plan.secret = secret_from_environment(env);
  plan.key_prefix = key_prefix(info.job_id, plan.secret, info.restart_count);
  if (info.master_addr.empty()) {
    if (info.world_size != 1) {
      fail(info, "no rendezvous address for " + std::to_string(info.world_size) + " ranks",
           "set MASTER_ADDR and MASTER_PORT");
    }
    return plan;  // kInProcess
  }
  plan.host = info.master_addr;
  plan.port = info.master_port;
  if (info.store_served_by_launcher && info.launcher != "dptrain") {
    plan.kind = StorePlan::Kind::kTorchrunAgent;
    return plan;
  }
  plan.kind = StorePlan::Kind::kDptrain;
  if (info.launcher == "dptrain") {
    if (plan.secret.empty()) {
      fail(info, "dptrain's launcher gave no job secret", "start the ranks with dptrain itself");
    }
    return plan;  // the launcher serves
  }
  plan.serve = info.rank == 0;
  if (info.one_machine()) {
    plan.bind_address = "127.0.0.1";
    plan.port = 0;
    plan.rendezvous_file = rendezvous_file(private_runtime_dir(env),
                                           info.job_id + "-" + std::to_string(info.restart_count));
    return plan;
  }
  plan.secret = secret_for_job(env, /*one_machine=*/false, rank_name(info));
  return plan;  // bind_address "": every interface
}

}  // namespace dptrain::dist
