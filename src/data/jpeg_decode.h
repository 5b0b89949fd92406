// JPEG through Debian's libjpeg-turbo (its TurboJPEG API), the library torchvision and PIL decode
// with, so that the pixels are theirs: the default accurate integer IDCT and smooth upsampling.
// Its header is read first and bounds everything allocated; any warning the decoder gives (a
// file cut short, a corrupt entropy segment, which libjpeg otherwise fills in grey and accepts)
// refuses the file, and so does a progressive file of more scans than any encoder writes, which
// costs a pass over the whole image each.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace dptrain::data {

inline bool is_jpeg(const std::string& bytes) {
  return bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
         static_cast<uint8_t>(bytes[1]) == 0xD8 && static_cast<uint8_t>(bytes[2]) == 0xFF;
}

// What the header of `jpeg` (is_jpeg) declares.
struct JpegInfo {
  int width = 0;
  int height = 0;
  bool grey = false;  // one grey component; else YCbCr or RGB
};

// Reads the header into `info`; returns why not: a header no reader takes, or a CMYK file.
std::string jpeg_problem(const std::string& jpeg, JpegInfo& info);

// Decodes `jpeg`, whose header is `info`, into `pixels`, uint8 [H, W, channels]: 1 as PIL's
// convert("L") of what it opens (a grey JPEG's own samples; a colour one's RGB weighted as PIL
// weighs them), 3 as convert("RGB"). Returns why not, leaving `pixels` alone: any error or warning
// in decoding. The caller bounds the header's size first: that is what is allocated.
std::string decode_jpeg(const std::string& jpeg, const JpegInfo& info, int channels,
                        torch::Tensor& pixels);

}  // namespace dptrain::data
