#include "config/checker.h"

#include <algorithm>

namespace dptrain::config {

void Checker::fail(const std::string& key, const std::string& what, const std::string& hint,
                   core::ErrorCode code) const {
  // A place inside a list or object ("data.train_transforms[0].size") came from where the key
  // holding it did.
  std::string holder = key;
  auto it = sources_.find(holder);
  for (size_t cut;
       it == sources_.end() && (cut = holder.find_last_of(".[")) != std::string::npos;) {
    holder.resize(cut);
    it = sources_.find(holder);
  }
  const std::string source = it == sources_.end() ? "defaults" : it->second;
  throw core::Error(code, source + ": " + key + ": " + what, hint);
}

void Checker::at_least(const std::string& key, int64_t value, int64_t min) const {
  if (value < min) {
    fail(key, "must be at least " + std::to_string(min) + ", got " + std::to_string(value),
         "use a value of " + std::to_string(min) + " or more");
  }
}

void Checker::at_most(const std::string& key, int64_t value, int64_t max) const {
  if (value > max) {
    fail(key, "must be at most " + std::to_string(max) + ", got " + std::to_string(value),
         "use a value of " + std::to_string(max) + " or less");
  }
}

void Checker::one_of(const std::string& key, const std::string& value,
                     const std::vector<std::string>& allowed) const {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "unknown value \"" + value + "\"", "use one of: " + list);
}

}  // namespace dptrain::config
