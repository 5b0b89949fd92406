#include "data/image_dataset.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "data/idx.h"

namespace dptrain::data {
namespace {

using core::Error;
using core::ErrorCode;

torch::Tensor to_tensor(IdxArray&& array) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(array.values));
  // The tensor shares the vector's memory; the deleter keeps the vector alive as long as it.
  return torch::from_blob(
      owned->data(), array.dims, [owned](void*) mutable { owned.reset(); }, torch::kUInt8);
}

// v / 255 exactly as ToTensor computes it, looked up instead of divided per pixel.
const std::array<float, 256>& unit_scale_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  return table;
}

}  // namespace

ImageDataset::ImageDataset(torch::Tensor images, torch::Tensor labels, int64_t num_classes)
    : images_(std::move(images)), labels_(std::move(labels)), num_classes_(num_classes) {
  TORCH_CHECK(
      images_.dim() == 3 && images_.scalar_type() == torch::kUInt8 && images_.is_contiguous(),
      "ImageDataset: images must be contiguous uint8 [N, H, W]");
  TORCH_CHECK(labels_.dim() == 1 && labels_.scalar_type() == torch::kUInt8,
              "ImageDataset: labels must be uint8 [N]");
  TORCH_CHECK(labels_.size(0) == images_.size(0), "ImageDataset: image and label counts differ");
  if (labels_.numel() > 0 && labels_.max().item<int64_t>() >= num_classes) {
    throw Error(ErrorCode::kData,
                "a label is " + std::to_string(labels_.max().item<int64_t>()) + ", but there are " +
                    std::to_string(num_classes) + " classes",
                "the label file does not belong to this data set");
  }
}

ImageDataset ImageDataset::from_idx_files(const std::filesystem::path& images_file,
                                          const std::filesystem::path& labels_file,
                                          int64_t num_classes) {
  IdxArray images = read_idx(images_file);
  IdxArray labels = read_idx(labels_file);
  if (images.dims.size() != 3) {
    throw Error(ErrorCode::kData,
                images_file.string() + ": expected 3 dimensions (count, height, width), found " +
                    std::to_string(images.dims.size()),
                "is this an image file rather than a label file?");
  }
  if (labels.dims.size() != 1) {
    throw Error(ErrorCode::kData,
                labels_file.string() + ": expected 1 dimension (count), found " +
                    std::to_string(labels.dims.size()),
                "is this a label file rather than an image file?");
  }
  if (images.dims[0] != labels.dims[0]) {
    throw Error(ErrorCode::kData,
                images_file.string() + " holds " + std::to_string(images.dims[0]) + " images but " +
                    labels_file.string() + " holds " + std::to_string(labels.dims[0]) + " labels",
                "the two files come from different data sets or one is damaged");
  }
  try {
    return ImageDataset(to_tensor(std::move(images)), to_tensor(std::move(labels)), num_classes);
  } catch (const Error& e) {
    throw Error(e.code(), labels_file.string() + ": " + e.what(), e.hint());
  }
}

std::vector<int64_t> ImageDataset::sample_shape() const {
  return {1, images_.size(1), images_.size(2)};
}

void ImageDataset::fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                              torch::Tensor& labels) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t pixels = images_.size(1) * images_.size(2);
  check_batch_buffers(images, labels, n, pixels, "ImageDataset");
  const uint8_t* src = images_.data_ptr<uint8_t>();
  const uint8_t* src_labels = labels_.data_ptr<uint8_t>();
  float* dst = images.data_ptr<float>();
  int64_t* dst_labels = labels.data_ptr<int64_t>();
  const auto& scale = unit_scale_table();
  for (int64_t b = 0; b < n; ++b) {
    const int64_t i = indices[b];
    TORCH_CHECK(i >= 0 && i < size(), "ImageDataset: index ", i, " out of range");
    const uint8_t* row = src + i * pixels;
    float* out = dst + b * pixels;
    for (int64_t p = 0; p < pixels; ++p) out[p] = scale[row[p]];
    dst_labels[b] = src_labels[i];
  }
}

StoredSplit ImageDataset::stored_split() const {
  const auto& scale = unit_scale_table();
  torch::Tensor table = torch::empty({256}, torch::kFloat32);
  std::copy(scale.begin(), scale.end(), table.data_ptr<float>());
  return {images_.unsqueeze(1), labels_, table, nullptr};
}

RawSample ImageDataset::raw_sample(int64_t i) const {
  TORCH_CHECK(i >= 0 && i < size(), "ImageDataset: index ", i, " out of range");
  return {images_[i].unsqueeze(0), labels_[i].item<int64_t>()};
}

}  // namespace dptrain::data
