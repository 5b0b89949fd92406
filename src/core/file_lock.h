// flock(2) locks on a file or a folder, held by an object and released with it (and by the
// kernel when the process dies, so that a killed process leaves no stale lock behind).
#pragma once

#include <filesystem>

namespace dptrain::core {

class FileLock {
 public:
  enum class Mode {
    kWait,  // blocks (through signals) until the lock is free
    kTry,   // returns at once; held() says whether it was taken
  };
  // Locks `path`: a folder, or a file made when missing (never through a link). An Error naming
  // it when it cannot be opened or locked for another reason than another holder.
  FileLock(const std::filesystem::path& path, Mode mode);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Whether this process may go on: the lock is its own, or the file system has no locks at all
  // (some network ones; a warning says so).
  bool held() const { return held_; }
  // Whether the kernel enforces it: false on a file system without locks, where held() is true
  // only so that a run can go on.
  bool enforced() const { return enforced_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  bool enforced_ = true;
};

}  // namespace dptrain::core
