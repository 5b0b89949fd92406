// dptrain's rendezvous store, served on a thread of its own by whoever hosts the job's rendezvous
// (dptrain's launcher, or rank 0 under SLURM and mpirun). It answers only clients that prove the
// job's secret (store/protocol.h), drops a connection that has not done so within a few seconds
// (and the oldest such one when 64 are open), checks every length before it holds anything that
// long, and reads nothing more from a client that does not take its answers. It listens on the
// loopback alone when the whole job is on this machine. Nothing a client does ends it: a failure
// while serving drops the connections, not the process.
//
// Why not c10d's own stores. TCPStore answers whoever connects to MASTER_PORT: on a shared
// machine or network any user can read the job's keys (NCCL's unique id, the ranks' addresses),
// write or delete them to send ranks to a listener of their own or stall the rendezvous, or fill
// the server's memory (LibTorch 1.13's server trusts each length a client sends); and a rank
// cannot tell a stale MASTER_ADDR that another process now listens on from its job's store.
// FileStore needs a folder every machine shares, in which anyone who can write the file can do
// the same, and a file that only grows. Each handshake here proves the secret both ways (HMAC over
// fresh nonces, libsodium's), so strangers can delay the ranks at most, never read or steer
// them. Where a launcher serves its own store (torchrun's agent store), dptrain uses that one,
// keys made unguessable by the secret's digest (store/plan.h). docs/security.md has the whole
// account.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace dptrain::store {

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

}  // namespace dptrain::store
