#include "support/sockets.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace dptrain::testing {
namespace {

// The inodes of the sockets among a process's open files ("socket:[1234]").
std::set<std::string> socket_inodes(int pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  return inodes;
}

// /proc/net/tcp's "0100007F:A0B2" (IPv4 in host byte order) and tcp6's 32 hex digits (four
// 32-bit words in host byte order), as an address:port.
std::string address_of(const std::string& field, bool v6) {
  const std::string hex = field.substr(0, field.find(':'));
  const int port = std::stoi(field.substr(field.find(':') + 1), nullptr, 16);
  std::ostringstream out;
  if (!v6) {
    const unsigned long a = std::stoul(hex, nullptr, 16);
    out << (a & 0xff) << "." << ((a >> 8) & 0xff) << "." << ((a >> 16) & 0xff) << "."
        << ((a >> 24) & 0xff) << ":" << port;
    return out.str();
  }
  if (hex == std::string(32, '0')) return "[::]:" + std::to_string(port);
  if (hex == "00000000000000000000000001000000") return "[::1]:" + std::to_string(port);
  return "[" + hex + "]:" + std::to_string(port);
}

}  // namespace

std::vector<std::string> listening_addresses(int pid) {
  const std::set<std::string> inodes = socket_inodes(pid);
  std::vector<std::string> found;
  for (const bool v6 : {false, true}) {
    std::ifstream table(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the header
    while (std::getline(table, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >>
          inode;
      if (state == "0A" && inodes.count(inode)) found.push_back(address_of(local, v6));
    }
  }
  return found;
}

bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address.rfind("[::1]:", 0) == 0;
}

}  // namespace dptrain::testing
