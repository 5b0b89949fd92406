#include "train/start_file.h"

#include <algorithm>

#include "core/crypto.h"
#include "core/error.h"

namespace dptrain::train {
namespace {

constexpr char kNone = '-';    // rank 0 chose no file
constexpr char kFile = '=';    // rank 0 chose the file that follows
constexpr char kFailed = '!';  // a digest could not be taken: why follows

// The file's SHA-256, read a piece at a time.
core::Sha256Digest digest_of(const core::ReadOnlyFile& file) {
  core::Sha256 sha;
  std::string piece(size_t{1} << 20, '\0');
  for (uint64_t at = 0; at < file.size();) {
    const size_t length = static_cast<size_t>(std::min<uint64_t>(piece.size(), file.size() - at));
    file.read(at, length, piece.data());
    sha.update(std::string_view(piece).substr(0, length));
    at += length;
  }
  return sha.finish();
}

}  // namespace

std::optional<StartFile> agree_on_start_file(parallel::Backend& backend, const std::string& key,
                                             const std::optional<std::filesystem::path>& choice,
                                             const std::string& what, uint64_t max_bytes) {
  const bool first = backend.rank() == 0;
  const std::string mine = first ? (choice ? kFile + choice->string() : std::string(1, kNone)) : "";
  const std::string decided = backend.all_gather_text("start/" + key + "/path", mine).at(0);
  if (decided.empty() || decided[0] != kFile) return std::nullopt;
  StartFile start{decided.substr(1), nullptr};
  std::string digest;
  try {
    start.file = std::make_shared<const core::ReadOnlyFile>(start.path);
    if (start.file->size() > max_bytes) {
      throw core::Error(core::ErrorCode::kIo,
                        start.path.string() + ": " + std::to_string(start.file->size()) +
                            " bytes, more than any file of this model's weights can take (" +
                            std::to_string(max_bytes) + ")",
                        "give a checkpoint or model.pt of a run of this model");
    }
    // One process needs no proof that it agrees with itself.
    if (backend.world_size() > 1) digest = core::hex(digest_of(*start.file));
  } catch (const core::Error& e) {
    digest = kFailed + std::string(e.what());
  }
  const std::vector<std::string> digests =
      backend.all_gather_text("start/" + key + "/digest", digest);
  for (size_t r = 0; r < digests.size(); ++r) {
    const std::string rank = "rank " + std::to_string(r);
    if (!digests[r].empty() && digests[r][0] == kFailed) {
      throw core::Error(
          core::ErrorCode::kIo,
          rank + " cannot read " + what + " that rank 0 chose: " + digests[r].substr(1),
          "give every machine the run's files (a shared folder, or a copy)");
    }
    if (digests[r] != digests[0]) {
      throw core::Error(core::ErrorCode::kIo,
                        rank + " holds another " + start.path.string() + " than rank 0 (" + what +
                            "; their SHA-256s differ)",
                        "give every machine the same file (a shared folder, or one copy)");
    }
  }
  return start;
}

}  // namespace dptrain::train
