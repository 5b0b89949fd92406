// Whole-file reads and atomic writes: a reader never sees a half-written file, and a crash while
// writing leaves the previous version in place.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dptrain::core {

// The text files dptrain reads (experiments, run.json, metrics) are small: a bigger one is refused
// as soon as the bound is passed, whatever its size claims.
constexpr size_t kMaxTextFileBytes = size_t{16} << 20;

// A whole text file; an I/O error naming it when it cannot be read or passes the bound.
std::string read_text_file(const std::filesystem::path& path);

// A regular file mapped read-only: its bytes cost no memory until they are read, so that a file
// that claims gigabytes (a sparse one, say) costs only what is looked at. A device, a pipe or a
// directory is refused, naming the path. An empty file maps to no bytes.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A regular file read in checked pieces (pread), for large untrusted files (model files,
// checkpoints): nothing is read until asked for, so a file that claims gigabytes (a sparse one)
// costs only what is read, and one that shrinks while it is read is an I/O error naming it, where
// a mapping of it would end the process with SIGBUS. A device, a pipe or a directory is refused.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::filesystem::path& path);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  uint64_t size() const { return size_; }  // when it was opened
  // The `length` bytes at `offset` into `out`; an I/O error naming the file when it ends first.
  void read(uint64_t offset, size_t length, char* out) const;

 private:
  std::filesystem::path path_;
  int fd_;
  uint64_t size_ = 0;
};

// A regular file's bytes, read in one allocation of the size the file system gives it: a device,
// a pipe or a directory is refused, naming the path, so that nothing endless is read, and so is a
// file larger than `max_bytes` (a sparse one claiming gigabytes among them), before anything is
// read.
std::string read_regular_file(const std::filesystem::path& path,
                              size_t max_bytes = kMaxTextFileBytes);

// Makes `dir` (and its parents) when missing, then refuses, naming it, a folder that belongs to
// another user or that every user may write to: whoever can write there could plant a link or a
// file where dptrain writes next. `what` names it in the error ("the output folder").
void ensure_own_folder(const std::filesystem::path& dir, const std::string& what);

// Writes to a temporary file beside `path` (`path.tmp.<pid>.<random>`, created exclusively and
// never through a link), flushes it to disk, renames it over `path`, and flushes the folder.
// `mode`: the file's permissions (0600 for what only this user may read).
void write_file_atomic(const std::filesystem::path& path, const std::string& contents,
                       unsigned mode = 0644);

// Flushes `dir`'s entries to disk: a rename into or out of it, or an unlink there, reaches the
// disk only with its folder. Best effort: a folder that cannot be opened is left as it is.
void sync_folder(const std::filesystem::path& dir);

// A file that grows by whole appends, for records a reader follows while they are written (an
// event file TensorBoard watches). Opened never through a link; each append is one write(2) and
// reaches readers at once (no fsync: a crash may cut the last record, which its format detects).
class AppendFile {
 public:
  enum class Open { kCreateNew, kExisting };
  AppendFile(std::filesystem::path path, Open how, unsigned mode = 0644);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  void append(const std::string& bytes);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_;
};

// The writer's pid when `name` is a temporary file of write_file_atomic's
// (`name.tmp.<pid>[.<random>]`), else nothing.
std::optional<pid_t> temporary_file_owner(const std::string& name);

// Removes the temporary files that write_file_atomic left in `dir` when its process was killed
// mid-write (those whose pid no longer runs); returns how many.
int remove_stale_temporaries(const std::filesystem::path& dir);
// In a folder this process holds locked and is not writing into now, every temporary file is
// stale, whatever pid it names: a killed writer's pid may be this process's own (containers and
// pid namespaces start each job at the same pids). Only names of write_file_atomic's exact form
// (`name.tmp.<pid>.<16 hex digits>`) count. Returns how many it removed.
int remove_temporaries_in_locked_folder(const std::filesystem::path& dir);

}  // namespace dptrain::core
