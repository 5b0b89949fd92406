// The file a run starts from (a checkpoint to resume, weights to begin with), one for the whole
// job: rank 0 chooses it, and every rank reads that file and checks, through the rendezvous store,
// that it holds the very bytes rank 0 holds. Ranks on machines that share no folder could
// otherwise resume from different epochs or begin from different weights.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/fs.h"
#include "parallel/backend.h"

namespace dptrain::train {

struct StartFile {
  std::filesystem::path path;
  std::shared_ptr<const core::ReadOnlyFile> file;  // open, its bytes as every rank checked them
};

// Rank 0's `choice` (ignored on the other ranks), made every rank's. `key` names the exchange in
// the store ("resume", "init"); `what` the file in errors ("the checkpoint to resume"). An I/O
// error on every rank, naming the rank and the file, when a rank cannot read it, finds it larger
// than `max_bytes` (what any file of the model's weights can take: refused before it is hashed),
// or reads bytes other than rank 0's (their SHA-256s differ).
std::optional<StartFile> agree_on_start_file(parallel::Backend& backend, const std::string& key,
                                             const std::optional<std::filesystem::path>& choice,
                                             const std::string& what, uint64_t max_bytes);

}  // namespace dptrain::train
