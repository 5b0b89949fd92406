// A rank's (or a launcher's) connection to dptrain's rendezvous store (store/server.h),
// as the c10d::Store that Gloo and NCCL process groups take. Where the store is and the job's
// secret are asked of a source at every connection attempt, so that a rank can wait for rank 0 to
// publish them (store/plan.h); attempts go on until the timeout, then the last reason
// is reported. A request that times out drops the connection (the server forgets its wait) and the
// next one reconnects.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "core/torch_compat.h"
#include "store/protocol.h"

namespace dptrain::store {

struct StoreEndpoint {
  std::string host;
  uint16_t port = 0;
  std::string secret;  // the job's: the handshake proves it both ways, never sends it
};

// The endpoint now, or nothing while it is not known yet (with why, for the error at the end).
using EndpointSource = std::function<std::optional<StoreEndpoint>(std::string& why_not)>;

class StoreClient : public c10d::Store {
 public:
  // Connects, trying until `connect_timeout`; a distributed error saying why when it cannot.
  // `timeout` bounds each request (c10d's store timeout; kNoTimeout: none).
  StoreClient(EndpointSource source, std::chrono::milliseconds connect_timeout,
              std::chrono::milliseconds timeout);
  ~StoreClient() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  // A second connection to the same store (c10d asks for one per thread that talks to it).
  c10::intrusive_ptr<c10d::Store> clone() DPTRAIN_STORE_CLONE_OVERRIDE;

  // "127.0.0.1:41234": for messages.
  std::string where() const;

 private:
  void connect(std::chrono::steady_clock::time_point deadline);
  // The handshake on a fresh connection; why it failed, or "" when the store let this rank in.
  std::string shake_hands(int fd, std::chrono::steady_clock::time_point deadline) const;
  store::Frame request(store::Op op, std::vector<std::string> fields,
                       std::chrono::milliseconds timeout);
  void disconnect();

  EndpointSource source_;
  std::chrono::milliseconds connect_timeout_;
  std::mutex mutex_;  // one request at a time on the connection
  int fd_ = -1;
  StoreEndpoint endpoint_;
};

}  // namespace dptrain::store
