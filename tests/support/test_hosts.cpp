#include "support/test_hosts.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace dptrain::testing {
namespace {

// Runs a shell script; its status (0 when it succeeded).
int shell(const std::string& script) {
  const int raw = std::system(("set -e; " + script).c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::filesystem::path netns_etc(const std::string& netns) {
  return std::filesystem::path("/etc/netns") / netns;
}

}  // namespace

std::optional<std::string> TestHosts::unavailable() {
  if (geteuid() != 0) return "test hosts skipped: network namespaces need root (CI runs as root)";
  const std::string probe = "dptprobe" + std::to_string(getpid());
  // Whatever fails, the probe's namespace goes.
  if (shell("ip netns add " + probe + " 2>/dev/null || exit 1; s=0; ip -n " + probe +
            " link add br0 type bridge 2>/dev/null || s=1; ip netns del " + probe +
            " 2>/dev/null || true; exit $s") != 0) {
    return "test hosts skipped: `ip netns add` or a bridge in it failed here (no iproute2, or a "
           "container or chroot without network namespaces)";
  }
  if (shell("command -v unshare >/dev/null") != 0) {
    return "test hosts skipped: no unshare (util-linux) to give each host its own name";
  }
  return std::nullopt;
}

std::string TestHosts::address(int host) {
  return "10.78.0." + std::to_string(host + 1);
}
std::string TestHosts::name(int host) {
  return "host" + std::to_string(host);
}

TestHosts::TestHosts(int count, Naming naming)
    : prefix_("dpt" + std::to_string(getpid())), count_(count) {
  const std::string sw = prefix_ + "s";
  std::string script = "ip netns add " + sw + "; ip -n " + sw +
                       " link add br0 type bridge; ip -n " + sw + " link set br0 up;";
  for (int h = 0; h < count; ++h) {
    const std::string ns = prefix_ + "h" + std::to_string(h);
    const std::string outside = "v" + prefix_.substr(3) + "s" + std::to_string(h);
    const std::string inside = "v" + prefix_.substr(3) + "h" + std::to_string(h);
    script += "ip netns add " + ns + "; ip link add " + outside + " type veth peer name " + inside +
              "; ip link set " + outside + " netns " + sw + "; ip link set " + inside + " netns " +
              ns + "; ip -n " + sw + " link set " + outside + " master br0 up; ip -n " + ns +
              " addr add " + address(h) + "/24 dev " + inside + "; ip -n " + ns + " link set " +
              inside + " up; ip -n " + ns + " link set lo up;";
    std::filesystem::create_directories(netns_etc(ns));
    std::ofstream hosts(netns_etc(ns) / "hosts");
    hosts << "127.0.0.1 localhost\n";
    for (int other = 0; other < count; ++other) {
      if (other == h && naming != Naming::kCluster) {
        hosts << "127.0.1.1 " << name(h) << "\n";
      } else if (other != h && naming == Naming::kStockDebian) {
        continue;  // no host knows the others' names
      } else {
        hosts << address(other) << " " << name(other) << "\n";
      }
    }
  }
  if (shell(script) != 0) {
    remove();
    throw std::runtime_error("could not make the test hosts: " + script);
  }
}

TestHosts::~TestHosts() {
  remove();
}

void TestHosts::remove() const {
  std::string script = "ip netns del " + prefix_ + "s 2>/dev/null || true;";
  for (int h = 0; h < count_; ++h) {
    const std::string ns = prefix_ + "h" + std::to_string(h);
    // Whatever still runs there (a launcher's orphaned ranks) goes with its host.
    script += "ip netns pids " + ns + " 2>/dev/null | xargs -r kill -9; ip netns del " + ns +
              " 2>/dev/null || true;";
    std::error_code ec;
    std::filesystem::remove_all(netns_etc(ns), ec);
  }
  shell(script);
}

std::vector<std::string> TestHosts::on(int host) const {
  return {"ip",    "netns", "exec", prefix_ + "h" + std::to_string(host), "unshare",
          "--uts", "sh",    "-c",   "hostname \"$0\" && exec \"$@\"",     name(host)};
}

void TestHosts::cut(int host) const {
  const std::string outside = "v" + prefix_.substr(3) + "s" + std::to_string(host);
  if (shell("ip -n " + prefix_ + "s link set " + outside + " down") != 0) {
    throw std::runtime_error("could not cut host " + std::to_string(host) + "'s link");
  }
}

void TestHosts::kill_all(int host) const {
  shell("ip netns pids " + prefix_ + "h" + std::to_string(host) + " | xargs -r kill -9");
}

}  // namespace dptrain::testing
