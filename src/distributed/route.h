// Which of this machine's addresses reaches a given host: the source address the routing table
// picks for it (a UDP socket connected to the host, which sends nothing) and the interface that
// holds that address. A rank binds Gloo there, and points NCCL's sockets there, so that the other
// machines reach it through the network that reaches the master, and never through a loopback
// address that only this machine can use.
#pragma once

#include <string>

namespace dptrain::distributed {

struct LocalRoute {
  std::string address;    // "10.78.0.2", "fd00::2"
  std::string interface;  // "eth0"; "" when no interface lists the address
  bool loopback = false;  // 127.0.0.0/8 or ::1: reachable from this machine alone
};

// Whether `address` (numeric, IPv4 or IPv6) is a loopback address: judged by the address, since
// stock Debian maps the machine's own name to 127.0.1.1, an address no interface lists.
bool is_loopback_address(const std::string& address);

// The interface's first IPv4 address (else its first IPv6 one), or "".
std::string address_of_interface(const std::string& interface);

// The numeric addresses `host` (a name or an address) resolves to here, IPv4 first. A distributed
// error naming `host` and `who` when it resolves to none.
std::string resolve_host(const std::string& host, const std::string& who);

// The local end of the route to `host`. A distributed error naming `host` and `who` when it does
// not resolve or no route reaches it.
LocalRoute route_to(const std::string& host, const std::string& who);

}  // namespace dptrain::distributed
