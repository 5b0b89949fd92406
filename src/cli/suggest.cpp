#include "cli/suggest.h"

#include <algorithm>

namespace dptrain::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein's table, plus a swap of two neighbours as one edit
  // ("trian" is one edit from "train").
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> closest(const std::string& typed,
                                   const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t distance = edit_distance(typed, name);
    if (!best || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  // Close: a third of the longer name's letters (two at least) differ, as git's threshold does
  // for short commands; "train" for "trian" or "tarin", nothing for "lr".
  const size_t longest = best ? std::max(typed.size(), best->size()) : 0;
  if (!best || best_distance > std::max<size_t>(2, longest / 3) || best_distance >= longest) {
    return std::nullopt;
  }
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
