#include "store/rendezvous_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/file_lock.h"
#include "core/fs.h"

namespace dptrain::store {
namespace {

[[noreturn]] void unsafe(const std::filesystem::path& dir, const std::string& why) {
  throw core::Error(core::ErrorCode::kDistributed,
                    dir.string() + ": " + why + "; dptrain keeps its rendezvous files there",
                    "remove it, or set XDG_RUNTIME_DIR to a folder of your own (mode 700)");
}

// Whether `st` is this user's and closed to everyone else.
bool private_to_me(const struct stat& st) {
  return st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

// `dir`, made with mode 700 when missing, checked to be a private folder of this user's.
std::filesystem::path private_folder(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    unsafe(dir, std::string("cannot be made: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    unsafe(dir, std::string("cannot be read: ") + std::strerror(errno));
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
    unsafe(dir, "is not a folder but a link or file");
  if (!private_to_me(st)) unsafe(dir, "belongs to another user or is open to others");
  return dir;
}

// Whether something another user made stands at `path` (a folder, a file or a link).
bool taken_by_another(const std::filesystem::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid();
}

}  // namespace

std::filesystem::path private_runtime_dir(const launch::EnvLookup& env) {
  if (const auto runtime = env("XDG_RUNTIME_DIR")) {
    std::error_code ec;
    if (std::filesystem::is_directory(*runtime, ec)) {
      return private_folder(std::filesystem::path(*runtime) / "dptrain");
    }
  }
  const auto tmp = env("TMPDIR");
  const std::filesystem::path shared = std::filesystem::path(tmp && !tmp->empty() ? *tmp : "/tmp") /
                                       ("dptrain-" + std::to_string(::geteuid()));
  if (!taken_by_another(shared)) return private_folder(shared);
  const auto cache = env("XDG_CACHE_HOME");
  const auto home = env("HOME");
  if ((!cache || cache->empty()) && (!home || home->empty())) {
    unsafe(shared, "belongs to another user, and HOME is unset for a folder of your own");
  }
  const std::filesystem::path cache_home = cache && !cache->empty()
                                               ? std::filesystem::path(*cache)
                                               : std::filesystem::path(*home) / ".cache";
  std::error_code ec;
  std::filesystem::create_directories(cache_home, ec);  // its own check follows, for dptrain's
  spdlog::warn("{} belongs to another user, who made it first; rendezvous files go to {} instead",
               shared.string(), (cache_home / "dptrain").string());
  return private_folder(cache_home / "dptrain");
}

std::filesystem::path rendezvous_file(const std::filesystem::path& dir, const std::string& job_id) {
  std::string name = "store-" + job_id;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return dir / name;
}

void publish(const std::filesystem::path& file, const Published& what) {
  core::write_file_atomic(file, std::to_string(what.port) + " " + what.secret + "\n", 0600);
}

int remove_abandoned_rendezvous_files(const std::filesystem::path& dir) {
  // A file's rank 0 takes its lock just after publishing it: a younger file may not have it yet.
  constexpr auto kYoungest = std::chrono::minutes(1);
  const auto now = std::filesystem::file_time_type::clock::now();
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code kind;
    if (name.rfind("store-", 0) != 0 || core::temporary_file_owner(name) ||
        !std::filesystem::is_regular_file(entry.symlink_status(kind))) {
      continue;
    }
    const auto written = std::filesystem::last_write_time(entry.path(), kind);
    if (kind || now - written < kYoungest) continue;
    const core::FileLock probe(entry.path(), core::FileLock::Mode::kTry);
    if (!probe.held() || !probe.enforced()) continue;  // served, or no telling
    std::error_code removal;
    if (std::filesystem::remove(entry.path(), removal)) ++removed;
  }
  return removed;
}

std::optional<Published> read_published(const std::filesystem::path& file, std::string& why_not) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why_not = file.string() + ": " + std::strerror(errno) + " (rank 0 has not published the store)";
    return std::nullopt;
  }
  struct stat st {};
  char buffer[256] = {};
  const bool mine = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && private_to_me(st);
  const ssize_t n = mine ? ::read(fd, buffer, sizeof buffer - 1) : -1;
  ::close(fd);
  if (!mine) {
    why_not = file.string() + ": not a private file of this user";
    return std::nullopt;
  }
  std::istringstream in(std::string(buffer, static_cast<size_t>(std::max<ssize_t>(n, 0))));
  Published p;
  int port = 0;
  if (!(in >> port >> p.secret) || port <= 0 || port > 65535) {
    why_not = file.string() + ": holds no port and secret";
    return std::nullopt;
  }
  p.port = static_cast<uint16_t>(port);
  return p;
}

}  // namespace dptrain::store
