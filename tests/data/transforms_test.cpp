// dptrain's transforms against torchvision's (Debian's python3-torchvision, tests/python/
// torchvision_transforms.py) on real Fashion-MNIST pictures, grey and colour (three real images as
// the channels): crops, pads in every mode, flips and normalize equal bit for bit; bilinear
// resizes (antialiased, and not) within one grey level, the largest difference measured printed;
// and random crops drawn from a sample's seed (seed, epoch, index) are the boxes torchvision's
// get_params draws after torch.manual_seed of that seed, so whole random pipelines come out equal.
#include "data/transforms.h"

#include <ATen/CPUGeneratorImpl.h>

#include <map>

#include "data/image_dataset.h"
#include "model/state_dict.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

constexpr int64_t kPictures = 4;

// Picture k of the real training set as uint8 [1, 28, 28].
torch::Tensor real_picture(const data::ImageDataset& real, int64_t k) {
  return real.raw_sample(k).pixels.contiguous();
}

void write_pnm(const std::filesystem::path& path, const torch::Tensor& chw) {
  const torch::Tensor hwc = chw.permute({1, 2, 0}).contiguous();
  const std::string magic = chw.size(0) == 1 ? "P5" : "P6";
  write_text(path, magic + " " + std::to_string(chw.size(2)) + " " + std::to_string(chw.size(1)) +
                       " 255\n" +
                       std::string(reinterpret_cast<const char*>(hwc.data_ptr<uint8_t>()),
                                   static_cast<size_t>(hwc.numel())));
}

config::TransformSpec spec_of(config::TransformName name, std::vector<int64_t> size = {}) {
  config::TransformSpec t;
  t.name = name;
  t.size = std::move(size);
  return t;
}

