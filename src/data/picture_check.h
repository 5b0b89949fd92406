// data.on_bad_file "skip": which pictures of a listing can be read, found once when the data is
// opened rather than when a batch needs them, so that the samples left (and so every index, the
// listing's digest and each rank's share) are fixed before training starts.
#pragma once

#include <filesystem>

#include "data/image_folder.h"
#include "data/picture.h"

namespace dptrain::data {

// `listing` without the pictures that do not read and decode (each tried once, on this process's
// intra-op threads), in the same order and with the same classes; each left out is counted into
// `skipped` with why, and a class left with none is named there.
FolderListing readable_pictures(const std::filesystem::path& root, const FolderListing& listing,
                                int channels, const PictureLimits& limits, SkippedFiles& skipped);

}  // namespace dptrain::data
