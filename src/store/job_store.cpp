#include "store/job_store.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <c10/util/Logging.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/timer.h"
#include "core/torch_compat.h"
#include "store/client.h"
#include "store/rendezvous_file.h"

namespace dptrain::store {
namespace {

using core::Error;
using core::ErrorCode;

// Runs `work` on a thread of its own and waits `timeout` for it; rethrows its error. A store query
// that is never answered blocks in recv without a timeout of its own, so the thread is left behind
// (holding what `work` captured) when it does not return in time: the rank then ends with an
// error.
template <class Work>
bool finishes_within(Work work, std::chrono::milliseconds timeout) {
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  std::thread([work = std::move(work), finished]() mutable {
    try {
      work();
      finished->set_value();
    } catch (...) {
      finished->set_exception(std::current_exception());
    }
  }).detach();
  if (done.wait_for(timeout) != std::future_status::ready) return false;
  done.get();  // an error of the store's own (a closed connection) is said as that
  return true;
}

// c10's logging off for a scope but for fatal errors: LibTorch 2.x's TCPStore client logs every
// failed connection attempt, and the last as an error, with a whole C++ backtrace, where dptrain's
// own error after it says what matters. Not where the user asked for c10's log
// (TORCH_CPP_LOG_LEVEL), nor for LibTorch 1.x, whose client logs no attempt. A process-wide
// setting: it is made on the main thread while a rank joins, before any thread of its own runs.
class QuietC10Log {
 public:
  QuietC10Log() : level_(FLAGS_caffe2_log_level) {
    if (!core::compat::kStoreSpeaksPre2Protocol && std::getenv("TORCH_CPP_LOG_LEVEL") == nullptr) {
      FLAGS_caffe2_log_level = std::max(level_, 3);  // c10's FATAL
    }
  }
  ~QuietC10Log() { FLAGS_caffe2_log_level = level_; }
  QuietC10Log(const QuietC10Log&) = delete;
  QuietC10Log& operator=(const QuietC10Log&) = delete;

