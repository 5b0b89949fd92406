#include "data/picture_check.h"

#include <ATen/Parallel.h>

#include <optional>

#include "core/error.h"
#include "core/terminal.h"
#include "data/folder_dataset.h"

namespace dptrain::data {

FolderListing readable_pictures(const std::filesystem::path& root, const FolderListing& listing,
                                int channels, const PictureLimits& limits, SkippedFiles& skipped) {
  const int64_t n = listing.size();
  std::vector<uint8_t> bad(static_cast<size_t>(n), 0);
  // Why picture i is no picture, or nothing. What is wrong with the machine rather than the file
  // (a permission, an I/O error) is not the file's fault: that error ends the run, as it would
  // without "skip", so that a file system's bad moment cannot quietly take samples away.
  const auto problem = [&](int64_t i) -> std::optional<std::string> {
    const std::filesystem::path path = root / std::string(listing.file(i));
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (!ec && bytes > largest_picture_file(limits)) {
      return core::printable(path.string()) + ": a file of " + std::to_string(bytes) +
             " bytes, larger than any picture within data.max_image_pixels";
    }
    try {
      read_folder_picture(path, channels, limits);
      return std::nullopt;
    } catch (const core::Error& e) {
      if (e.code() != core::ErrorCode::kData) throw;
      return core::printable(e.what());
    }
  };
  at::parallel_for(0, n, /*grain_size=*/16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) bad[static_cast<size_t>(i)] = problem(i) ? 1 : 0;
  });
  FolderListing kept;
  for (const auto& name : listing.classes()) kept.add_class(name);
  std::vector<int64_t> per_class(listing.classes().size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (bad[static_cast<size_t>(i)] != 0) {
      // The first few reasons in the listing's order, whichever thread found them: read again.
      if (skipped.examples.size() < SkippedFiles::kExamples) {
        skipped.add(problem(i).value_or(core::printable(std::string(listing.file(i)))));
      } else {
        ++skipped.count;
      }
      continue;
    }
    kept.add_file(listing.file(i), static_cast<int32_t>(listing.label(i)));
    ++per_class[static_cast<size_t>(listing.label(i))];
  }
  for (size_t c = 0; c < per_class.size(); ++c) {
    if (per_class[c] == 0) skipped.add_empty_class(root, listing.classes()[c]);
  }
  return kept;
}

}  // namespace dptrain::data
