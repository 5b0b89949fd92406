// What a PNG must be before stb_image decodes it. stb inflates the whole zlib stream into a buffer
// it doubles as it goes, whatever the header's size says, and is laxer than zlib: it ignores the
// window size in the zlib header, takes Apple's CgBI files (raw deflate, no zlib header at all),
// and reads chunks in any order. So a few megabytes of a bomb that zlib itself would refuse could
// cost gigabytes there. Here zlib inflates the image data first, keeping none of it.
#pragma once

#include <cstdint>
#include <string>

namespace dptrain::data {

// Nothing when `png` (a file that starts with PNG's signature) opens with its IHDR chunk, has no
// CgBI chunk and no chunk past its end, and its image data inflate with zlib, completely, to no
// fewer bytes than IHDR's width, height and format need, nor more than they can hold; else why not.
std::string png_problem(const std::string& png);

// The width and height IHDR declares, read before stb_image, whose own check of a size past its
// int arithmetic says only "unknown image type"; false when `png` does not open with IHDR.
bool png_declared_size(const std::string& png, int64_t* width, int64_t* height);

}  // namespace dptrain::data
