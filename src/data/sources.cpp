#include "data/sources.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <system_error>

#include "core/crypto.h"
#include "core/error.h"
#include "core/terminal.h"
#include "data/classes.h"
#include "data/folder_dataset.h"
#include "data/image_folder.h"
#include "data/locate.h"
#include "data/picture_check.h"
#include "data/transforms.h"

namespace dptrain::data {
namespace {

using core::Error;
using core::ErrorCode;

constexpr char kLayoutHint[] =
    "data.dir is the folder holding train/<class>/<picture> and test/<class>/<picture> (PNG, "
    "JPEG, PGM/PPM), as torchvision's ImageFolder reads each";

// At most the first 12 names (an error about 1,000 classes need not list them all).
std::string names_text(const std::vector<std::string>& names) {
  constexpr size_t kShown = 12;
  std::string text;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) {
    text += (text.empty() ? "\"" : ", \"") + names[i] + "\"";
  }
  if (names.size() > kShown) text += ", ... (" + std::to_string(names.size()) + " classes)";
  return core::printable(text);
}

std::filesystem::path split_folder(const std::filesystem::path& dir, const char* split) {
  const std::filesystem::path folder = dir / split;
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    throw Error(ErrorCode::kData,
                "data.dir " + core::printable(dir.string()) + ": no folder " + split + " in it",
                kLayoutHint);
  }
  return folder;
}

// Every name and label of both listings, each ended by a NUL (no name holds one), so that no
// other listing has the same bytes.
std::string digest_of(const FolderListing& train, const FolderListing& test) {
  core::Sha256 hash;
  for (const FolderListing* listing : {&train, &test}) {
    hash.update(std::to_string(listing->classes().size()) + '\0');
    for (const auto& name : listing->classes()) hash.update(name + '\0');
    hash.update(std::to_string(listing->size()) + '\0');
    for (int64_t i = 0; i < listing->size(); ++i) {
      hash.update(listing->file(i));
      hash.update(std::string(1, '\0') + std::to_string(listing->label(i)) + '\0');
    }
  }
  return core::hex(hash.finish());
}

PictureLimits limits_of(const config::DataConfig& config) {
  PictureLimits limits;
  limits.max_pixels = config.max_image_pixels;
  limits.max_sample_bytes = config.max_image_pixels * 4;  // 8-bit RGBA, as PIL would hold it
  return limits;
}

// A split's listing; with data.on_bad_file "skip", only its pictures that read (a data error when
// none is left).
FolderListing split_listing(const config::DataConfig& config, const std::filesystem::path& root,
                            int channels, SkippedFiles& skipped) {
  if (config.on_bad_file == config::BadFiles::kError) return list_image_folder(root);
  const int64_t before = skipped.count;
  const size_t examples_before = skipped.examples.size();
  FolderListing listing = readable_pictures(root, list_image_folder(root, &skipped), channels,
                                            limits_of(config), skipped);
  if (listing.size() == 0) {
    // This split's first reason, when the examples had room for it.
    const std::string first = skipped.examples.size() > examples_before
                                  ? ", " + skipped.examples[examples_before]
                                  : std::string();
    throw Error(ErrorCode::kData,
                core::printable(root.string()) + ": no picture in it reads (" +
                    std::to_string(skipped.count - before) + " left out" + first + ")",
                kLayoutHint);
  }
  return listing;
}

