#include "run/reader.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "config/json_text.h"
#include "core/error.h"
#include "core/fs.h"
#include "run/layout.h"
#include "run/state.h"

namespace dptrain::run {
namespace {

constexpr int kMaxDepth = 4;  // runs/<name>/<sweep>/<point>

nlohmann::json read_json(const std::filesystem::path& file) {
  try {
    return config::parse_json(core::read_regular_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo, file.string() + ": " + config::plain_json_error(e),
                      "is this a run folder dptrain wrote? leave it out of the list");
  }
}

std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& file) {
  std::vector<nlohmann::json> lines;
  const std::string whole = core::read_regular_file(file);
  try {  // all its lines' values together, before any is parsed
    config::check_json_size(whole);
  } catch (const nlohmann::json::exception& e) {
    throw core::Error(core::ErrorCode::kIo, file.string() + ": " + config::plain_json_error(e),
                      "is this a run folder dptrain wrote? leave it out of the list");
  }
  std::istringstream text(whole);
  std::string line;
  for (int number = 1; std::getline(text, line); ++number) {
    if (line.empty()) continue;
    try {
      lines.push_back(config::parse_json(line));
    } catch (const nlohmann::json::exception& e) {
      throw core::Error(
          core::ErrorCode::kIo,
          file.string() + ":" + std::to_string(number) + ": " + config::plain_json_error(e),
          "is this a run folder dptrain wrote? leave it out of the list");
    }
  }
  return lines;
}

// Folder names in order: numbers first, by value (a sweep's 2 before its 10), then the others
// by name.
bool name_order(const std::filesystem::path& a, const std::filesystem::path& b) {
  const std::string x = a.filename().string();
  const std::string y = b.filename().string();
  const auto number = [](const std::string& s) {
    return !s.empty() && s.size() < 10 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  };
  if (number(x) && number(y)) return std::stol(x) < std::stol(y);
  if (number(x) != number(y)) return number(x);
  return x < y;
}

void runs_below(const std::filesystem::path& dir, int depth,
                std::vector<std::filesystem::path>& out) {
  if (is_run_folder(dir)) {
    out.push_back(dir);
    return;
  }
  if (depth == kMaxDepth) return;
  std::vector<std::filesystem::path> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) children.push_back(entry.path());
  }
  std::sort(children.begin(), children.end(), name_order);
  for (const auto& child : children) runs_below(child, depth + 1, out);
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t matches{};
  std::vector<std::string> paths;
  if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  }
  ::globfree(&matches);
  return paths;
}

}  // namespace

// read_run without the conversion of a wrongly shaped file's error.
static RunView read_run_files(const std::filesystem::path& dir);

RunView read_run(const std::filesystem::path& dir) {
  try {
    return read_run_files(dir);
  } catch (const nlohmann::json::exception& e) {  // valid JSON of another shape
    throw core::Error(
        core::ErrorCode::kIo,
        dir.string() + ": not a run folder dptrain wrote: " + config::plain_json_error(e),
        "leave it out of the list");
  }
}

RunView read_run_files(const std::filesystem::path& dir) {
  RunView run;
  run.dir = dir;
  if (std::filesystem::exists(dir / kConfigFile)) run.config = read_json(dir / kConfigFile);
  if (std::filesystem::exists(dir / kSummaryFile)) run.summary = read_json(dir / kSummaryFile);
  if (std::filesystem::exists(dir / kMetricsFile)) {
    run.epochs = read_json_lines(dir / kMetricsFile);
  }
  run.state = read_run_state(dir, run.summary.has_value());
  return run;
}

std::vector<std::filesystem::path> find_runs(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> found;
  for (const auto& arg : args) {
    std::vector<std::string> paths = {arg};
    std::error_code ec;
    if (!std::filesystem::exists(arg, ec) && arg.find_first_of("*?[") != std::string::npos) {
      paths = expand_glob(arg);
    }
    const size_t before = found.size();
    for (const auto& path : paths) {
      if (std::filesystem::is_directory(path, ec)) runs_below(path, 0, found);
    }
    if (found.size() == before) {
      throw core::Error(core::ErrorCode::kUsage, arg + ": holds no run folder",
                        "name run folders (each holds config.json), a folder above them (a "
                        "sweep's, runs/), or a quoted glob such as 'runs/d2l-lenet/*'");
    }
  }
  // A run named twice (runs/a, ./runs/a/, through a link) is one row.
  std::vector<std::filesystem::path> unique, seen;
  for (const auto& dir : found) {
    std::error_code ec;
    std::filesystem::path same = std::filesystem::weakly_canonical(dir, ec);
    if (ec) same = dir.lexically_normal();
    if (std::find(seen.begin(), seen.end(), same) != seen.end()) continue;
    seen.push_back(same);
    unique.push_back(dir);
  }
  return unique;
}

}  // namespace dptrain::run
