#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dptrain::core {

FileLock::FileLock(const std::filesystem::path& path, Mode mode) {
  std::error_code ec;
  fd_ = std::filesystem::is_directory(path, ec)
            ? ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            : ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  int locked = -1;
  if (fd_ >= 0) {
    do {  // a signal's handler on this thread would cut the wait short; the lock is still wanted
      locked = ::flock(fd_, LOCK_EX | (mode == Mode::kTry ? LOCK_NB : 0));
    } while (locked != 0 && errno == EINTR);
  }
  held_ = locked == 0;
  if (held_ || (fd_ >= 0 && errno == EWOULDBLOCK)) return;
  if (fd_ >= 0 && (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS)) {
    // A file system without locks (some network ones): going on unlocked beats refusing to run.
    spdlog::warn("{}: not locked ({}): this file system has no locks", path.string(),
                 std::strerror(errno));
    held_ = true;
    enforced_ = false;
    return;
  }
  const std::string why = std::strerror(errno);
  if (fd_ >= 0) ::close(fd_);
  throw Error(ErrorCode::kIo, path.string() + ": cannot lock: " + why,
              "check that it is yours and writable");
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace dptrain::core
