// Pictures decode to the pixels PIL gives ImageFolder's loader (Image.open(f).convert("L" or
// "RGB")), byte for byte: real Fashion-MNIST images written here by PIL as PNG, PGM/PPM and JPEG
// (grey, and colour made of three real images as its channels, at 28x28 and scaled to 96x96 so
// that chroma subsampling matters), each compared with what PIL decodes from the same file. And a
// JPEG cut short, ones whose header declares 65,535 or 65,500 pixels a side and one whose header is
// no JPEG's are refused, naming the file, before anything of their size is allocated.
#include "data/picture.h"

#include <algorithm>

#include "core/error.h"
#include "data/image_file.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

// Writes each picture and, beside it as NAME.L.raw and NAME.RGB.raw, PIL's pixels of it.
constexpr char kWritePictures[] = R"py(
import gzip, sys
import numpy as np
from PIL import Image
data, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(data + "/train-images-idx3-ubyte.gz") as f:
    images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
for i in range(count):
    grey = Image.fromarray(images[i], "L")
    colour = Image.fromarray(np.stack([images[i], images[i + count], images[i + 2 * count]], -1),
                             "RGB")
    big = colour.resize((96, 96), Image.BILINEAR)
    for name, image, kind in [("grey.png", grey, "PNG"), ("grey.pgm", grey, "PPM"),
                              ("grey.jpg", grey, "JPEG"), ("colour.png", colour, "PNG"),
                              ("colour.ppm", colour, "PPM"), ("colour.jpg", colour, "JPEG"),
                              ("big.jpg", big, "JPEG")]:
        path = "%s/%d-%s" % (out, i, name)
        image.save(path, kind, **({"quality": 95} if kind == "JPEG" else {}))
        for mode in ("L", "RGB"):
            with open(path + "." + mode + ".raw", "wb") as raw:
                raw.write(np.asarray(Image.open(path).convert(mode)).tobytes())
Image.fromarray(images[0].astype(np.uint16) * 257).save(out + "/wide.png", "PNG")  # 16-bit grey
)py";

constexpr int kCount = 8;

bool pil_present() {
  return run_program("/usr/bin/python3", "-c 'import PIL, numpy'").status == 0;
}

// The first `count` pictures of each kind (and PIL's pixels of them) in `dir`.
void write_pictures(const TempDir& dir, int count) {
  const auto script = dir / "write.py";
  write_text(script, kWritePictures);
  const auto written =
      run_program("/usr/bin/python3", shell_words({script.string(), real_data_dir().string(),
                                                   dir.path().string(), std::to_string(count)}));
  INFO(written.err);
  REQUIRE(written.status == 0);
}

std::string decoded_bytes(const std::filesystem::path& file, int channels) {
  const torch::Tensor pixels = data::decode_picture(file, read_bytes(file), channels);
  REQUIRE(pixels.dim() == 3);
  REQUIRE(pixels.size(2) == channels);
  return {reinterpret_cast<const char*>(pixels.data_ptr<uint8_t>()),
          static_cast<size_t>(pixels.numel())};
}

// The offset of a JPEG's start-of-frame segment (baseline or progressive).
size_t start_of_frame(const std::string& jpeg) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (static_cast<uint8_t>(jpeg[i]) == 0xFF &&
        (static_cast<uint8_t>(jpeg[i + 1]) == 0xC0 || static_cast<uint8_t>(jpeg[i + 1]) == 0xC2)) {
      return i;
    }
  }
  FAIL("no start-of-frame segment");
  return 0;
}

std::string refusal_of(const std::filesystem::path& file, const std::string& bytes) {
  try {
    data::decode_picture(file, bytes, 3);
  } catch (const core::Error& e) {
    CHECK(e.code() == core::ErrorCode::kData);
    return e.what();
  }
  FAIL("decoded");
  return {};
}

}  // namespace

