// What the ranks of a job tell each other through the store so that a failure can name who is
// gone: where each rank is (its node, address, interface and host name), that it is alive (a
// heartbeat counter, distributed/heartbeat.h), and why a rank gave up before the group formed. Keys
// sit under the job's and generation's prefix (store/plan.h), as every key dptrain
// sets.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dptrain::distributed {

// The store key that rank `rank` sets on reaching the rendezvous, under the job's and generation's
// `key_prefix` (store/plan.h): what a failed rendezvous reads to name the ranks that
// never came.
std::string arrival_key(const std::string& key_prefix, int rank);
// The ranks below `world` whose arrival key `store` lacks ({} when the store cannot be read).
std::vector<int> never_arrived(c10d::Store& store, const std::string& key_prefix, int world);
// "ranks 2 and 3", "rank 1".
std::string rank_list(const std::vector<int>& ranks);

struct PeerRecord {
  int node = 0;
  std::string address;    // where its Gloo endpoint listens
  std::string interface;  // "" when unknown
  std::string host;       // the machine's name
};

// "rank 3 (node 1, 10.78.0.2 on eth0)", or "rank 3 (node 1)" without a record.
std::string describe_peer(int rank, int node, const std::optional<PeerRecord>& record);

// The record's text in the store, and back (nullopt for text that is not one).
std::string encode(const PeerRecord& record);
std::optional<PeerRecord> decode_peer(const std::string& text);

class PeerBook {
 public:
  PeerBook(c10::intrusive_ptr<c10d::Store> store, std::string key_prefix, int world_size);

  void publish(int rank, const PeerRecord& record);
  // Rank `rank`'s record, or nullopt when it has none (or the store cannot be read).
  std::optional<PeerRecord> record(int rank) const;
  // Why a rank gave up early, for the others waiting on it; best effort.
  void post_failure(int rank, const std::string& message);
  // The first rank (in rank order) that posted a failure, with its message.
  std::optional<std::pair<int, std::string>> first_failure() const;

  // Heartbeats: this rank's counter, and every rank's counter now (-1: none yet); {} when the
  // store cannot be read.
  void set_beat(int rank, const std::string& count);
  std::vector<int64_t> beats() const;

  // never_arrived() over this book's store and prefix.
  std::vector<int> never_arrived() const;
  int world_size() const { return world_size_; }
  c10d::Store& store() const { return *store_; }

 private:
  std::optional<std::string> read(const std::string& key) const;

  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int world_size_;
};

}  // namespace dptrain::distributed
