#include "data/folder_dataset.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/terminal.h"

namespace dptrain::data {
// A picture's file holds no more than its samples and a little (PNG's stored deflate blocks, PGM's
// header, JPEG's tables; JPEG's samples are compressed).
size_t largest_picture_file(const PictureLimits& limits) {
  return static_cast<size_t>(limits.max_sample_bytes) / 4 * 5 + (size_t{1} << 20);
}

torch::Tensor read_folder_picture(const std::filesystem::path& path, int channels,
                                  const PictureLimits& limits) {
  return decode_picture(path, core::read_regular_file(path, largest_picture_file(limits)), channels,
                        limits);
}

FolderDataset::FolderDataset(std::filesystem::path root, FolderListing listing, int channels,
                             PictureLimits limits)
    : root_(std::move(root)), listing_(std::move(listing)), channels_(channels), limits_(limits) {
  TORCH_CHECK(channels == 1 || channels == 3, "FolderDataset: channels must be 1 or 3");
  TORCH_CHECK(listing_.size() > 0, "FolderDataset: an empty listing");
  const torch::Tensor first = picture(0);
  height_ = first.size(0);
  width_ = first.size(1);
}

torch::Tensor FolderDataset::picture(int64_t i) const {
  return read_folder_picture(root_ / std::string(listing_.file(i)), channels_, limits_);
}

void FolderDataset::fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                               torch::Tensor& labels) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t values = channels_ * height_ * width_;
  check_batch_buffers(images, labels, n, values, "FolderDataset");
  int64_t* dst_labels = labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < n; ++b) {
    const int64_t i = indices[b];
    TORCH_CHECK(i >= 0 && i < size(), "FolderDataset: index ", i, " out of range");
    const RawSample raw = raw_sample(i);  // [C, H, W] as decoded
    const torch::Tensor& pixels = raw.pixels;
    if (pixels.size(1) != height_ || pixels.size(2) != width_) {
      throw core::Error(core::ErrorCode::kData,
                        sample_name(i) + ": a picture of " + std::to_string(pixels.size(2)) + "x" +
                            std::to_string(pixels.size(1)) + ", and the data set's are " +
                            std::to_string(width_) + "x" + std::to_string(height_),
                        "give every picture one size, or make them one with a resize or a crop "
                        "in data.train_transforms and data.eval_transforms");
    }
    images[b].copy_(pixels.to(torch::kFloat32).div_(255.0f));  // ToTensor's v / 255
    dst_labels[b] = raw.label;
  }
}

RawSample FolderDataset::raw_sample(int64_t i) const {
  TORCH_CHECK(i >= 0 && i < size(), "FolderDataset: index ", i, " out of range");
  return {picture(i).permute({2, 0, 1}), listing_.label(i)};
}

std::string FolderDataset::sample_name(int64_t i) const {
  return core::printable((root_ / std::string(listing_.file(i))).string());
}

}  // namespace dptrain::data
