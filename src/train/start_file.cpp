#include "train/start_file.h"

#include "core/error.h"
#include "core/sha256.h"

namespace dptrain::train {
namespace {

constexpr char kNone = '-';    // rank 0 chose no file
constexpr char kFile = '=';    // rank 0 chose the file that follows
constexpr char kFailed = '!';  // a digest could not be taken: why follows

}  // namespace

std::optional<StartFile> agree_on_start_file(parallel::Backend& backend, const std::string& key,
                                             const std::optional<std::filesystem::path>& choice,
                                             const std::string& what) {
  const bool first = backend.rank() == 0;
  const std::string mine = first ? (choice ? kFile + choice->string() : std::string(1, kNone)) : "";
  const std::string decided = backend.all_gather_text("start/" + key + "/path", mine).at(0);
  if (decided.empty() || decided[0] != kFile) return std::nullopt;
  StartFile start{decided.substr(1), nullptr};
  std::string digest;
  try {
    start.file = std::make_shared<const core::MappedFile>(start.path);
    // One process needs no proof that it agrees with itself.
    if (backend.world_size() > 1) digest = core::hex(core::sha256(start.file->bytes()));
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
