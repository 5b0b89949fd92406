#include "data/image_file.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "support/catch.h"

using namespace dptrain;

TEST_CASE("PNG images become the pixels torchvision's Grayscale, Resize and ToTensor make",
          "[data]") {
  // tests/data/images/make_torchvision_pixels.py wrote the images and torchvision 0.14's pixels.
  const std::filesystem::path dir = std::filesystem::path(DPTRAIN_SOURCE_DIR) / "tests/data/images";
  const auto expected = nlohmann::json::parse(core::read_text_file(dir / "torchvision.json"));
  for (const char* name : {"colour.png", "grey.png", "small.png"}) {
    INFO(name);
    const auto images = data::read_input_images(dir / name);
    REQUIRE(images.size() == 1);
    REQUIRE(images[0].image.sizes() == torch::IntArrayRef({1, 28, 28}));
    const torch::Tensor ours = (images[0].image * 255).round().to(torch::kInt64).flatten();
    const torch::Tensor theirs = torch::tensor(expected.at(name).get<std::vector<int64_t>>());
    CHECK(torch::equal(ours, theirs));
  }
}

TEST_CASE(
    "predict refuses a thin picture that a resize of its shorter side would make vast, naming "
    "the picture, before allocating it",
    "[data][security]") {
  data::InputShape shape;
  config::TransformSpec resize;
  resize.name = config::TransformName::kResize;
  resize.size = {224};
  shape.transforms = {resize};
  // One row of 16384 pixels: 224 rows of 3,670,016 once resized.
  const torch::Tensor thin = torch::zeros({1, 16384, 1}, torch::kUInt8);
  try {
    data::to_model_input(thin, shape, "thin.png");
    FAIL("the thin picture was resized");
  } catch (const core::Error& e) {
    CHECK(std::string(e.what()) ==
          "thin.png: the run's data.eval_transforms: a resize of the shorter side to 224 makes "
          "this 16384x1 picture 3670016 pixels long, more than the 16384 a side transforms make");
  }
}
