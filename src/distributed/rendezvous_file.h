// A job's rendezvous on one machine without a launcher's store: rank 0 publishes its store's port
// and the job's secret in a file that only this user can read, in a private runtime folder, and
// the other ranks (the same user, on the same machine) read it there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "distributed/rendezvous.h"

namespace dptrain::distributed {

// $XDG_RUNTIME_DIR/dptrain when that variable names a folder, else $TMPDIR/dptrain-<uid> (/tmp's
// when TMPDIR is unset), unless another user made that first (anyone may, in /tmp): then
// $XDG_CACHE_HOME/dptrain (~/.cache/dptrain), which nobody else can make. Every rank of the job
// comes to the same folder, since the first to look makes its choice for good. Made with mode 700
// when missing; a distributed error naming it when it is a link, another user's, or open to
// others: a folder someone else controls could hold a planted file.
std::filesystem::path private_runtime_dir(const EnvLookup& env);

// The file of job `job_id` (characters other than letters, digits, '.', '-' and '_' become '_').
std::filesystem::path rendezvous_file(const std::filesystem::path& dir, const std::string& job_id);

struct Published {
  uint16_t port = 0;
  std::string secret;
  pid_t publisher = 0;  // rank 0's process (0: a file that does not say)
};

// Writes port, secret and this process's pid (mode 600, atomically).
void publish(const std::filesystem::path& file, const Published& what);
// Removes the rendezvous files in `dir` whose rank 0 no longer runs (SIGKILLed before it could
// remove its own); returns how many. A file whose process runs, or that names none, stays.
int remove_abandoned_rendezvous_files(const std::filesystem::path& dir);
// What the file holds, or nothing (with why) while it is missing, unreadable or not ours.
std::optional<Published> read_published(const std::filesystem::path& file, std::string& why_not);

}  // namespace dptrain::distributed
