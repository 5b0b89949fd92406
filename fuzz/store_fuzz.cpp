// The rendezvous store's side of a connection on arbitrary bytes, as a peer on the network could
// send them: a stranger's hello and proof, or (odd first byte) an authenticated peer's frames,
// decoded and applied to the store's table. What a peer may cause is a refused handshake, a
// ProtocolError that ends its connection, and replies.
#include "store/protocol.h"
#include "store/table.h"

#include "core/crypto.h"

namespace store = dptrain::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.empty()) return 0;
  const bool authenticated = (bytes[0] & 1) != 0;
  bytes.remove_prefix(1);
  if (!authenticated) {
    // A stranger's handshake: a hello, then a proof it cannot have computed.
    static const dptrain::core::Sha256Digest key = store::store_key("fuzz");
    if (bytes.size() < store::kHelloSize + store::kProofSize) return 0;
    const auto nonce = store::nonce_of_hello(bytes.substr(0, store::kHelloSize));
    if (nonce) {
      const std::string expected = store::client_proof(key, *nonce, std::string(32, 's'));
      (void)dptrain::core::same_bytes(bytes.substr(store::kHelloSize, store::kProofSize), expected);
    }
    return 0;
  }
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
