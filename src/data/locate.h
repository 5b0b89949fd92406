// Where a data set's files are found, and loading its train and test splits by name.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/image_dataset.h"

namespace dptrain::data {

// The folders searched when no `data.dir` is given, in order: $DPTRAIN_DATA_DIR,
// ./data/<dataset>, /usr/share/datasets/<dataset>.
std::vector<std::filesystem::path> default_search_path(const std::string& dataset);

// The folder holding the four IDX files (raw or .gz). An empty `configured_dir` searches the
// default path; the error lists every folder looked at and how to get the data.
std::filesystem::path locate_data_dir(const std::string& configured_dir,
                                      const std::string& dataset);

struct Splits {
  std::shared_ptr<const ImageDataset> train;
  std::shared_ptr<const ImageDataset> test;
};

// "fashion-mnist" or "mnist": the same IDX layout and file names, ten classes.
Splits load_splits(const std::filesystem::path& dir);

}  // namespace dptrain::data
