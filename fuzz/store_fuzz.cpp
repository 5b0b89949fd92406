// The rendezvous store's side of a connection on arbitrary bytes, as a peer on the network could
// send them: the handshake, then frames decoded and applied to the store's table. The outcomes a
// peer may cause are a refused handshake, a ProtocolError that ends its connection, and replies.
#include "core/sha256.h"
#include "dist/store_protocol.h"
#include "dist/store_table.h"

namespace store = dptrain::dist::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const dptrain::core::Sha256Digest digest = dptrain::core::sha256("fuzz");
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Half the inputs start with the right handshake, so that frames get through to the table.
  if (!bytes.empty() && (bytes[0] & 1)) {
    thread_local std::string with_hello;
    with_hello = store::hello(digest) + std::string(bytes.substr(1));
    bytes = with_hello;
  }
  if (bytes.size() < store::kHelloSize ||
      !store::hello_matches(bytes.substr(0, store::kHelloSize), digest)) {
    return 0;
  }
  bytes.remove_prefix(store::kHelloSize);
  store::StoreTable table;
  try {
    store::Frame frame;
    for (size_t used; (used = store::decode(bytes, frame)) > 0;) {
      bytes.remove_prefix(used);
      table.apply(frame);
    }
  } catch (const store::ProtocolError&) {
  }
  return 0;
}
