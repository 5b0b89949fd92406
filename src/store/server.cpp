#include "store/server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/crypto.h"
#include "core/error.h"
#include "store/protocol.h"
#include "store/table.h"

namespace dptrain::store {
namespace {

using Clock = std::chrono::steady_clock;
using store::Frame;

// Connections that have not yet proved the job's secret: when this many are open, a new one
// pushes out the oldest, so that a flood of strangers delays the ranks but cannot lock them out.
constexpr size_t kMaxStrangers = 64;
constexpr size_t kReadChunk = 64 << 10;
// After accept() ran out of descriptors, the listener rests this long rather than spin.
constexpr auto kAcceptRest = std::chrono::milliseconds(100);

struct Connection {
  enum class Stage { kHello, kProof, kReady };
  int fd = -1;
  Stage stage = Stage::kHello;
  bool closing = false;  // refused: close once the answer is out
  Clock::time_point deadline;
  std::string client_nonce;
  std::string server_nonce;
  std::string in;
  std::string out;
  std::optional<Frame> waiting;  // a get or wait whose keys are not all set yet
  bool ready() const { return stage == Stage::kReady; }
};

// How many connections the job's ranks may hold: half the descriptors this process may open
// (raised to its hard limit first), the rest left to Gloo, NCCL and the files.
size_t connection_budget() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 512;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  const rlim_t half = limit.rlim_cur == RLIM_INFINITY ? 65536 : limit.rlim_cur / 2;
  return static_cast<size_t>(std::max<rlim_t>(half, kMaxStrangers + 16));
}

[[noreturn]] void cannot_serve(uint16_t port, const std::string& why) {
  throw core::Error(
      core::ErrorCode::kDistributed,
      "could not serve the rendezvous store on port " + std::to_string(port) + ": " + why,
      "another job may be using that port: choose another (--master-port, or "
      "MASTER_PORT)");
}

// A listening socket on `address` (empty: every interface, IPv6 and IPv4 alike) and `port`.
int listen_on(const std::string& address, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = address.empty() ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc =
      ::getaddrinfo(address.empty() ? nullptr : address.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 && address.empty()) {  // no IPv6 here: IPv4's wildcard
    hints.ai_family = AF_INET;
    rc = ::getaddrinfo(nullptr, service.c_str(), &hints, &found);
  }
  if (rc != 0) cannot_serve(port, ::gai_strerror(rc));
  std::string why = "no address to listen on";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    const int on = 1, off = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (a->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  cannot_serve(port, why);
}

uint16_t port_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

}  // namespace

struct StoreServer::Loop {
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // a byte written to wake[1] stops the loop
  core::Sha256Digest key{};
  std::chrono::milliseconds handshake_time{};
  size_t budget = 0;
  Clock::time_point accept_from;  // the listener rests until then after running out of fds
  store::StoreTable table;
  std::list<Connection> connections;

  ~Loop() {
    for (auto& c : connections) ::close(c.fd);
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void run() {
    for (;;) {
      try {
        if (!turn()) return;
      } catch (const std::exception& e) {
        // Nothing a client sends may end the store: a failure here (memory, most likely) costs
        // the connections under way, which their ranks report, and the store goes on.
        spdlog::warn("rendezvous store: {}; dropping {} connection(s)", e.what(),
                     connections.size());
        while (!connections.empty()) erase(connections.begin());
      }
    }
  }

  // One round of poll and answers; false once asked to stop.
  bool turn() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> owners;
    const bool accepting = connections.size() < budget && Clock::now() >= accept_from;
    fds.push_back({wake[0], POLLIN, 0});
    fds.push_back({listen_fd, static_cast<short>(accepting ? POLLIN : 0), 0});
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      short events = 0;
      // Nothing more is read from a client that does not take its answers.
      if (!it->closing && !it->waiting && it->out.size() < store::kMaxFrame) events |= POLLIN;
      if (!it->out.empty()) events |= POLLOUT;
      fds.push_back({it->fd, events, 0});
      owners.push_back(it);
    }
    ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (fds[0].revents != 0) return false;
    for (size_t i = 0; i < owners.size(); ++i) {
      if (!exchange(*owners[i], fds[i + 2].revents)) erase(owners[i]);
    }
    // After the connections polled: accepting may push one out, which `owners` would still name.
    if (fds[1].revents & POLLIN) accept_one();
    serve_all();
    drop_late_handshakes();
    return true;
  }

