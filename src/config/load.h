// Resolving an experiment: defaults, then the file, then each --set override, then range and
// vocabulary checks. Every error names the file (or the override) and the key path.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace dptrain::config {

// `overrides` are "key.path=value" strings; a value that parses as JSON is taken as JSON
// (3, true, ["cpu","cpu"], "text"), anything else as a plain string. `model_names` are the
// models `model.name` may pick (the model registry's names).
Config load_config(const std::optional<std::filesystem::path>& file,
                   const std::vector<std::string>& overrides,
                   const std::vector<std::string>& model_names);

// Resolves an experiment given as JSON text (none: the defaults); `source` names it in errors.
Config resolve_config(const std::optional<std::string>& json_text, const std::string& source,
                      const std::vector<std::string>& overrides,
                      const std::vector<std::string>& model_names);

}  // namespace dptrain::config
