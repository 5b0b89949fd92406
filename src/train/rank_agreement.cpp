#include "train/rank_agreement.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/line_diff.h"
#include "core/terminal.h"

namespace dptrain::train {
namespace {

// Keys a rank may hold otherwise than its peers: how it logs, its threads and devices, and where
// and how it reads the data (a node's own copy of a folder may live elsewhere).
bool rank_own(const std::string& key) {
  for (const char* prefix : {"log.", "runtime."}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  for (const char* own :
       {"parallel.devices", "data.dir", "data.num_workers", "data.prefetch_batches",
        "data.pin_memory", "data.placement", "checkpoint.dir"}) {
    if (key == own) return true;
  }
  return false;
}

void flatten(const nlohmann::json& tree, const std::string& prefix, std::string& lines) {
  for (const auto& [key, value] : tree.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      flatten(value, path, lines);
    } else if (!rank_own(path)) {
      // A config's text need not be UTF-8 (a name given by --set): such bytes become U+FFFD.
      lines +=
          path + "=" + value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  }
}

// One line per key, then what the data is: the text the ranks compare.
std::string experiment_text(const config::Config& config, const data::OpenedData& data) {
  std::string lines;
  flatten(config::to_json(config), "", lines);
  lines +=
      "data listing=" + (data.listing_digest.empty() ? "IDX files" : data.listing_digest) + "\n";
  lines += "data samples=" + std::to_string(data.train ? data.train->size() : 0) + " training, " +
           std::to_string(data.test ? data.test->size() : 0) + " test\n";
  return lines;
}

}  // namespace

void agree_on_experiment(parallel::Backend& backend, const config::Config& config,
                         const data::OpenedData& data) {
  if (backend.world_size() == 1) return;
  const auto differs = core::first_line_difference(
      backend.all_gather_text("experiment", experiment_text(config, data)));
  if (!differs) return;
  // Another rank's text came through the store: shown escaped and cut short.
  throw core::Error(core::ErrorCode::kDistributed,
                    fmt::format("rank {} does not train rank 0's experiment: it has {}, and rank 0 "
                                "has {}",
                                differs->text, core::printable(differs->theirs.substr(0, 160)),
                                core::printable(differs->ours.substr(0, 160))),
                    "give every rank the same experiment (the same --config and --set) and the "
                    "same data (every node the same folder, with the same pictures)");
}

}  // namespace dptrain::train
