#include "store/plan.h"

#include <unistd.h>

#include "core/crypto.h"
#include "core/error.h"
#include "store/rendezvous_file.h"

namespace dptrain::store {
namespace {

constexpr size_t kMinSecret = 16;

[[noreturn]] void fail(const launch::RankInfo& info, const std::string& what,
                       const std::string& hint) {
  throw core::Error(core::ErrorCode::kDistributed,
                    "rank " + std::to_string(info.rank) + ": " + what, hint);
}

std::string rank_name(const launch::RankInfo& info) {
  return "rank " + std::to_string(info.rank);
}

const char* const kSecretHint =
    "export DPTRAIN_JOB_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n') before starting "
    "the job, the same on every machine (scripts/slurm/ddp.sbatch does; mpirun: export it, then "
    "mpirun -x DPTRAIN_JOB_SECRET, naming it only, so that it stays off command lines)";

}  // namespace

std::string secret_from_environment(const launch::EnvLookup& env) {
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
  return "";
}

std::string make_secret() {
  return core::hex(core::random_bytes(32));
}

std::string secret_for_job(const launch::EnvLookup& env, bool one_machine, const std::string& who) {
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
  // A digest of its own label, not the handshake's key: one may not be learnt from the other.
  const std::string digest =
      secret.empty() ? "open"
                     : core::hex(core::sha256("dptrain key prefix\n" + secret)).substr(0, 16);
  return "dptrain/" + job_id + "/" + digest + "/" + std::to_string(generation) + "/";
}

StorePlan plan_store(const launch::RankInfo& info, const launch::EnvLookup& env) {
  StorePlan plan;
  plan.secret = secret_from_environment(env);
  // torchrun's restart counts are each agent's own (a node that joins a running job counts from
  // 0), so they cannot name a generation all nodes agree on. Without its agent's store none is
  // needed: each generation gets a store of its own (rank 0's, which ends with it) at the port
  // torchrun picked for the round, which the job id carries.
  const bool own_store_per_round = info.launcher == "torchrun" && !info.store_served_by_launcher;
  plan.key_prefix =
      key_prefix(info.job_id, plan.secret, own_store_per_round ? 0 : info.restart_count);
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
    // A job whose launcher names no id still has one on this machine: its ranks' parent (the
    // process that started them all), so two such jobs never read each other's file.
    const std::string job =
        info.job_id != "none" ? info.job_id : "parent-" + std::to_string(::getppid());
    plan.rendezvous_file =
        rendezvous_file(private_runtime_dir(env), job + "-" + std::to_string(info.restart_count));
    return plan;
  }
  plan.secret = secret_for_job(env, /*one_machine=*/false, rank_name(info));
  return plan;  // bind_address "": every interface
}

}  // namespace dptrain::store
