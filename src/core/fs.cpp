#include "core/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "core/crypto.h"
#include "core/error.h"

namespace dptrain::core {
namespace {

// Closes a descriptor on every way out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Hands the descriptor over, to be closed by its new owner.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now; false (errno set) when the close reports a failed write.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// 16 hex digits from the system's random source (libsodium's): a name nobody can plant ahead.
std::string random_suffix() {
  return hex(random_bytes(8));
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what,
                       const std::string& hint) {
  throw Error(ErrorCode::kIo, path.string() + ": " + what + ": " + std::strerror(errno), hint);
}

void write_all(int fd, const std::string& contents, const std::filesystem::path& tmp) {
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(tmp, "write failed", "check free disk space");
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {  // which an ifstream would open and read as empty
    throw Error(ErrorCode::kIo, path.string() + ": is a directory, not a file",
                "give the path of a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kIo,
                path.string() + ": cannot open for reading: " + std::strerror(errno),
                "check the path and its permissions");
  }
  // Read in chunks up to the bound, so that a huge (or endless: a FIFO, /dev/zero) file costs
  // no more than the bound before it is refused.
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTextFileBytes) {
      throw Error(ErrorCode::kIo,
                  path.string() + ": larger than " + std::to_string(kMaxTextFileBytes >> 20) +
                      " MiB, which no experiment or record dptrain reads is",
                  "give the experiment's JSON file");
    }
  }
  return text;
}

namespace {

// A regular file opened for reading, and its size; an I/O error naming anything else.
int open_regular(const std::filesystem::path& path, struct stat& st) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) fail(path, "cannot open for reading", "check the path and its permissions");
  if (::fstat(fd.get(), &st) != 0) fail(path, "cannot read its size", "check the path");
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::kIo,
                path.string() + ": is " +
                    (S_ISDIR(st.st_mode) ? "a directory" : "no regular file") +
                    ", not a file dptrain reads",
                "give the path of a file");
  }
  return fd.release();
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  struct stat st {};
  const Fd fd(open_regular(path, st));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    fail(path, "cannot map for reading", "check the file and free memory");
  }
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

ReadOnlyFile::ReadOnlyFile(const std::filesystem::path& path) : path_(path) {
  struct stat st {};
  fd_ = open_regular(path, st);
  size_ = static_cast<uint64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  ::close(fd_);
}

void ReadOnlyFile::read(uint64_t offset, size_t length, char* out) const {
  for (size_t done = 0; done < length;) {
    const ssize_t n = ::pread(fd_, out + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path_, "read failed", "check the file and its disk");
    if (n == 0) {
      throw Error(ErrorCode::kIo,
                  path_.string() + ": the file ends at byte " + std::to_string(offset + done) +
                      " while being read, though it held " + std::to_string(size_) +
                      " bytes when opened: something shortened it meanwhile",
                  "give a file that nothing is writing to (copy it first)");
    }
    done += static_cast<size_t>(n);
  }
}

std::string read_regular_file(const std::filesystem::path& path, size_t max_bytes) {
  struct stat st {};
  const Fd fd(open_regular(path, st));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw Error(ErrorCode::kIo,
                path.string() + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                    std::to_string(max_bytes) + " any such file needs",
                "check that this is the file meant");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "read failed", "check the file and its disk");
    if (n == 0) break;  // it shrank while being read
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

namespace {

// Refuses, naming `dir`, a `folder` on its way that someone besides root and this user could
// change: another user's, or one that others (or a group other than the user's own) may write to
// without the sticky bit (as /tmp has, where only an entry's owner may rename it). Whoever can
// rename a folder on the way could move the run's folder aside mid-run, put one of their own (or a
// link) in its place, and take every file dptrain writes after that.
void check_folder(const std::filesystem::path& dir, const std::filesystem::path& folder,
                  const std::string& what) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    fail(dir, what + " lies under " + folder.string() + ", which cannot be examined",
         "write to a folder whose every parent is yours or root's");
  }
  const std::string under = dir.string() + ": " + what + " lies under " + folder.string();
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    throw Error(ErrorCode::kIo,
                under + ", which belongs to another user (uid " + std::to_string(st.st_uid) +
                    "), who could move it away and put a folder of their own in its place",
                "write to a folder whose every parent is yours or root's");
  }
  if (st.st_mode & S_ISVTX) return;
  if (st.st_mode & S_IWOTH) {
    throw Error(ErrorCode::kIo,
                under +
                    ", which every user may write to: anyone could move it away and put a "
                    "folder of their own in its place",
                "write to a folder of your own, or chmod o-w (or +t) " + folder.string());
  }
  if ((st.st_mode & S_IWGRP) && st.st_gid != ::getegid()) {
    throw Error(ErrorCode::kIo,
                under + ", which group " + std::to_string(st.st_gid) +
                    " may write to: any of its members could move it away and put a folder of "
                    "their own in its place",
                "write to a folder of your own, or chmod g-w (or +t) " + folder.string());
  }
}

