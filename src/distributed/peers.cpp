#include "distributed/peers.h"

#include <cstdlib>
#include <sstream>

namespace dptrain::distributed {

std::string arrival_key(const std::string& key_prefix, int rank) {
  return key_prefix + "arrived/" + std::to_string(rank);
}

std::vector<int> never_arrived(c10d::Store& store, const std::string& key_prefix, int world) {
  std::vector<int> missing;
  try {
    for (int r = 0; r < world; ++r) {
      if (!store.check({arrival_key(key_prefix, r)})) missing.push_back(r);
    }
  } catch (const std::exception&) {
    return {};  // the store is gone too: nothing to say about the ranks
  }
  return missing;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string list;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) list += i + 1 == ranks.size() ? " and " : ", ";
    list += std::to_string(ranks[i]);
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

std::string describe_peer(int rank, int node, const std::optional<PeerRecord>& record) {
  std::string text = "rank " + std::to_string(rank) + " (node " + std::to_string(node);
  if (record && !record->address.empty()) {
    text += ", " + record->address;
    if (!record->interface.empty()) text += " on " + record->interface;
    if (!record->host.empty()) text += ", host " + record->host;
  }
  return text + ")";
}

// Tab-separated: no field of a record holds a tab (addresses, interface and host names).
std::string encode(const PeerRecord& record) {
  return std::to_string(record.node) + "\t" + record.address + "\t" + record.interface + "\t" +
         record.host;
}

std::optional<PeerRecord> decode_peer(const std::string& text) {
  std::vector<std::string> fields;
  std::istringstream in(text);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  if (text.empty() || text.back() == '\t') fields.emplace_back();
  if (fields.size() != 4) return std::nullopt;
  PeerRecord record;
  try {
    size_t used = 0;
    record.node = std::stoi(fields[0], &used);
    if (used != fields[0].size() || record.node < 0) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  record.address = fields[1];
  record.interface = fields[2];
  record.host = fields[3];
  return record;
}

PeerBook::PeerBook(c10::intrusive_ptr<c10d::Store> store, std::string key_prefix, int world_size)
    : store_(std::move(store)), prefix_(std::move(key_prefix)), world_size_(world_size) {}

void PeerBook::publish(int rank, const PeerRecord& record) {
  const std::string text = encode(record);
  store_->set(prefix_ + "peer/" + std::to_string(rank),
              std::vector<uint8_t>(text.begin(), text.end()));
}

std::optional<std::string> PeerBook::read(const std::string& key) const {
  try {
    if (!store_->check({key})) return std::nullopt;
    const std::vector<uint8_t> bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception&) {
    return std::nullopt;  // the store is gone: nothing to say
  }
}

std::optional<PeerRecord> PeerBook::record(int rank) const {
  const auto text = read(prefix_ + "peer/" + std::to_string(rank));
  return text ? decode_peer(*text) : std::nullopt;
}

std::vector<int> PeerBook::never_arrived() const {
  return distributed::never_arrived(*store_, prefix_, world_size_);
}

void PeerBook::post_failure(int rank, const std::string& message) {
  try {
    store_->set(prefix_ + "failed/" + std::to_string(rank),
                std::vector<uint8_t>(message.begin(), message.end()));
    store_->add(prefix_ + "failures", 1);
  } catch (const std::exception&) {
    // The store is gone as well: the others find out from their own timeouts.
  }
}

std::optional<std::pair<int, std::string>> PeerBook::first_failure() const {
  // One request while nobody failed (the watchdog asks every second): the count, then the keys.
  try {
    if (store_->add(prefix_ + "failures", 0) == 0) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (int r = 0; r < world_size_; ++r) {
    if (auto message = read(prefix_ + "failed/" + std::to_string(r))) {
      return std::make_pair(r, *message);
    }
  }
  return std::nullopt;
}

void PeerBook::set_beat(int rank, const std::string& count) {
  store_->set(prefix_ + "beat/" + std::to_string(rank),
              std::vector<uint8_t>(count.begin(), count.end()));
}

std::vector<int64_t> PeerBook::beats() const {
  std::vector<int64_t> counts(world_size_, -1);
  try {
    for (int r = 0; r < world_size_; ++r) {
      const std::string key = prefix_ + "beat/" + std::to_string(r);
      if (!store_->check({key})) continue;
      const std::vector<uint8_t> bytes = store_->get(key);
      const std::string text(bytes.begin(), bytes.end());
      counts[r] = text.empty() ? -1 : std::strtoll(text.c_str(), nullptr, 10);
    }
  } catch (const std::exception&) {
    return {};
  }
  return counts;
}

}  // namespace dptrain::distributed
