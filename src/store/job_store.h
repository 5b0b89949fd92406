// The rendezvous store a rank joins, made as its plan says (store/plan.h): served here
// when this is rank 0 of a job without a launcher's store, else reached where it is.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "core/file_lock.h"
#include "launch/environment.h"
#include "store/plan.h"
#include "store/server.h"

namespace dptrain::store {

// The store this rank serves, and the rendezvous file that says where it is, if any: removed when
// the store stops, so that no rank of a later job reads a dead store's address.
class ServedStore {
 public:
  ServedStore(std::unique_ptr<StoreServer> server, std::filesystem::path published);
  ~ServedStore();
  ServedStore(const ServedStore&) = delete;
  ServedStore& operator=(const ServedStore&) = delete;
  uint16_t port() const { return server_->port(); }

 private:
  std::unique_ptr<StoreServer> server_;
  std::filesystem::path published_;
  // Held on the rendezvous file while the store serves: another job's rank 0 removes only files
  // whose lock it can take (remove_abandoned_rendezvous_files).
  std::unique_ptr<core::FileLock> in_use_;
};

struct JobStore {
  std::unique_ptr<ServedStore> served;  // when this rank serves it: must outlive every client
  c10::intrusive_ptr<c10d::Store> store;
  std::string key_prefix;
  // Another connection to the same store whose requests give up after `request_timeout`: for a
  // thread of its own (the heartbeat), which must neither queue behind nor block the rank's.
  std::function<c10::intrusive_ptr<c10d::Store>(std::chrono::milliseconds request_timeout)>
      connect_again;
};

// Distributed errors name the rank, the store's address and a hint.
JobStore open_job_store(const launch::RankInfo& info, const StorePlan& plan,
                        std::chrono::milliseconds timeout);

}  // namespace dptrain::store
