// Hints for a mistyped command line: the closest subcommand or option ("did you mean `train`?"),
// and the --set spelling for an option that names a config key (--lr 0.1 is
// --set optimizer.lr=0.1), as git and Hydra answer such mistakes.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dptrain::cli {

// The candidate closest to `typed`, when it is close enough to be what was meant: edits and
// closeness as config's suggestions of keys count them (config::edit_distance, close_enough).
std::optional<std::string> closest(const std::string& typed, const std::vector<std::string>& names);

// For an unknown option ("--lr", "--batch-size=512") whose name is the last part of config keys
// (optimizer.lr; data.batch_size): the --set spellings, "--set optimizer.lr=0.1", with `value` (or
// VALUE when there is none).
std::vector<std::string> set_spellings(const std::string& option, std::optional<std::string> value,
                                       const std::vector<std::string>& key_paths);

}  // namespace dptrain::cli
