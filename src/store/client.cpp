#include "store/client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <thread>

#include "core/crypto.h"
#include "core/error.h"
#include "core/timer.h"

namespace dptrain::store {
namespace {

using Clock = std::chrono::steady_clock;
using store::Frame;
using store::Op;

int64_t ms_until(Clock::time_point deadline) {
  return std::max<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count(), 0);
}

// Waits for `events` on `fd` until `deadline`; false when it passed first.
bool ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms_until(deadline), INT32_MAX)));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // the read or write that follows reports the error
  }
}

// A TCP connection to host:port made before `deadline`, or -1 with `why` set.
int dial(const StoreEndpoint& e, Clock::time_point deadline, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &found);
  if (rc != 0) {
    why = e.host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int connected = -1;
  for (addrinfo* a = found; a != nullptr && connected < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int error = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS && ready(fd, POLLOUT, deadline)) {
        socklen_t length = sizeof error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      } else if (error == EINPROGRESS) {
        error = ETIMEDOUT;
      }
    }
    if (error == 0) {
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      connected = fd;
    } else {
      why = std::strerror(error);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  return connected;
}

void send_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    if (!ready(fd, POLLOUT, deadline)) throw std::runtime_error("timed out sending to the store");
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) throw std::runtime_error(std::string("lost the store: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// Appends what arrives to `buffer`; false when `deadline` passed first.
bool receive(int fd, std::string& buffer, Clock::time_point deadline) {
  if (!ready(fd, POLLIN, deadline)) return false;
  char chunk[64 << 10];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n == 0) throw std::runtime_error("the store closed the connection");
  if (n < 0 && errno != EAGAIN && errno != EINTR) {
    throw std::runtime_error(std::string("lost the store: ") + std::strerror(errno));
  }
  if (n > 0) buffer.append(chunk, static_cast<size_t>(n));
  return true;
}

std::string text_of(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}
std::vector<uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

}  // namespace

StoreClient::StoreClient(EndpointSource source, std::chrono::milliseconds connect_timeout,
                         std::chrono::milliseconds timeout)
    : c10d::Store(timeout), source_(std::move(source)), connect_timeout_(connect_timeout) {
  connect(Clock::now() + connect_timeout);
}

StoreClient::~StoreClient() {
  disconnect();
}

std::string StoreClient::where() const {
  return endpoint_.host + ":" + std::to_string(endpoint_.port);
}

void StoreClient::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

// Reads exactly `count` bytes, or fewer when `deadline` passed first.
std::string receive_exactly(int fd, size_t count, Clock::time_point deadline) {
  std::string got;
  while (got.size() < count && receive(fd, got, deadline)) {
  }
  return got.substr(0, std::min(got.size(), count));
}

std::string StoreClient::shake_hands(int fd, Clock::time_point deadline) const {
  const std::string client_nonce = store::nonce();
  const core::Sha256Digest key = store::store_key(endpoint_.secret);
  send_all(fd, store::hello(client_nonce), deadline);
  const std::string challenge = receive_exactly(fd, store::kChallengeSize, deadline);
  if (challenge.size() < store::kChallengeSize) {
    return challenge.size() == 1 && challenge[0] == static_cast<char>(store::kRefused)
               ? "the store at " + where() + " refused this rank's handshake"
               : "no answer to the handshake from " + where();
  }
  const std::string server_nonce = challenge.substr(0, store::kNonceSize);
  if (!core::same_bytes(challenge.substr(store::kNonceSize),
                        store::server_proof(key, client_nonce, server_nonce))) {
    // Another job's store, whatever listens where an old address pointed, or a rank given
    // another secret: from here they look alike.
    return "the store at " + where() +
           " does not hold this rank's job secret (another job's store, or ranks given "
           "different DPTRAIN_JOB_SECRETs)";
  }
  send_all(fd, store::client_proof(key, client_nonce, server_nonce), deadline);
  const std::string answer = receive_exactly(fd, 1, deadline);
  if (answer.size() == 1 && answer[0] == static_cast<char>(store::kAccepted)) return "";
  return "the store at " + where() + " refused this rank's job secret";
}

