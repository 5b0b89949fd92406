// The experiment's keys, each declared once: its path, type, default (the Config struct's), the
// values it takes, and one line of doc. The defaults tree, reading and range-checking a resolved
// tree, `dptrain config`'s output and docs/experiments.md's key table all come from this list, and
// so do the keys an unknown one is answered with (near_keys).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/checker.h"
#include "config/config.h"

namespace dptrain::config {

struct KeySpec {
  std::string path;     // "data.batch_size"
  std::string type;     // "integer", "number", "boolean", "string", "choice", "list of strings"
  std::string allowed;  // the values it takes, in Markdown ("1 or more", "`host`, `device`")
  std::string doc;      // one line of Markdown
  std::function<nlohmann::json(const Config&)> get;
  // Takes the key's value (already of the key's JSON type) into the config, checking its range.
  std::function<void(const nlohmann::json&, Config&, const Checker&)> set;
};

// Every key, in the order `dptrain config` prints them and docs/experiments.md lists them.
const std::vector<KeySpec>& schema();

// "data.batch_size" as a JSON pointer into an experiment tree: /data/batch_size.
nlohmann::json::json_pointer key_pointer(const std::string& path);

// A JSON pointer into an experiment tree (as json::flatten() names leaves) in the words every
// message uses for a key: /optimizer/lr is optimizer.lr, and a list's entry
// /parallel/devices/0 is parallel.devices[0].
std::string key_path_of(const std::string& pointer);

// docs/experiments.md's key table (Markdown): key, type, default, values, meaning.
std::string key_table_markdown();

// For a key path the schema lacks ("lr", "optimizer.learning_rate", "trian.epochs"): the keys, or
// sections, it most likely meant, in the schema's order; none when nothing is near. Those whose
// last part has the same name (or a name in words whose initials it is: "lr", learning_rate),
// else the fewest edits away, by whole path (the sections both share left aside) or by last
// part, while close enough (close_enough); of those as near, the ones of the section typed.
std::vector<std::string> near_keys(const std::string& typed);

// Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`. The command
// line's suggestions (cli/suggest.h) measure with it too.
size_t edit_distance(std::string_view a, std::string_view b);

// Whether `name`, `distance` edits from `typed`, is close enough to be what was meant: at most a
// third of the longer one's letters (two at least) differ, as git's threshold does for short
// commands; "train" for "trian" or "tarin", nothing for "lr".
bool close_enough(size_t distance, std::string_view typed, std::string_view name);

}  // namespace dptrain::config
