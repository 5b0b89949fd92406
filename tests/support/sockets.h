// What a process listens on, read from /proc as `ss -ltnp` reads it: the tests that hold the
// rendezvous to the loopback check it during real runs.
#pragma once

#include <string>
#include <vector>

namespace dptrain::testing {

// Every TCP socket that process `pid` holds in the LISTEN state, as "127.0.0.1:41234" or
// "[::]:29500" (IPv6 in its full hexadecimal form but for :: and ::1).
std::vector<std::string> listening_addresses(int pid);

// Whether an address of listening_addresses() is on the loopback.
bool is_loopback(const std::string& address);

}  // namespace dptrain::testing
