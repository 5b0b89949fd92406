#include "data/locate.h"

#include <array>
#include <cstdlib>
#include <optional>

#include "core/error.h"

namespace dptrain::data {
namespace {

using core::Error;
using core::ErrorCode;

constexpr int64_t kNumClasses = 10;
constexpr std::array<const char*, 4> kFiles = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

std::optional<std::filesystem::path> find_file(const std::filesystem::path& dir, const char* stem) {
  for (const std::string suffix : {".gz", ""}) {
    const auto path = dir / (std::string(stem) + suffix);
    if (std::filesystem::is_regular_file(path)) return path;
  }
  return std::nullopt;
}

std::vector<std::string> missing_files(const std::filesystem::path& dir) {
  std::vector<std::string> missing;
  for (const char* stem : kFiles) {
    if (!find_file(dir, stem)) missing.push_back(std::string(stem) + "[.gz]");
  }
  return missing;
}

std::string how_to_get(const std::string& dataset) {
  if (dataset == "fashion-mnist") {
    return "install Debian's copy (apt-get install dataset-fashion-mnist), or put the four IDX "
           "files in one folder and set data.dir or DPTRAIN_DATA_DIR";
  }
  return "put the four IDX files (train-images-idx3-ubyte.gz ...) in one folder and set data.dir "
         "or DPTRAIN_DATA_DIR";
}

}  // namespace

std::vector<std::filesystem::path> default_search_path(const std::string& dataset) {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("DPTRAIN_DATA_DIR"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  dirs.push_back(std::filesystem::path("data") / dataset);
  dirs.push_back(std::filesystem::path("/usr/share/datasets") / dataset);
  return dirs;
}

std::filesystem::path locate_data_dir(const std::string& configured_dir,
                                      const std::string& dataset) {
  if (!configured_dir.empty()) {
    const auto missing = missing_files(configured_dir);
    if (missing.empty()) return configured_dir;
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw Error(ErrorCode::kData, "data.dir " + configured_dir + ": missing " + list,
                how_to_get(dataset));
  }
  std::string looked;
  for (const auto& dir : default_search_path(dataset)) {
    if (missing_files(dir).empty()) return dir;
    looked += "\n  " + dir.string();
  }
  throw Error(ErrorCode::kData,
              "no " + dataset + " data found; looked in:" + looked +
                  "\n(each needs train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                  "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, raw or .gz)",
              how_to_get(dataset));
}

Splits load_splits(const std::filesystem::path& dir) {
  auto path = [&](int i) { return *find_file(dir, kFiles[i]); };
  Splits splits;
  splits.train = std::make_shared<const ImageDataset>(
      ImageDataset::from_idx_files(path(0), path(1), kNumClasses));
  splits.test = std::make_shared<const ImageDataset>(
      ImageDataset::from_idx_files(path(2), path(3), kNumClasses));
  return splits;
}

}  // namespace dptrain::data
