#include "cli/suggest.h"

#include <algorithm>

#include "config/schema.h"

namespace dptrain::cli {

std::optional<std::string> closest(const std::string& typed,
                                   const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t distance = config::edit_distance(typed, name);
    if (!best || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  if (!best || !config::close_enough(best_distance, typed, *best)) return std::nullopt;
  return best;
}

std::vector<std::string> set_spellings(const std::string& option, std::optional<std::string> value,
                                       const std::vector<std::string>& key_paths) {
  const size_t start = option.find_first_not_of('-');
  if (start == std::string::npos) return {};  // "-", "---": no name at all
  std::string name = option.substr(start);
  if (const size_t equals = name.find('='); equals != std::string::npos) {
    value = name.substr(equals + 1);
    name.erase(equals);
  }
  std::replace(name.begin(), name.end(), '-', '_');  // --batch-size: data.batch_size
  std::vector<std::string> spellings;
  for (const std::string& path : key_paths) {
    const bool whole = path == name;
    const bool last_part = path.size() > name.size() &&
                           path.compare(path.size() - name.size(), name.size(), name) == 0 &&
                           path[path.size() - name.size() - 1] == '.';
    if (whole || last_part) spellings.push_back("--set " + path + "=" + value.value_or("VALUE"));
  }
  return spellings;
}

}  // namespace dptrain::cli
