// What a binary PGM/PPM (P5/P6) must be before stb_image decodes it. Debian's stb_image 2.27
// ignores a short read of the raster (it decodes uninitialised memory: a 13-byte "P5 28 28 255"
// classified as whatever the heap held), overflows on a long number, ignores maxval (a maxval of
// 15 is read as if 255) and takes 16-bit samples in the wrong byte order. So the header is parsed
// here first, as netpbm defines it, and only what stb then reads right gets through.
#pragma once

#include <string>

namespace dptrain::data {

// Nothing when `pnm` (a file that starts "P5" or "P6") has a whole header (whitespace and '#'
// comments between width, height and maxval, one whitespace byte after maxval), a width and a
// height from 1, maxval 255, and every byte of the raster that header declares; else why not.
std::string pnm_problem(const std::string& pnm);

}  // namespace dptrain::data
