// The pictures of a folder in torchvision's ImageFolder layout (ROOT/<class>/**/<picture>), listed
// in ImageFolder's order, so that a PyTorch user's label numbers and sample indices are dptrain's:
// the class folders sorted by name (a link to a folder counts as one), then each class's folders
// walked, links followed, in the order of their sorted paths, and each folder's pictures sorted
// by name, with ImageFolder's extensions in any case. Names compare as bytes: the code points'
// order for UTF-8, which every name must be.
//
// Where ImageFolder lists what it cannot open, this refuses up front, naming the entry: a link
// that leads out of ROOT or nowhere, a link loop (os.walk would recurse until Python stops it),
// a picture in a format dptrain does not decode (BMP, TIFF, WebP), a name that is not UTF-8, a
// class folder with no picture. The names are held packed, one string for all: a listing of
// 2,000,000 files costs their names' bytes and 12 bytes each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dptrain::data {

class FolderListing {
 public:
  // The class folders' names: label i is classes()[i].
  const std::vector<std::string>& classes() const { return classes_; }
  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  // Sample i's path relative to the listed folder ("<class>/.../<name>"), and its label.
  std::string_view file(int64_t i) const;
  int64_t label(int64_t i) const { return labels_[static_cast<size_t>(i)]; }

  void add_class(std::string name) { classes_.push_back(std::move(name)); }
  void add_file(std::string_view relative, int32_t label);

 private:
  std::vector<std::string> classes_;
  std::string names_;           // every file's relative path, one after another
  std::vector<uint64_t> ends_;  // where each ends in names_
  std::vector<int32_t> labels_;
};

// Lists `root` (a data error naming the entry and a hint for each refusal above).
FolderListing list_image_folder(const std::filesystem::path& root);

}  // namespace dptrain::data
