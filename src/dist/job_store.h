// The rendezvous store a rank joins, made as its plan says (dist/store_plan.h): served here when
// this is rank 0 of a job without a launcher's store, else reached where it is.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "dist/rendezvous.h"
#include "dist/store_plan.h"
#include "dist/store_server.h"

namespace dptrain::dist {

struct JobStore {
  std::unique_ptr<StoreServer> server;  // when this rank serves it: must outlive every client
  c10::intrusive_ptr<c10d::Store> store;
  std::string key_prefix;
};

// Distributed errors name the rank, the store's address and a hint.
JobStore open_job_store(const RankInfo& info, const StorePlan& plan,
                        std::chrono::milliseconds timeout);

}  // namespace dptrain::dist
