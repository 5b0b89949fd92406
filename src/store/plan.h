// Which rendezvous store a rank uses and how only the job reaches it, decided from what its
// launcher said (launch::RankInfo) and the environment. Pure, so tests need no sockets:
//
// - a world of one without a launcher: an in-process store;
// - torchrun serving its agent's store (TORCHELASTIC_USE_AGENT_STORE): torchrun's TCPStore, which
//   dptrain can neither bind nor authenticate: its keys carry the job secret's digest when there is
//   a secret, so that they cannot be guessed;
// - otherwise dptrain's own store (store/server.h), which answers only clients that
// prove the
//   job's secret (DPTRAIN_JOB_SECRET):
//   - started by dptrain's launcher: the launcher serves it and hands its ranks the secret;
//   - all ranks on one machine (SLURM, mpirun, torchrun without an agent store): rank 0 listens on
//     the loopback at a port the system picks, and publishes port and secret (one it makes when
//     the environment gives none) in a file of the user's private runtime folder, named after the
//     job (store/rendezvous_file.h): no port to collide, no address but the loopback;
//   - across machines: rank 0 listens on every interface at MASTER_PORT; the secret must come
//     from the environment, else a distributed error says how to give one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "launch/environment.h"

namespace dptrain::store {

// The variable that carries a job's secret to its ranks.
constexpr const char* kSecretVariable = "DPTRAIN_JOB_SECRET";

struct StorePlan {
  enum class Kind { kInProcess, kTorchrunAgent, kDptrain };
  Kind kind = Kind::kInProcess;
  bool serve = false;        // kDptrain: this rank (rank 0) serves the store
  std::string bind_address;  // where it listens: "127.0.0.1", or "" for every interface
  std::string host;          // where it is (kTorchrunAgent; kDptrain without a rendezvous file)
  uint16_t port = 0;
  // kDptrain on one machine without dptrain's launcher: where rank 0 publishes port and secret.
  std::filesystem::path rendezvous_file;
  std::string secret;      // the job's; empty where rank 0 makes one (rendezvous file)
  std::string key_prefix;  // of every key dptrain sets (see key_prefix())
};

// The secret the environment gives (DPTRAIN_JOB_SECRET), or "". A distributed error when it is too
// short to be one.
std::string secret_from_environment(const launch::EnvLookup& env);
// 32 random bytes in hex, from the system's random source.
std::string make_secret();
// The secret of a job that dptrain serves the store of: the environment's, else for a job on one
// machine a new one; a distributed error naming `who` and saying how to give one when the job
// spans machines and the environment has none.
std::string secret_for_job(const launch::EnvLookup& env, bool one_machine, const std::string& who);
// "dptrain/<job id>/<16 hex digits of a digest of the secret, or "open">/<generation>/":
// jobs sharing a store (torchrun's) never meet, nor do a job's restarts (generations), and
// without the secret no key can be guessed.
std::string key_prefix(const std::string& job_id, const std::string& secret, int generation);

StorePlan plan_store(const launch::RankInfo& info, const launch::EnvLookup& env);

}  // namespace dptrain::store
