#include "core/line_diff.h"

namespace dptrain::core {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

}  // namespace

std::optional<LineDifference> first_line_difference(const std::vector<std::string>& texts) {
  if (texts.empty()) return std::nullopt;
  const std::vector<std::string> ours = lines_of(texts[0]);
  for (size_t t = 1; t < texts.size(); ++t) {
    if (texts[t] == texts[0]) continue;
    const std::vector<std::string> theirs = lines_of(texts[t]);
    size_t k = 0;
    while (k < ours.size() && k < theirs.size() && ours[k] == theirs[k]) ++k;
    const auto at = [k](const std::vector<std::string>& lines) {
      return k < lines.size() ? lines[k] : std::string("nothing");
    };
    return LineDifference{t, k, at(theirs), at(ours), theirs.size(), ours.size()};
  }
  return std::nullopt;
}

}  // namespace dptrain::core