void StoreClient::connect(Clock::time_point deadline) {
  std::string why = "nothing tried";
  auto pause = std::chrono::milliseconds(50);
  for (;;) {
    if (const auto endpoint = source_(why)) {
      endpoint_ = *endpoint;
      const int fd = dial(endpoint_, deadline, why);
      if (fd >= 0) {
        try {
          why = shake_hands(fd, deadline);
        } catch (const std::exception& e) {
          why = e.what();
        }
        if (why.empty()) {
          fd_ = fd;
          return;
        }
        ::close(fd);
      }
    }
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
  throw core::Error(core::ErrorCode::kDistributed,
                    "could not reach the rendezvous store" +
                        (endpoint_.port ? " at " + where() : std::string()) + " within " +
                        core::seconds_text(connect_timeout_) + ": " + why,
                    "check MASTER_ADDR and MASTER_PORT, that rank 0 is running and reachable from "
                    "here, and that every rank has the same DPTRAIN_JOB_SECRET; parallel.timeout_s "
                    "sets how long to wait");
}

Frame StoreClient::request(Op op, std::vector<std::string> fields,
                           std::chrono::milliseconds timeout) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto deadline = timeout == kNoTimeout ? Clock::time_point::max() : Clock::now() + timeout;
  if (fd_ < 0) connect(Clock::now() + connect_timeout_);
  std::string key_text = fields.empty() ? std::string() : " (key " + fields[0] + ")";
  try {
    send_all(fd_, store::encode({static_cast<uint8_t>(op), std::move(fields)}), deadline);
    std::string buffer;
    Frame reply;
    while (store::decode(buffer, reply) == 0) {
      if (!receive(fd_, buffer, deadline)) {
        throw std::runtime_error("timed out after " + core::seconds_text(timeout) +
                                 " waiting for the "
                                 "rendezvous store" +
                                 key_text);
      }
    }
    if (reply.code != store::kOk) {
      throw std::runtime_error("the rendezvous store refused a request" + key_text + ": " +
                               (reply.fields.empty() ? std::string("?") : reply.fields[0]));
    }
    return reply;
  } catch (...) {
    disconnect();  // whatever was under way on it is abandoned
    throw;
  }
}

void StoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  request(Op::kSet, {key, text_of(value)}, timeout_);
}

std::vector<uint8_t> StoreClient::compareSet(const std::string& key,
                                             const std::vector<uint8_t>& expected,
                                             const std::vector<uint8_t>& desired) {
  return bytes_of(
      request(Op::kCompareSet, {key, text_of(expected), text_of(desired)}, timeout_).fields.at(0));
}

std::vector<uint8_t> StoreClient::get(const std::string& key) {
  return bytes_of(request(Op::kGet, {key}, timeout_).fields.at(0));
}

int64_t StoreClient::add(const std::string& key, int64_t value) {
  return store::integer_of(
      request(Op::kAdd, {key, store::integer_field(value)}, timeout_).fields.at(0));
}

bool StoreClient::deleteKey(const std::string& key) {
  return request(Op::kDelete, {key}, timeout_).fields.at(0) == std::string(1, '\1');
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  return request(Op::kCheck, keys, timeout_).fields.at(0) == std::string(1, '\1');
}

int64_t StoreClient::getNumKeys() {
  return store::integer_of(request(Op::kNumKeys, {}, timeout_).fields.at(0));
}

void StoreClient::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void StoreClient::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  request(Op::kWait, keys, timeout);
}

c10::intrusive_ptr<c10d::Store> StoreClient::clone() {
  return c10::make_intrusive<StoreClient>(source_, connect_timeout_, timeout_);
}

}  // namespace dptrain::store