  int poll_timeout_ms() const {
    std::optional<Clock::time_point> first;
    if (accept_from > Clock::now()) first = accept_from;
    for (const auto& c : connections) {
      if (!c.ready() && (!first || c.deadline < *first)) first = c.deadline;
    }
    if (!first) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*first - Clock::now());
    return static_cast<int>(std::max<int64_t>(left.count(), 0) + 1);
  }

  void accept_one() {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) accept_from = Clock::now() + kAcceptRest;
      return;
    }
    push_out_oldest_stranger();
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    Connection c;
    c.fd = fd;
    c.deadline = Clock::now() + handshake_time;
    connections.push_back(std::move(c));
  }

  void push_out_oldest_stranger() {
    size_t strangers = 0;
    auto oldest = connections.end();
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      if (it->ready()) continue;
      ++strangers;
      if (oldest == connections.end() || it->deadline < oldest->deadline) oldest = it;
    }
    if (strangers >= kMaxStrangers) erase(oldest);
  }

  // Reads and writes what the socket allows; false when the connection is over.
  bool exchange(Connection& c, short revents) {
    if (revents & (POLLERR | POLLNVAL)) return false;
    if (revents & POLLIN) {
      char chunk[kReadChunk];
      const ssize_t n = ::read(c.fd, chunk, sizeof chunk);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
      if (n > 0) c.in.append(chunk, static_cast<size_t>(n));
      if (!c.ready()) shake_hands(c);
    } else if (revents & POLLHUP) {
      return false;
    }
    if ((revents & POLLOUT) && !c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
      if (n > 0) c.out.erase(0, static_cast<size_t>(n));
    }
    return !(c.closing && c.out.empty());
  }

  // The handshake's steps, as their bytes come in (store/protocol.h).
  void shake_hands(Connection& c) {
    if (c.stage == Connection::Stage::kHello && c.in.size() >= store::kHelloSize) {
      const auto client_nonce =
          store::nonce_of_hello(std::string_view(c.in).substr(0, store::kHelloSize));
      if (!client_nonce) return refuse(c);
      c.in.erase(0, store::kHelloSize);
      c.client_nonce = *client_nonce;
      c.server_nonce = store::nonce();
      c.out += c.server_nonce + store::server_proof(key, c.client_nonce, c.server_nonce);
      c.stage = Connection::Stage::kProof;
    }
    if (c.stage == Connection::Stage::kProof && c.in.size() >= store::kProofSize) {
      const std::string expected = store::client_proof(key, c.client_nonce, c.server_nonce);
      if (!core::same_bytes(std::string_view(c.in).substr(0, store::kProofSize), expected)) {
        return refuse(c);
      }
      c.in.erase(0, store::kProofSize);
      c.out.push_back(static_cast<char>(store::kAccepted));
      c.stage = Connection::Stage::kReady;
    }
  }

  void refuse(Connection& c) {
    c.out.push_back(static_cast<char>(store::kRefused));
    c.in.clear();
    c.closing = true;
  }

  // Answers every request that can be answered, until nothing changes.
  void serve_all() {
    for (bool progress = true; progress;) {
      progress = false;
      for (auto it = connections.begin(); it != connections.end();) {
        try {
          progress |= serve(*it);
          ++it;
        } catch (const store::ProtocolError&) {
          it = erase(it);
        }
      }
    }
  }

  // One waiting request retried, then the connection's next whole frames; whether any was answered.
  bool serve(Connection& c) {
    if (!c.ready() || c.closing) return false;
    bool progress = false;
    if (c.waiting) {
      if (auto reply = table.apply(*c.waiting)) {
        c.out += store::encode(*reply);
        c.waiting.reset();
        progress = true;
      } else {
        return false;
      }
    }
    Frame frame;
    while (!c.waiting && c.out.size() < store::kMaxFrame) {
      const size_t used = store::decode(c.in, frame);
      if (used == 0) break;
      c.in.erase(0, used);
      std::optional<Frame> reply;
      try {
        reply = table.apply(frame);
      } catch (const store::ProtocolError& e) {
        reply = Frame{store::kError, {e.what()}};
      }
      if (reply) {
        c.out += store::encode(*reply);
      } else {
        c.waiting = std::move(frame);
      }
      progress = true;
    }
    return progress;
  }

  void drop_late_handshakes() {
    const auto now = Clock::now();
    for (auto it = connections.begin(); it != connections.end();) {
      it = (!it->ready() && now >= it->deadline) ? erase(it) : std::next(it);
    }
  }

  std::list<Connection>::iterator erase(std::list<Connection>::iterator it) {
    ::close(it->fd);
    return connections.erase(it);
  }
};

StoreServer::StoreServer(const std::string& address, uint16_t port, const std::string& secret,
                         std::chrono::milliseconds handshake_time)
    : loop_(std::make_unique<Loop>()) {
  loop_->key = store::store_key(secret);
  loop_->handshake_time = handshake_time;
  loop_->budget = connection_budget();
  loop_->listen_fd = listen_on(address, port);
  port_ = port_of(loop_->listen_fd);
  if (::pipe2(loop_->wake, O_CLOEXEC) != 0) cannot_serve(port_, std::strerror(errno));
  thread_ = std::thread([loop = loop_.get()] { loop->run(); });
}

StoreServer::~StoreServer() {
  const char byte = 0;
  if (::write(loop_->wake[1], &byte, 1) < 0) {
    // The pipe cannot be full (one byte, once): nothing else to do.
  }
  thread_.join();
}

}  // namespace dptrain::store
