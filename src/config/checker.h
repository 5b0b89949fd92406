// Range and vocabulary checks of a resolved experiment, each error naming where the offending
// value came from (the file, a --set override, or the defaults) and the key path.
#pragma once

#include <string>
#include <vector>

#include "config/json_merge.h"
#include "core/error.h"

namespace dptrain::config {

class Checker {
 public:
  Checker(const KeySources& sources, std::vector<std::string> model_names)
      : sources_(sources), model_names_(std::move(model_names)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what, const std::string& hint,
                         core::ErrorCode code = core::ErrorCode::kConfig) const;

  // Whether a file or an override set `key` (else it has its default).
  bool given(const std::string& key) const { return sources_.count(key) > 0; }

  void at_least(const std::string& key, int64_t value, int64_t min) const;
  void at_most(const std::string& key, int64_t value, int64_t max) const;
  void one_of(const std::string& key, const std::string& value,
              const std::vector<std::string>& allowed) const;

  // The models `model.name` may pick (the model registry's names).
  const std::vector<std::string>& model_names() const { return model_names_; }

 private:
  const KeySources& sources_;
  std::vector<std::string> model_names_;
};

}  // namespace dptrain::config