TEST_CASE(
    "PNG, PGM/PPM and JPEG pictures of real images decode to PIL's convert(\"L\") and "
    "convert(\"RGB\") pixels byte for byte, and predict reads a JPEG",
    "[data][picture]") {
  if (!pil_present()) {
    DPTRAIN_SKIP("Debian's python3-pil is not installed (scripts/setup.sh installs it)");
  }
  TempDir dir;
  write_pictures(dir, kCount);
  for (int i = 0; i < kCount; ++i) {
    for (const char* name : {"grey.png", "grey.pgm", "grey.jpg", "colour.png", "colour.ppm",
                             "colour.jpg", "big.jpg"}) {
      const auto file = dir / (std::to_string(i) + "-" + name);
      CAPTURE(file.filename().string());
      CHECK(decoded_bytes(file, 1) == read_bytes(file.string() + ".L.raw"));
      CHECK(decoded_bytes(file, 3) == read_bytes(file.string() + ".RGB.raw"));
    }
  }
  // PIL opens it as mode I;16, whose convert("L") clips where stb keeps the high byte.
  CHECK_THAT(refusal_of(dir / "wide.png", read_bytes(dir / "wide.png")),
             ContainsSubstring("wide.png: a 16-bit grey PNG, which dptrain does not decode"));
  // predict's input from a JPEG: PIL's grey pixels, at 28x28 already, as ToTensor's v / 255.
  const auto jpeg = dir / "0-grey.jpg";
  const auto inputs = data::read_input_images(jpeg);
  REQUIRE(inputs.size() == 1);
  const torch::Tensor grey =
      torch::from_blob(read_bytes(jpeg.string() + ".L.raw").data(), {784}, torch::kUInt8)
          .to(torch::kFloat32) /
      255.0f;
  CHECK(torch::equal(inputs[0].image.flatten(), grey));
}

TEST_CASE(
    "a JPEG cut short, ones declaring 65,535 or 65,500 pixels a side and one with no readable "
    "header are refused naming the file",
    "[data][picture][security]") {
  if (!pil_present()) {
    DPTRAIN_SKIP("Debian's python3-pil is not installed (scripts/setup.sh installs it)");
  }
  TempDir dir;
  write_pictures(dir, 1);
  const std::string jpeg = read_bytes(dir / "0-big.jpg");
  CHECK_THAT(refusal_of("cut.jpg", jpeg.substr(0, jpeg.size() / 2)),
             ContainsSubstring("cut.jpg: a JPEG that does not decode whole (libjpeg-turbo: "));
  CHECK_THAT(refusal_of("end.jpg", jpeg.substr(0, jpeg.size() - 2)),
             ContainsSubstring("end.jpg: a JPEG that does not decode whole"));
  // The frame's height, then width, as two big-endian bytes each.
  const auto declaring = [&](char high, char low) {
    std::string bytes = jpeg;
    const size_t frame = start_of_frame(bytes);
    for (size_t k : {5, 7}) {
      bytes[frame + k] = high;
      bytes[frame + k + 1] = low;
    }
    return bytes;
  };
  CHECK_THAT(refusal_of("huge.jpg", declaring('\xFF', '\xFF')),  // libjpeg's own limit: 65,500
             ContainsSubstring("huge.jpg: a JPEG whose header no decoder reads (libjpeg-turbo: "
                               "Maximum supported image dimension is 65500 pixels)"));
  CHECK_THAT(refusal_of("large.jpg", declaring('\xFF', '\xDC')),  // 65,500 a side
             ContainsSubstring("large.jpg: an image of 65500x65500 pixels, more than the 16 "
                               "megapixels or 16384 pixels a side dptrain decodes"));
  CHECK_THAT(refusal_of("colour.jpg", declaring('\x0B', '\xB8')),  // 3,000 a side, RGB
             ContainsSubstring("colour.jpg: an image of 3000x3000 pixels whose samples take "
                               "27000000 bytes, more than the 16 MiB dptrain decodes"));
  CHECK_THAT(refusal_of("header.jpg", jpeg.substr(0, 3) + std::string(64, 'x')),
             ContainsSubstring("header.jpg: a JPEG whose header no decoder reads"));
}
