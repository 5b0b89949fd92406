// What a PNG's image data inflate to, measured before stb_image decodes it: stb inflates the whole
// zlib stream into a buffer it doubles as it goes, whatever the header's size says, so a few
// megabytes of a zlib bomb would cost gigabytes there.
#pragma once

#include <string>

namespace dptrain::data {

// Nothing when `png` (a file that starts with PNG's signature) inflates to no more than its
// header's width, height and format can hold; else why not. Malformed chunks are left for
// stb_image to report.
std::string png_inflation_problem(const std::string& png);

}  // namespace dptrain::data
