// dptrain's rendezvous store, served on a thread of its own by whoever hosts the job's rendezvous
// (dptrain's launcher, or rank 0 under SLURM and mpirun). It answers only clients that prove the
// job's secret (distributed/store_protocol.h), drops a connection that has not done so within a few
// seconds (and the oldest such one when 64 are open), checks every length before it holds anything
// that long, and reads nothing more from a client that does not take its answers. It listens on
// the loopback alone when the whole job is on this machine. Nothing a client does ends it: a
// failure while serving drops the connections, not the process.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace dptrain::distributed {

class StoreServer {
 public:
  // Listens on `address` ("127.0.0.1"; empty: every interface) at `port` (0: a free one the
  // system picks). A distributed error naming the port when it cannot. A connection that has not
  // proved the secret within `handshake_time` is dropped.
  StoreServer(const std::string& address, uint16_t port, const std::string& secret,
              std::chrono::milliseconds handshake_time = std::chrono::seconds(10));
  ~StoreServer();  // stops serving and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  struct Loop;
  std::unique_ptr<Loop> loop_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace dptrain::distributed
