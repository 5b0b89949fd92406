// The experiment's keys, each declared once: its path, type, default (the Config struct's), the
// values it takes, and one line of doc. The defaults tree, reading and range-checking a resolved
// tree, `dptrain config`'s output and docs/experiments.md's key table all come from this list.
#pragma once

#include <functional>
#include <string>
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

// docs/experiments.md's key table (Markdown): key, type, default, values, meaning.
std::string key_table_markdown();

}  // namespace dptrain::config