// dptrain's output for each fixed case torchvision_transforms.py computes.
std::map<std::string, torch::Tensor> fixed_outputs(const torch::Tensor& img) {
  const int64_t c = img.size(0);
  const std::vector<double> mean =
      c == 1 ? std::vector<double>{0.2860} : std::vector<double>{0.2860, 0.3530, 0.5};
  const std::vector<double> std =
      c == 1 ? std::vector<double>{0.3530} : std::vector<double>{0.3530, 0.2860, 0.25};
  std::map<std::string, torch::Tensor> out = {
      {"resize_17x23", data::resize(img, {17, 23}, true)},
      {"resize_40x36", data::resize(img, {40, 36}, true)},
      {"resize_short_20", data::resize(img, {20}, true)},
      {"resize_plain_13x13", data::resize(img, {13, 13}, false)},
      {"center_crop_20x18", data::center_crop(img, {20, 18})},
      {"center_crop_33x31", data::center_crop(img, {33, 31})},
      {"crop_outside", data::crop(img, {-3, 5, 30, 12})},
      {"hflip", data::horizontal_flip(img)},
      {"normalize", data::normalize(img.to(torch::kFloat32).div(255.0f), mean, std)},
  };
  for (const std::string mode : {"constant", "edge", "reflect", "symmetric"}) {
    out["pad_" + mode] = data::pad(img, {3, 1, 2, 4}, 7, mode);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "transforms equal torchvision's on real pictures: crops, pads, flips and normalize exactly, "
    "resizes within a grey level, random boxes drawn as get_params draws them",
    "[data][transforms]") {
  if (run_program("/usr/bin/python3", "-c 'import torchvision'").status != 0) {
    DPTRAIN_SKIP("Debian's python3-torchvision is not installed (scripts/setup.sh installs it)");
  }
  TempDir dir;
  write_real_subset(dir / "idx", 3 * kPictures, 0);
  const auto real = data::ImageDataset::from_idx_files(
      dir / "idx" / "train-images-idx3-ubyte.gz", dir / "idx" / "train-labels-idx1-ubyte.gz", 10);
  std::map<std::string, torch::Tensor> pictures;
  for (int64_t k = 0; k < kPictures; ++k) {
    pictures["grey" + std::to_string(k)] = real_picture(real, k);
    pictures["colour" + std::to_string(k)] =
        torch::cat({real_picture(real, kPictures + 2 * k),
                    real_picture(real, kPictures + 2 * k + 1), real_picture(real, k)});
  }
  std::filesystem::create_directories(dir / "pictures");
  for (const auto& [name, img] : pictures) {
    write_pnm(dir / "pictures" / (name + (img.size(0) == 1 ? ".pgm" : ".ppm")), img);
  }
  // Seeds as the loaders make them, for epochs 0 to 2 of sample indices 0 to 3.
  std::vector<uint64_t> seeds;
  std::string seed_args;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (int64_t index = 0; index < 4; ++index) {
      seeds.push_back(data::sample_seed(/*seed=*/42, epoch, index));
      seed_args += " " + std::to_string(seeds.back());
    }
  }
  const auto script =
      std::filesystem::path(DPTRAIN_SOURCE_DIR) / "tests/python/torchvision_transforms.py";
  const auto peer = run_program(
      "/usr/bin/python3",
      shell_words({script.string(), (dir / "pictures").string(), (dir / "theirs.pt").string()}) +
          seed_args);
  INFO(peer.err);
  REQUIRE(peer.status == 0);
  std::map<std::string, torch::Tensor> theirs;
  for (auto& [name, tensor] : model::decode_state_dict(read_bytes(dir / "theirs.pt"))) {
    theirs[name] = tensor;
  }

  double largest_resize_difference = 0;
  int64_t compared = 0;
  for (const auto& [picture, img] : pictures) {
    for (const auto& [name, ours] : fixed_outputs(img)) {
      CAPTURE(picture, name);
      const torch::Tensor& reference = theirs.at(picture + "/" + name);
      REQUIRE(ours.sizes() == reference.sizes());
      REQUIRE(ours.scalar_type() == reference.scalar_type());
      if (name.rfind("resize", 0) == 0) {
        const double d =
            (ours.to(torch::kFloat64) - reference.to(torch::kFloat64)).abs().max().item<double>();
        CHECK(d <= 1.0);
        largest_resize_difference = std::max(largest_resize_difference, d);
      } else {
        CHECK(torch::equal(ours, reference));
      }
      ++compared;
    }
    config::TransformSpec crop = spec_of(config::TransformName::kRandomCrop, {28, 28});
    crop.padding = {2, 2, 2, 2};
    config::TransformSpec resized = spec_of(config::TransformName::kRandomResizedCrop, {24, 24});
    config::TransformSpec normalize = spec_of(config::TransformName::kNormalize);
    normalize.mean =
        img.size(0) == 1 ? std::vector<double>{0.2860} : std::vector<double>{0.2860, 0.3530, 0.5};
    normalize.std =
        img.size(0) == 1 ? std::vector<double>{0.3530} : std::vector<double>{0.3530, 0.2860, 0.25};
    const config::TransformSpec flip = spec_of(config::TransformName::kRandomHorizontalFlip);
    for (const uint64_t seed : seeds) {
      CAPTURE(picture, seed);
      const std::string key = picture + "/" + std::to_string(seed) + "/";
      at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
      const data::CropBox box =
          data::random_resized_crop_box(28, 28, resized.scale, resized.ratio, g);
      CHECK(torch::equal(torch::tensor({box.top, box.left, box.height, box.width}),
                         theirs.at(key + "box_resized")));
      g = at::make_generator<at::CPUGeneratorImpl>(seed);
      const data::CropBox cropped = data::random_crop_box(32, 32, {28, 28}, g);
      CHECK(torch::equal(torch::tensor({cropped.top, cropped.left, cropped.height, cropped.width}),
                         theirs.at(key + "box_crop")));
      g = at::make_generator<at::CPUGeneratorImpl>(seed);
      CHECK(torch::equal(data::apply_transforms({crop, flip}, img, g), theirs.at(key + "lenet")));
      g = at::make_generator<at::CPUGeneratorImpl>(seed);
      const torch::Tensor ours = data::apply_transforms({resized, flip, normalize}, img, g);
      const torch::Tensor& reference = theirs.at(key + "resnet");
      REQUIRE(ours.sizes() == reference.sizes());
      // One grey level of the resize, through normalize's 1/std.
      CHECK((ours - reference).abs().max().item<double>() <= 1.0 / 255.0 / 0.25 + 1e-6);
      compared += 4;
    }
  }
  CHECK(compared == static_cast<int64_t>(pictures.size()) * (13 + 4 * 12));
  WARN("largest difference of a resize from torchvision's: " << largest_resize_difference
                                                             << " grey levels");
}
