#include "distributed/route.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace dptrain::distributed {
namespace {

using core::Error;
using core::ErrorCode;

using AddressList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

AddressList lookup(const std::string& host, const std::string& who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0 || found == nullptr) {
    throw Error(ErrorCode::kDistributed,
                who + ": the master address \"" + host +
                    "\" does not resolve here: " + gai_strerror(status),
                "give --master-addr (or MASTER_ADDR) a name every machine resolves, or an "
                "address");
  }
  return {found, &freeaddrinfo};
}

// IPv4 first: a name with both kinds of address is reached the way most clusters are set up.
std::vector<const addrinfo*> ordered(const addrinfo* list) {
  std::vector<const addrinfo*> v4, v6;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) v4.push_back(a);
    if (a->ai_family == AF_INET6) v6.push_back(a);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::string numeric(const sockaddr* address, socklen_t length) {
  char text[NI_MAXHOST] = {};
  if (getnameinfo(address, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return text;
}

// A link-local IPv6 address carries its scope ("fe80::1%eth0"): kept for binding, left out when
// addresses are compared.
std::string without_scope(const std::string& address) {
  return address.substr(0, address.find('%'));
}

socklen_t length_of(int family) {
  return family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

struct LocalAddress {
  std::string interface;
  int family;
  std::string address;  // numeric, with an IPv6 scope where it has one
};

// Every IPv4 and IPv6 address this machine's interfaces list, in getifaddrs' order.
std::vector<LocalAddress> local_addresses() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return {};
  std::vector<LocalAddress> found;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    std::string text = numeric(i->ifa_addr, length_of(family));
    if (!text.empty()) found.push_back({i->ifa_name, family, std::move(text)});
  }
  freeifaddrs(all);
  return found;
}

// The interface that lists `address`, or "" (127.0.1.1 is reached over lo without being listed).
std::string interface_holding(const std::string& address) {
  for (const LocalAddress& local : local_addresses()) {
    if (without_scope(local.address) == without_scope(address)) return local.interface;
  }
  return {};
}

}  // namespace

bool is_loopback_address(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z, an IPv4 loopback address written as IPv6
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string address_of_interface(const std::string& interface) {
  std::string v6;
  for (const LocalAddress& local : local_addresses()) {
    if (local.interface != interface) continue;
    if (local.family == AF_INET) return local.address;
    if (v6.empty()) v6 = local.address;
  }
  return v6;
}

std::string resolve_host(const std::string& host, const std::string& who) {
  const AddressList list = lookup(host, who);
  for (const addrinfo* a : ordered(list.get())) {
    std::string text = numeric(a->ai_addr, a->ai_addrlen);
    if (!text.empty()) return text;
  }
  throw Error(ErrorCode::kDistributed,
              who + ": the master address \"" + host + "\" resolves to no IPv4 or IPv6 address",
              "give --master-addr (or MASTER_ADDR) an address");
}

LocalRoute route_to(const std::string& host, const std::string& who) {
  const AddressList list = lookup(host, who);
  std::string why = "no IPv4 or IPv6 address";
  for (const addrinfo* a : ordered(list.get())) {
    const int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    // Connecting a UDP socket sends nothing: it asks the routing table for the source address.
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    const bool routed = connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    if (!routed) why = std::strerror(errno);
    close(fd);
    if (!routed) continue;
    LocalRoute route;
    route.address = numeric(reinterpret_cast<const sockaddr*>(&local), length);
    route.interface = interface_holding(route.address);
    route.loopback = is_loopback_address(without_scope(route.address));
    return route;
  }
  throw Error(ErrorCode::kDistributed,
              who + ": no route from this machine to the master address \"" + host + "\": " + why,
              "check the machine's network (ip route get ADDRESS), or give GLOO_SOCKET_IFNAME the "
              "interface to use");
}

}  // namespace dptrain::distributed
