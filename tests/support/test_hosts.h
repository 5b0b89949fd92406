// Test machines on this one: network namespaces on one switch (a bridge in a namespace of its own),
// each with its own address on 10.78.0.0/24, its own host name (unshare --uts) and its own
// /etc/hosts (which `ip netns exec` mounts from /etc/netns/NAME/hosts). Nothing routes out of them:
// their traffic reaches only each other. Made and removed by the test; needs root.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dptrain::testing {

class TestHosts {
 public:
  enum class Naming {
    // As stock Debian installs them: each host's own name resolves to 127.0.1.1, and no host
    // knows the others' names (a job names the master by its address).
    kStockDebian,
    // As a well-kept cluster's: /etc/hosts maps host0, host1, ... to their addresses everywhere.
    kCluster,
    // Stock Debian machines on a network whose name server knows them: each host's own name is
    // 127.0.1.1 there, the others' names their addresses.
    kStockDebianWithNames,
  };

  // Why test hosts cannot be made here (not root, no `ip`, no namespaces), or nullopt.
  static std::optional<std::string> unavailable();

  TestHosts(int count, Naming naming);
  ~TestHosts();
  TestHosts(const TestHosts&) = delete;
  TestHosts& operator=(const TestHosts&) = delete;

  // "10.78.0.1" for host 0.
  static std::string address(int host);
  // "host0".
  static std::string name(int host);
  // The words that run a program on host `host`, as its name: put before the program and its
  // arguments (BackgroundRun's `launcher`).
  std::vector<std::string> on(int host) const;
  // Pulls host `host`'s cable out of the switch: its packets are dropped from now on, without a
  // reset on either side (as a failed link or a powered-off machine behaves).
  void cut(int host) const;
  // Kills (SIGKILL) every process on host `host`, as a machine that dies.
  void kill_all(int host) const;

 private:
  void remove() const;  // every namespace and hosts file this made; quiet about what is gone

  std::string prefix_;
  int count_;
};

}  // namespace dptrain::testing
