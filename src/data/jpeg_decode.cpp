#include "data/jpeg_decode.h"

#include <turbojpeg.h>

#include <memory>

#include "data/pil_convert.h"

namespace dptrain::data {
namespace {

struct CloseDecompressor {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Decompressor = std::unique_ptr<void, CloseDecompressor>;

std::string jpeg_error_text(void* handle) {
  return std::string("libjpeg-turbo: ") + tjGetErrorStr2(handle);
}

const unsigned char* jpeg_bytes(const std::string& jpeg) {
  return reinterpret_cast<const unsigned char*>(jpeg.data());
}
unsigned long jpeg_size(const std::string& jpeg) {
  return static_cast<unsigned long>(jpeg.size());
}

}  // namespace

std::string jpeg_problem(const std::string& jpeg, JpegInfo& info) {
  const Decompressor handle(tjInitDecompress());
  if (!handle) return "libjpeg-turbo could not start a decoder";
  int subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), jpeg_bytes(jpeg), jpeg_size(jpeg), &info.width,
                          &info.height, &subsampling, &colorspace) != 0) {
    return "a JPEG whose header no decoder reads (" + jpeg_error_text(handle.get()) + ")";
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    return "a CMYK JPEG, which dptrain does not convert; save it as RGB or grey";
  }
  info.grey = colorspace == TJCS_GRAY;
  return {};
}

std::string decode_jpeg(const std::string& jpeg, const JpegInfo& info, int channels,
                        torch::Tensor& pixels) {
  const Decompressor handle(tjInitDecompress());
  if (!handle) return "libjpeg-turbo could not start a decoder";
  // A grey file's own samples serve both conversions; a colour one decodes to RGB first, as PIL
  // opens it, and is weighed into grey as PIL's convert("L") does (libjpeg's own grey output
  // would be the luma channel, rounded otherwise).
  const int format = channels == 1 && info.grey ? TJPF_GRAY : TJPF_RGB;
  const int stored = format == TJPF_GRAY ? 1 : 3;
  torch::Tensor decoded = torch::empty({info.height, info.width, stored}, torch::kUInt8);
  if (tjDecompress2(handle.get(), jpeg_bytes(jpeg), jpeg_size(jpeg), decoded.data_ptr<uint8_t>(),
                    info.width, 0, info.height, format,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    return "a JPEG that does not decode whole (" + jpeg_error_text(handle.get()) + ")";
  }
  pixels = stored == channels
               ? decoded
               : pil_convert(decoded.data_ptr<uint8_t>(), info.height, info.width, 3, 1);
  return {};
}

}  // namespace dptrain::data
