// dptrain's rendezvous store over real sockets: c10d's semantics, the job's secret, and peers that
// break the protocol or the limits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "core/error.h"
#include "store/client.h"
#include "store/protocol.h"
#include "store/server.h"
#include "support/catch.h"
#include "support/memory.h"

using namespace dptrain;
using namespace std::chrono_literals;

namespace {

const std::string kStoreSecret = "the job's secret, 32 characters!";

c10::intrusive_ptr<store::StoreClient> client_at(uint16_t port,
                                                 const std::string& secret = kStoreSecret,
                                                 std::chrono::milliseconds timeout = 5s) {
  const store::StoreEndpoint here{"127.0.0.1", port, secret};
  return c10::make_intrusive<store::StoreClient>(
      [here](std::string&) { return std::optional<store::StoreEndpoint>(here); }, timeout, timeout);
}

c10::intrusive_ptr<store::StoreClient> client_of(const store::StoreServer& server,
                                                 const std::string& secret = kStoreSecret,
                                                 std::chrono::milliseconds timeout = 5s) {
  return client_at(server.port(), secret, timeout);
}

std::vector<uint8_t> bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

// A raw TCP connection to the server, for peers that do not follow the protocol.
class RawPeer {
 public:
  explicit RawPeer(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      throw std::runtime_error("cannot connect to the store");
    }
  }
  ~RawPeer() { ::close(fd_); }
  // Sends what the server takes; false once it has closed the connection.
  bool send(const std::string& data) const {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Exactly `count` bytes, or what came before `wait` ran out.
  std::string receive_exactly(size_t count, std::chrono::milliseconds wait) const {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (got.size() < count && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, count - got.size()), 0);
      if (n <= 0) break;
      got.append(chunk, static_cast<size_t>(n));
    }
    return got;
  }
  // The whole handshake, as a client holding `secret` makes it; whether the store let it in.
  bool authenticate(const std::string& secret) const {
    const std::string client_nonce = store::nonce();
    send(store::hello(client_nonce));
    const std::string challenge = receive_exactly(store::kChallengeSize, 2s);
    if (challenge.size() != store::kChallengeSize) return false;
    send(store::client_proof(store::store_key(secret), client_nonce,
                             challenge.substr(0, store::kNonceSize)));
    return receive_exactly(1, 2s) == std::string(1, '\0');
  }
  // What arrives within `wait`, up to the server's close; `closed` tells whether it closed.
  std::string receive(std::chrono::milliseconds wait, bool& closed) const {
    std::string got;
    closed = false;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        closed = true;
        break;
      }
      got.append(chunk, static_cast<size_t>(n));
    }
    return got;
  }

 private:
  int fd_;
};

std::string u32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

}  // namespace

TEST_CASE("the store answers as c10d's stores do: set, get, add, compareSet, check, delete, keys",
          "[dist][store]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  auto store = client_of(server);
  store->set("a", bytes("one"));
  CHECK(store->get("a") == bytes("one"));
  CHECK(store->add("n", 5) == 5);
  CHECK(store->add("n", -2) == 3);
  CHECK(store->get("n") == bytes("3"));  // a counter reads as decimal text, as in TCPStore
  CHECK(store->compareSet("c", {}, bytes("x")) == bytes("x"));          // absent, expected nothing
  CHECK(store->compareSet("c", bytes("y"), bytes("z")) == bytes("x"));  // not what was expected
  CHECK(store->compareSet("c", bytes("x"), bytes("z")) == bytes("z"));
  CHECK(store->compareSet("d", bytes("e"), bytes("f")) == bytes("e"));  // absent, expected "e"
  CHECK(store->check({"a", "n"}));
  CHECK_FALSE(store->check({"a", "missing"}));
  CHECK(store->getNumKeys() == 3);
  CHECK(store->deleteKey("a"));
  CHECK_FALSE(store->deleteKey("a"));
  store->set("empty", {});
  CHECK(store->get("empty").empty());
  // A second connection, as c10d's clone() makes for another thread, sees the same keys.
  CHECK(store->clone()->get("c") == bytes("z"));
}

TEST_CASE("get and wait wait for another client's set, and time out naming the key",
          "[dist][store]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  auto waiter = client_of(server);
  auto setter = client_of(server);
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    setter->set("late", bytes("here"));
  });
  CHECK(waiter->get("late") == bytes("here"));
  later.join();
  waiter->wait({"late"});
  CHECK_THROWS_WITH(waiter->wait({"never"}, 300ms),
                    "timed out after 0.3 s waiting for the rendezvous store (key never)");
  // The timed-out wait dropped its connection; the next request makes a new one.
  CHECK(waiter->get("late") == bytes("here"));
}

TEST_CASE("a client without the job's secret is refused, and says so", "[dist][store][security]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  try {
    client_of(server, "another job's secret", 500ms);
    FAIL("a client with the wrong secret got in");
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kDistributed);
    CHECK_THAT(e.what(), ContainsSubstring("does not hold this rank's job secret"));
  }
  // A peer that speaks TCPStore's protocol (or anything else) gets the refusal byte and the end.
  RawPeer stranger(server.port());
  stranger.send(std::string(64, '\0'));
  bool closed = false;
  CHECK(stranger.receive(2s, closed) == std::string(1, '\1'));
  CHECK(closed);
}

