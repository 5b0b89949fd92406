// The data set a config names, opened: its train and test splits as Datasets, and what the model
// and a run's record need to know of it (classes, channels, sample size, a digest of the listing).
// IDX data sets are read into memory; a folder is listed here (once per process) and its pictures
// are read where batches are assembled (data/folder_dataset.h; the host placement, which `auto`
// picks for folders).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "data/image_folder.h"

namespace dptrain::data {

struct OpenedData {
  std::shared_ptr<const Dataset> train;  // null until load_data
  std::shared_ptr<const Dataset> test;
  std::filesystem::path dir;          // where it was found
  std::vector<std::string> classes;   // by label
  std::vector<int64_t> sample_shape;  // [C, H, W]
  // A folder's listing (classes, files, labels of both splits) as SHA-256 hex: a resumed run
  // checks that its data is the data it was trained on. Empty for IDX files, whose order is fixed.
  std::string listing_digest;
  // What data.on_bad_file "skip" left out of a folder (both splits).
  SkippedFiles skipped;
};

// A data error naming the folder or file (and a hint) when the data is not there or not readable.
// What it is comes first, cheaply (a ddp rank opens it before its rendezvous): an IDX data set's
// files are found, and read by load_data; a folder is listed and its first picture read.
OpenedData open_data(const config::DataConfig& config);
// Reads what open_data left (the IDX files), checking that they hold what it said.
void load_data(OpenedData& data);

// `config` with what the data is filled in where it is empty (classes, channels, image_size); a
// data error naming the key when a value given differs from the data's.
config::DataConfig with_data_facts(config::DataConfig config, const OpenedData& data);

}  // namespace dptrain::data
