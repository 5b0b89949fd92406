#include "support/picture_folders.h"

#include <algorithm>
#include <cstdio>

#include "data/classes.h"
#include "data/image_dataset.h"
#include "support/fixtures.h"

namespace dptrain::testing {
namespace {

void write_split(const std::filesystem::path& folder, const data::ImageDataset& images,
                 const PictureFolderOptions& options) {
  for (int64_t i = 0; i < images.size(); ++i) {
    const data::Batch one = images.get_batch({i});
    const torch::Tensor pixels =
        (one.images[0][0].narrow(0, 0, options.rows) * 255).round().to(torch::kUInt8).contiguous();
    const auto dir =
        folder / picture_class_folder(one.labels[0].item<int64_t>(), options.numbered_classes);
    std::filesystem::create_directories(dir);
    char name[24];
    std::snprintf(name, sizeof name, "%05lld.pgm", static_cast<long long>(i));
    write_text(dir / name,
               "P5 28 " + std::to_string(options.rows) + " 255\n" +
                   std::string(reinterpret_cast<const char*>(pixels.data_ptr<uint8_t>()),
                               static_cast<size_t>(pixels.numel())));
  }
}

}  // namespace

std::string picture_class_folder(int64_t label, bool numbered) {
  // "T-shirt/top" cannot name a folder: a user would write "T-shirt_top".
  std::string name = data::class_names("fashion-mnist")[static_cast<size_t>(label)];
  std::replace(name.begin(), name.end(), '/', '_');
  return numbered ? std::to_string(label) + "_" + name : name;
}

void write_picture_folder(const std::filesystem::path& root, int64_t train, int64_t test,
                          const PictureFolderOptions& options) {
  const std::filesystem::path idx = root / ".idx";
  write_real_subset(idx, train, test);
  const auto split = [&](const char* images, const char* labels) {
    return data::ImageDataset::from_idx_files(idx / images, idx / labels, 10);
  };
  write_split(root / "train", split("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              options);
  write_split(root / "test", split("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
              options);
  std::filesystem::remove_all(idx);
}

}  // namespace dptrain::testing