 private:
  int level_;
};

// A torchrun of the other side of PyTorch 2.0's store protocol, and the way out.
std::string other_protocol_hint() {
  if (core::compat::kStoreSpeaksPre2Protocol) {
    return "export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 before torchrun (the ranks then serve a "
           "store of their own), or build dptrain against that PyTorch";
  }
  return "check MASTER_ADDR and MASTER_PORT, and that torchrun's agent is running; a torchrun of "
         "PyTorch 1.x closes this dptrain's (LibTorch " +
         core::compat::libtorch_version() +
         ") connections: give it --standalone or --rdzv_backend c10d (the ranks then serve a "
         "store of their own), or run the torchrun of the PyTorch dptrain was built against";
}

// Where a store cannot be reached: with LibTorch 2.x, perhaps a torchrun 1.x that closes it.
std::string unreachable_hint() {
  return core::compat::kStoreSpeaksPre2Protocol
             ? "check MASTER_ADDR and MASTER_PORT, and that torchrun's agent is running"
             : other_protocol_hint();
}

// A client of the TCPStore at `host`, or none when it did not connect and answer in time.
// LibTorch 2.x's client asks the server a first query (a ping) and waits for the answer without
// a timeout: a server that accepts and never answers would hold the rank for ever. Its own
// retries end at options.timeout plus up to half of it (their backoff), so that error, which says
// more, comes first where there is one.
c10::intrusive_ptr<c10d::TCPStore> connect_within(const std::string& host,
                                                  const c10d::TCPStoreOptions& options) {
  auto connected = std::make_shared<c10::intrusive_ptr<c10d::TCPStore>>();
  const QuietC10Log quiet;
  const bool in_time = finishes_within(
      [connected, host, options] {
        *connected = c10::make_intrusive<c10d::TCPStore>(host, options);
      },
      options.timeout * 3 / 2 + std::chrono::seconds(1));
  return in_time ? *connected : c10::intrusive_ptr<c10d::TCPStore>();
}

// torchrun's agent store: a c10d TCPStore that torchrun serves.
c10::intrusive_ptr<c10d::Store> torchrun_store(const launch::RankInfo& info, const StorePlan& plan,
                                               std::chrono::milliseconds timeout) {
  // torchrun's agent serves its store before it starts a rank, so a store that answers nothing
  // within 30 s (or the job's timeout, if shorter) never will: parallel.timeout_s's default would
  // keep a user waiting 10 minutes for this error.
  const auto probe = std::min(timeout, std::chrono::milliseconds(30000));
  c10d::TCPStoreOptions options;
  options.port = plan.port;
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = probe;  // connecting; the job's timeout once connected
  core::compat::use_classic_store_server(options);
  const core::Stopwatch waited;
  const std::string where = plan.host + ":" + std::to_string(plan.port);
  try {
    c10::intrusive_ptr<c10d::TCPStore> store = connect_within(plan.host, options);
    if (!store) {
      throw Error(ErrorCode::kDistributed,
                  "rank " + std::to_string(info.rank) + ": torchrun's store at " + where +
                      " did not answer this dptrain's first query within " +
                      std::to_string(probe.count() / 1000) + " s",
                  unreachable_hint());
    }
    store->setTimeout(timeout);
    // torchrun 2.x shares its rendezvous store with the ranks (TORCHELASTIC_USE_AGENT_STORE under
    // --rdzv_backend c10d), which a LibTorch 1.x client cannot speak to: it connects, and its
    // queries go unanswered.
    const auto answers = [store] { store->add("dptrain/agent-store-probe", 0); };
    if (core::compat::kStoreSpeaksPre2Protocol && !finishes_within(answers, probe)) {
      throw Error(ErrorCode::kDistributed,
                  "rank " + std::to_string(info.rank) + ": torchrun's store at " + where +
                      " answered no query within " + std::to_string(probe.count() / 1000) +
                      " s: a torchrun of PyTorch 2.x serves a store protocol that this dptrain "
                      "(LibTorch " +
                      core::compat::libtorch_version() + ") does not speak",
                  other_protocol_hint());
    }
    return store;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const auto elapsed = std::chrono::milliseconds(static_cast<int64_t>(waited.seconds() * 1000));
    throw Error(ErrorCode::kDistributed,
                "rank " + std::to_string(info.rank) + ": could not reach torchrun's store at " +
                    where + " " + core::waited_text(elapsed, probe) + ": " + core::message_of(e),
                unreachable_hint());
  }
}

EndpointSource fixed(const StoreEndpoint& endpoint) {
  return [endpoint](std::string&) { return std::optional<StoreEndpoint>(endpoint); };
}

// Where a rank that does not serve finds the store: where the plan says, or where rank 0's
// rendezvous file says.
EndpointSource endpoint_source(const StorePlan& plan) {
  if (plan.rendezvous_file.empty()) {
    return fixed({plan.host, plan.port, plan.secret});
  }
  const std::filesystem::path file = plan.rendezvous_file;
  return [file](std::string& why) -> std::optional<StoreEndpoint> {
    const auto published = read_published(file, why);
    if (!published) return std::nullopt;
    return StoreEndpoint{"127.0.0.1", published->port, published->secret};
  };
}

}  // namespace

ServedStore::ServedStore(std::unique_ptr<StoreServer> server, std::filesystem::path published)
    : server_(std::move(server)), published_(std::move(published)) {
  if (!published_.empty()) {
    in_use_ = std::make_unique<core::FileLock>(published_, core::FileLock::Mode::kTry);
  }
}

ServedStore::~ServedStore() {
  std::error_code ec;
  if (!published_.empty()) std::filesystem::remove(published_, ec);
}

JobStore open_job_store(const launch::RankInfo& info, const StorePlan& plan,
                        std::chrono::milliseconds timeout) {
  JobStore job;
  job.key_prefix = plan.key_prefix;
  switch (plan.kind) {
    case StorePlan::Kind::kInProcess:
      job.store = c10::make_intrusive<c10d::HashStore>();
      job.connect_again = [store = job.store](std::chrono::milliseconds) { return store; };
      return job;
    case StorePlan::Kind::kTorchrunAgent:
      job.store = torchrun_store(info, plan, timeout);
      job.connect_again = [info, plan](std::chrono::milliseconds request_timeout) {
        return torchrun_store(info, plan, request_timeout);
      };
      return job;
    case StorePlan::Kind::kDptrain:
      break;
  }
  std::string secret = plan.secret;
  if (plan.serve) {
    if (secret.empty()) secret = make_secret();
    std::unique_ptr<StoreServer> server;
    try {
      server = std::make_unique<StoreServer>(plan.bind_address, plan.port, secret);
    } catch (const Error& e) {
      throw Error(ErrorCode::kDistributed, "rank 0: " + std::string(e.what()), e.hint());
    }
    if (!plan.rendezvous_file.empty()) {
      // A rank 0 killed outright (SIGKILL, the OOM killer) left its file, and no one else would
      // remove it.
      if (const int removed =
              remove_abandoned_rendezvous_files(plan.rendezvous_file.parent_path())) {
        spdlog::debug("removed {} rendezvous file(s) of rank 0s that no longer serve", removed);
      }
      publish(plan.rendezvous_file, {server->port(), secret});
    }
    job.served = std::make_unique<ServedStore>(std::move(server), plan.rendezvous_file);
  }
  // Rank 0 reaches its own store on the loopback, which every address it listens on includes.
  const EndpointSource source =
      plan.serve ? fixed({"127.0.0.1", job.served->port(), secret}) : endpoint_source(plan);
  try {
    job.store = c10::make_intrusive<StoreClient>(source, timeout, timeout);
    // Reconnecting gives up as soon as a request would: a store that is gone must not hold up
    // the heartbeat, nor a rank reporting why it stops.
    job.connect_again = [source](std::chrono::milliseconds request_timeout) {
      return c10::make_intrusive<StoreClient>(source, request_timeout, request_timeout);
    };
  } catch (const Error& e) {
    throw Error(ErrorCode::kDistributed, "rank " + std::to_string(info.rank) + ": " + e.what(),
                e.hint());
  }
  return job;
}

}  // namespace dptrain::store
