#include "app/command_line.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace dptrain::app {

std::vector<std::string> resuming(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--resume" && i + 1 < argv.size()) {
      ++i;  // its checkpoint is superseded by the newer ones the failed run wrote
    } else if (argv[i].rfind("--resume=", 0) != 0) {
      out.push_back(argv[i]);
    }
  }
  out.insert(out.end(), {"--resume", "auto"});
  return out;
}

std::vector<std::string> resume_argv(const std::vector<std::string>& argv,
                                     const std::filesystem::path& output_dir) {
  std::vector<std::string> out;
  for (const std::string& word : resuming(argv)) {
    if (word != "--overwrite") out.push_back(word);  // typed again, it would start over
  }
  const bool named = std::any_of(out.begin(), out.end(), [](const std::string& a) {
    return a.rfind("-o", 0) == 0 || a == "--output" || a.rfind("--output=", 0) == 0;
  });
  if (!named) out.insert(out.end() - 2, {"--output", output_dir.string()});
  return out;
}

std::string shell_text(const std::vector<std::string>& words) {
  const auto plain = [](const std::string& w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
    });
  };
  std::string text;
  for (const std::string& w : words) {
    if (!text.empty()) text += ' ';
    if (plain(w)) {
      text += w;
      continue;
    }
    text += '\'';  // inside single quotes only the quote itself needs care: '\''
    for (const char c : w) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

}  // namespace dptrain::app
