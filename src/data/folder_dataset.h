// The pictures of an image folder (data/image_folder.h) as a Dataset: each batch reads and decodes
// its files where the loader fills it (its worker threads), converted to `channels` as PIL's
// convert() does and scaled as ToTensor's v / 255, so that a sample is what torchvision's
// ImageFolder + ToTensor give for the same index. Until transforms can resize, every picture must
// have the first one's size: another is an error naming the file.
#pragma once

#include <filesystem>

#include "data/dataset.h"
#include "data/image_folder.h"
#include "data/picture.h"

namespace dptrain::data {

// The largest file a picture within `limits` can be: a larger one is refused before it is read,
// as predict refuses one.
size_t largest_picture_file(const PictureLimits& limits);

// The picture at `path` read (a file larger than largest_picture_file refused unread) and
// decoded, uint8 [H, W, channels]; a data error naming it when it is no readable picture.
torch::Tensor read_folder_picture(const std::filesystem::path& path, int channels,
                                  const PictureLimits& limits);

class FolderDataset : public Dataset {
 public:
  // Reads the first picture for the sample shape; a data error naming it when it is no picture.
  FolderDataset(std::filesystem::path root, FolderListing listing, int channels,
                PictureLimits limits = {});

  int64_t size() const override { return listing_.size(); }
  std::vector<int64_t> sample_shape() const override { return {channels_, height_, width_}; }
  void fill_batch(c10::ArrayRef<int64_t> indices, torch::Tensor& images,
                  torch::Tensor& labels) const override;
  // A picture as decoded, of whatever size it has.
  RawSample raw_sample(int64_t i) const override;
  std::string sample_name(int64_t i) const override;
  const FolderListing& listing() const { return listing_; }

 private:
  // Picture i decoded, uint8 [H, W, channels].
  torch::Tensor picture(int64_t i) const;

  std::filesystem::path root_;
  FolderListing listing_;
  int channels_;
  PictureLimits limits_;
  int64_t height_ = 0;
  int64_t width_ = 0;
};

}  // namespace dptrain::data