TEST_CASE(
    "a rank does not trust a store that cannot prove the job's secret: an impostor at the address "
    "is found out",
    "[dist][store][security]") {
  // Whatever listens where a stale address points (another user's process, say) answers anything
  // to the hello: the old one-way handshake let the rank in on a single "accepted" byte.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t length = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &length);
  std::atomic<bool> done{false};
  std::thread impostor([listener, &done] {
    while (!done) {  // every attempt the client makes
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept(listener, nullptr, nullptr);
      char hello[64];
      if (::recv(fd, hello, store::kHelloSize, MSG_WAITALL) > 0) {
        const std::string reply = std::string(store::kChallengeSize, 'x') + std::string(1, '\0');
        ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  });
  try {
    client_at(ntohs(a.sin_port), kStoreSecret, 300ms);
    FAIL("the client trusted an impostor");
  } catch (const core::Error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("does not hold this rank's job secret"));
  }
  done = true;
  impostor.join();
  ::close(listener);
}

TEST_CASE("a flood of strangers delays the ranks but cannot lock them out of the store",
          "[dist][store][security]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  // More connections than the server keeps for strangers, none of which says anything.
  std::vector<std::unique_ptr<RawPeer>> strangers;
  for (int i = 0; i < 200; ++i) strangers.push_back(std::make_unique<RawPeer>(server.port()));
  std::this_thread::sleep_for(200ms);  // all accepted (the oldest pushed out)
  auto store = client_of(server);
  store->set("in", bytes("yes"));
  CHECK(store->get("in") == bytes("yes"));
  // Those left waiting for their handshake are 64 at most: the rest were closed on them.
  int closed_on = 0;
  for (const auto& peer : strangers) {
    bool closed = false;
    peer->receive(10ms, closed);
    closed_on += closed ? 1 : 0;
  }
  CHECK(closed_on >= 200 - 64);
}

TEST_CASE("a wait without a timeout waits as long as it takes", "[dist][store]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  auto waiter = client_of(server);
  std::thread later([&] {
    std::this_thread::sleep_for(300ms);
    client_of(server)->set("eventually", bytes("1"));
  });
  waiter->wait({"eventually"}, c10d::Store::kNoTimeout);
  later.join();
  CHECK(waiter->get("eventually") == bytes("1"));
}

TEST_CASE("a connection that does not prove the secret in time is dropped",
          "[dist][store][security]") {
  store::StoreServer server("127.0.0.1", 0, kStoreSecret, /*handshake_time=*/200ms);
  RawPeer silent(server.port());
  silent.send("DPT");  // most of nothing
  bool closed = false;
  CHECK(silent.receive(3s, closed).empty());
  CHECK(closed);
  CHECK(client_of(server)->check({"x"}) == false);  // the store still serves the job
}

TEST_CASE("lengths beyond the limits end the connection before anything that long is held",
          "[dist][store][security]") {
  // TCPStore's flood: a SET whose value says it is 4 GB, then 64 KB of it. Before the handshake it
  // is just a wrong handshake; after it, a field over the limit. The server runs within 100 MB.
  for (const bool authenticated : {false, true}) {
    INFO((authenticated ? "after" : "before") << " the handshake");
    const std::string outcome = testing::run_within_memory(
        [&] {
          store::StoreServer server("127.0.0.1", 0, kStoreSecret);
          RawPeer peer(server.port());
          if (authenticated && !peer.authenticate(kStoreSecret))
            throw std::runtime_error("refused");
          const std::string set = std::string(1, static_cast<char>(store::Op::kSet)) + u32(2) +
                                  u32(1) + "k" + u32(0xffffffff);
          peer.send(set + std::string(1 << 16, 'x'));
          bool closed = false;
          // The server drops the peer with its bytes unread, so the kernel may reset the
          // connection before its last answer is read: that answer may be lost.
          const std::string got = peer.receive(2s, closed);
          throw std::runtime_error(std::string(closed ? "closed" : "open") + " after " +
                                   std::to_string(got.size()) + " bytes");
        },
        /*limit_mb=*/100);
    // Before the handshake the server answers the malformed hello with its refusal, if anything.
    CHECK((outcome == "threw: closed after 0 bytes" ||
           (!authenticated && outcome == "threw: closed after 1 bytes")));
  }
  store::StoreServer server("127.0.0.1", 0, kStoreSecret);
  // Too many fields are refused the same way.
  RawPeer many(server.port());
  REQUIRE(many.authenticate(kStoreSecret));
  many.send(std::string(1, '\7') + u32(1u << 20));
  bool closed = false;
  many.receive(2s, closed);
  CHECK(closed);
  auto store = client_of(server);
  store->set("fine", bytes("still"));
  CHECK(store->get("fine") == bytes("still"));
  CHECK_THROWS_WITH(store->set(std::string(5000, 'k'), bytes("v")),
                    ContainsSubstring("a key longer than 4096 bytes"));
}
