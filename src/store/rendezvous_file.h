// A job's rendezvous on one machine without a launcher's store: rank 0 publishes its store's port
// and the job's secret in a file that only this user can read, in a private runtime folder, and
// the other ranks (the same user, on the same machine) read it there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "launch/environment.h"

namespace dptrain::store {

// $XDG_RUNTIME_DIR/dptrain when that variable names a folder, else $TMPDIR/dptrain-<uid> (/tmp's
// when TMPDIR is unset), unless another user made that first (anyone may, in /tmp): then
// $XDG_CACHE_HOME/dptrain (~/.cache/dptrain), which nobody else can make. Every rank of the job
// comes to the same folder, since the first to look makes its choice for good. Made with mode 700
// when missing; a distributed error naming it when it is a link, another user's, or open to
// others: a folder someone else controls could hold a planted file.
std::filesystem::path private_runtime_dir(const launch::EnvLookup& env);

// The file of job `job_id` (characters other than letters, digits, '.', '-' and '_' become '_').
std::filesystem::path rendezvous_file(const std::filesystem::path& dir, const std::string& job_id);

struct Published {
  uint16_t port = 0;
  std::string secret;
};

// Writes port and secret (mode 600, atomically).
void publish(const std::filesystem::path& file, const Published& what);
// Removes the rendezvous files in `dir` that no rank 0 serves any more (one SIGKILLed before it
// could remove its own): those a minute old or more whose lock, held by the rank 0 that serves
// (job_store.h), can be taken. The lock, not a pid, tells: the folder may be shared by machines
// or pid namespaces. Where the file system has no locks, nothing is removed. Returns how many.
int remove_abandoned_rendezvous_files(const std::filesystem::path& dir);
// What the file holds, or nothing (with why) while it is missing, unreadable or not ours.
std::optional<Published> read_published(const std::filesystem::path& file, std::string& why_not);

}  // namespace dptrain::store
