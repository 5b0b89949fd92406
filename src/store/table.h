// The keys and values of dptrain's rendezvous store, and the meaning of each request
// (store/protocol.h), apart from the sockets that carry them. The semantics are c10d's
// (HashStore's): add keeps a decimal text, compareSet sets only over the expected value (or over
// nothing when it expects nothing), get and wait wait for keys to be set.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "store/protocol.h"

namespace dptrain::store {

class StoreTable {
 public:
  // The reply to `request`, or nothing while it must wait (a get or wait of keys not yet set);
  // such a request is tried again after each change. Bad requests get an error reply.
  std::optional<Frame> apply(const Frame& request);

 private:
  Frame set(const std::string& key, std::string value);
  std::string* find(const std::string& key);

  std::map<std::string, std::string> data_;
  uint64_t bytes_ = 0;  // keys and values held
};

}  // namespace dptrain::store
