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
// class folder with no picture. With data.on_bad_file "skip" (a SkippedFiles given), the
// refusals that concern one file (a link out or nowhere, a format not decoded, no regular file, a
// name not UTF-8) leave it out instead, counted, and a class folder with no picture stays a class
// with no samples (as ImageFolder's allow_empty=True keeps it). The names are held packed, one
// string for all: a listing of 2,000,000 files costs their names' bytes and 12 bytes each.
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

// What data.on_bad_file "skip" left out of a data set: how many pictures, the first few with why
// (printable), and the class folders ("train/<class>", printable) left without a picture.
struct SkippedFiles {
  static constexpr size_t kExamples = 5;
  int64_t count = 0;
  std::vector<std::string> examples;
  std::vector<std::string> empty_classes;
  void add(const std::string& file_and_why);
  // The class folder `name` of the split folder `root`, once.
  void add_empty_class(const std::filesystem::path& root, const std::string& name);
};

// Lists `root` (a data error naming the entry and a hint for each refusal above); with `skipped`,
// files are left out into it instead of refused.
FolderListing list_image_folder(const std::filesystem::path& root, SkippedFiles* skipped = nullptr);

}  // namespace dptrain::data