OpenedData open_folder(const config::DataConfig& config) {
  OpenedData data;
  data.dir = config.dir;
  const std::filesystem::path train_root = split_folder(data.dir, "train");
  const std::filesystem::path test_root = split_folder(data.dir, "test");
  const int channels = config.channels == 0 ? 3 : static_cast<int>(config.channels);
  FolderListing train = split_listing(config, train_root, channels, data.skipped);
  FolderListing test = split_listing(config, test_root, channels, data.skipped);
  // ImageFolder numbers each split's classes by itself: test classes other than train's would
  // silently give a label another meaning.
  if (test.classes() != train.classes()) {
    throw Error(ErrorCode::kData,
                core::printable(test_root.string()) + " has the classes " +
                    names_text(test.classes()) + ", and " + core::printable(train_root.string()) +
                    " has " + names_text(train.classes()),
                "give both splits the same class folders, so that a label means one class");
  }
  data.classes = train.classes();
  data.listing_digest = digest_of(train, test);
  auto train_set = std::make_shared<const FolderDataset>(train_root, std::move(train), channels,
                                                         limits_of(config));
  auto test_set = std::make_shared<const FolderDataset>(test_root, std::move(test), channels,
                                                        limits_of(config));
  data.sample_shape = train_set->sample_shape();
  // The model takes what the transforms make: pictures of other sizes are fine where both lists
  // bring them to one (a resize to [height, width] first).
  const std::vector<int64_t> trained =
      shape_after(config.train_transforms, data.sample_shape, "data.train_transforms");
  const std::vector<int64_t> evaluated =
      shape_after(config.eval_transforms, test_set->sample_shape(), "data.eval_transforms");
  // (Lists that differ for pictures of one size are model_sample_shape's to name.)
  if (test_set->sample_shape() != data.sample_shape && evaluated != trained) {
    const auto& t = test_set->sample_shape();
    throw Error(ErrorCode::kData,
                core::printable((test_root / std::string(test_set->listing().file(0))).string()) +
                    fmt::format(": a picture of {}x{}, which data.eval_transforms make {}x{}, and "
                                "the training set's first is {}x{}, which data.train_transforms "
                                "make {}x{}",
                                t[2], t[1], evaluated[2], evaluated[1], data.sample_shape[2],
                                data.sample_shape[1], trained[2], trained[1]),
                "give every picture one size, or begin both lists with a resize to [height, "
                "width]");
  }
  data.train = std::move(train_set);
  data.test = std::move(test_set);
  return data;
}

// Fashion-MNIST's and MNIST's images: one channel of 28x28.
const std::vector<int64_t> kIdxShape = {1, 28, 28};

OpenedData open_idx(const config::DataConfig& config) {
  const std::string dataset = config::name_of(config.dataset);
  OpenedData data;
  data.dir = locate_data_dir(config.dir, dataset);
  data.classes = class_names(dataset);
  data.sample_shape = kIdxShape;
  return data;
}

[[noreturn]] void differs(const std::string& key, const std::string& given,
                          const std::string& found, const OpenedData& data) {
  throw Error(ErrorCode::kData,
              key + " is " + given + ", and the data in " + core::printable(data.dir.string()) +
                  " has " + found,
              "the model was made for the data " + key +
                  " names (its run recorded it): give it that data, or --set " + key +
                  " to the data's to take it as it is");
}

}  // namespace

OpenedData open_data(const config::DataConfig& config) {
  return config.dataset == config::Dataset::kFolder ? open_folder(config) : open_idx(config);
}

void load_data(OpenedData& data) {
  if (data.train) return;
  Splits splits = load_splits(data.dir);
  for (const auto* split : {&splits.train, &splits.test}) {
    if ((*split)->sample_shape() != kIdxShape) {
      const auto& s = (*split)->sample_shape();
      throw Error(ErrorCode::kData,
                  core::printable(data.dir.string()) +
                      fmt::format(": IDX images of {}x{}, and Fashion-MNIST's and MNIST's are "
                                  "28x28",
                                  s[2], s[1]),
                  "give the data set's own files, or write the pictures into a folder "
                  "(data.dataset \"folder\")");
    }
  }
  data.train = std::move(splits.train);
  data.test = std::move(splits.test);
}

config::DataConfig with_data_facts(config::DataConfig config, const OpenedData& data) {
  const int64_t channels = data.sample_shape[0];
  const std::vector<int64_t> size = {data.sample_shape[1], data.sample_shape[2]};
  if (config.channels != 0 && config.channels != channels) {
    differs("data.channels", std::to_string(config.channels), std::to_string(channels), data);
  }
  if (!config.classes.empty() && config.classes != data.classes) {
    differs("data.classes", names_text(config.classes), names_text(data.classes), data);
  }
  if (!config.image_size.empty() && config.image_size != size) {
    differs("data.image_size", fmt::format("[{}, {}]", config.image_size[0], config.image_size[1]),
            fmt::format("[{}, {}]", size[0], size[1]), data);
  }
  config.channels = channels;
  config.classes = data.classes;
  config.image_size = size;
  return config;
}

}  // namespace dptrain::data