// Walks to `dir` as the kernel does, a name at a time, following each link: every folder passed
// through must be one nobody else can change (check_folder), and every link followed one that
// nobody else made (whoever did could point it elsewhere). `dir` itself is the caller's to check.
void check_ancestors(const std::filesystem::path& dir, const std::string& what) {
  constexpr int kMaxLinks = 40;  // as the kernel's ELOOP
  std::deque<std::filesystem::path> names;
  // Not normalised: "link/.." is the folder above the link's target, as the kernel takes it.
  for (const auto& name : std::filesystem::absolute(dir).relative_path()) {
    names.push_back(name);
  }
  std::filesystem::path at = "/";
  check_folder(dir, at, what);
  for (int links = 0; !names.empty();) {
    const std::filesystem::path name = names.front();
    names.pop_front();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      at = at.parent_path();
      continue;
    }
    const std::filesystem::path next = at / name;
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) return;  // missing: the caller's own checks say why
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
        throw Error(ErrorCode::kIo,
                    dir.string() + ": " + what + " lies through " + next.string() +
                        ", a link that another user (uid " + std::to_string(st.st_uid) +
                        ") made, who could point it elsewhere",
                    "write to a folder whose every parent is yours or root's");
      }
      std::error_code ec;
      const std::filesystem::path target = std::filesystem::read_symlink(next, ec);
      if (ec || ++links > kMaxLinks) return;  // the caller's own checks say why
      if (target.is_absolute()) at = "/";
      const std::filesystem::path rest = target.relative_path();
      names.insert(names.begin(), rest.begin(), rest.end());
      continue;
    }
    if (names.empty()) return;
    check_folder(dir, next, what);
    at = next;
  }
}

}  // namespace

void ensure_own_folder(const std::filesystem::path& dir, const std::string& what) {
  // The part of the path that is there is checked before anything is made under it: a folder
  // made through another user's link, or in another user's folder, would be left behind there.
  check_ancestors(dir, what);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // A link in its place is fine if its owner is this user (or root): one made by anyone else
  // would send the run's files wherever they chose.
  struct stat link {};
  if (::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid != ::geteuid() &&
      link.st_uid != 0) {
    throw Error(ErrorCode::kIo,
                dir.string() + ": " + what + " is a link that another user (uid " +
                    std::to_string(link.st_uid) + ") made",
                "write to a folder of your own");
  }
  check_ancestors(dir, what);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::kIo,
                dir.string() + ": cannot make " + what + ": " +
                    (ec ? ec.message() : std::string("it is not a folder")),
                "choose another folder");
  }
  if (st.st_uid != ::geteuid()) {
    throw Error(ErrorCode::kIo,
                dir.string() + ": " + what + " belongs to another user (uid " +
                    std::to_string(st.st_uid) + ")",
                "write to a folder of your own");
  }
  if (st.st_mode & S_IWOTH) {
    throw Error(ErrorCode::kIo, dir.string() + ": every user may write to " + what,
                "write to a folder that only you (and your group) can write to, or chmod o-w it");
  }
}

void write_file_atomic(const std::filesystem::path& path, const std::string& contents,
                       unsigned mode) {
  // A name nobody can guess, created only if nothing is there (not even a dangling link): a link
  // planted beside the file is never followed.
  const std::filesystem::path tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + random_suffix();
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
               static_cast<mode_t>(mode)));
  if (fd.get() < 0) {
    fail(tmp, "cannot create", "check that the output folder exists and is writable");
  }
  try {
    write_all(fd.get(), contents, tmp);
    if (::fsync(fd.get()) != 0 || !fd.close()) fail(tmp, "write failed", "check free disk space");
    // rename replaces a link at `path` itself, never what it points to.
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      fail(path, "cannot replace", "check that the output folder is writable");
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename itself reaches the disk only with its folder.
  sync_folder(path.has_parent_path() ? path.parent_path() : ".");
}

void sync_folder(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());
}

AppendFile::AppendFile(std::filesystem::path path, Open how, unsigned mode)
    : path_(std::move(path)) {
  const int create = how == Open::kCreateNew ? O_CREAT | O_EXCL : 0;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | create,
               static_cast<mode_t>(mode));
  if (fd_ < 0) fail(path_, "cannot open to append", "check that the run folder is writable");
}

AppendFile::~AppendFile() {
  ::close(fd_);
}

void AppendFile::append(const std::string& bytes) {
  write_all(fd_, bytes, path_);
}

std::optional<pid_t> temporary_file_owner(const std::string& name) {
  static const std::regex kTemporary(R"(.+\.tmp\.(\d{1,9})(\.[0-9a-f]{16})?)");
  std::smatch m;
  if (!std::regex_match(name, m, kTemporary)) return std::nullopt;
  return static_cast<pid_t>(std::stol(m[1]));
}

namespace {

// `exact`: only names of write_file_atomic's own form, its random part included, so that a user's
// "results.csv.tmp.2024" is never taken for one.
int remove_temporaries(const std::filesystem::path& dir, const std::function<bool(pid_t)>& stale,
                       bool exact = false) {
  static const std::regex kExact(R"(.+\.tmp\.\d{1,9}\.[0-9a-f]{16})");
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto pid = temporary_file_owner(name);
    if (!pid || !stale(*pid) || (exact && !std::regex_match(name, kExact))) continue;
    std::error_code removal;
    if (std::filesystem::remove(entry.path(), removal)) ++removed;
  }
  return removed;
}

}  // namespace

int remove_stale_temporaries(const std::filesystem::path& dir) {
  return remove_temporaries(dir, [](pid_t pid) {
    return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;  // else still writing
  });
}

int remove_temporaries_in_locked_folder(const std::filesystem::path& dir) {
  return remove_temporaries(
      dir, [](pid_t) { return true; }, /*exact=*/true);
}

}  // namespace dptrain::core
