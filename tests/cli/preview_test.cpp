// `dptrain preview` through the real binary: its .pt file opens in PyTorch with
// weights_only=True and holds the very samples training sees (the IDX file's own pixels for the
// test split; with random transforms, an epoch's draws after the hold-out, as the training
// split's dataset makes them), and its PNG sheet shows each sample's pixels; bad requests are
// refused with their option named.
#include "support/catch.h"

#include <stb_image.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "config/load.h"
#include "data/idx.h"
#include "data/sources.h"
#include "data/splits.h"
#include "model/registry.h"
#include "serialize/torch_file.h"
#include "support/fixtures.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

ProcessResult run_preview(const std::vector<std::string>& args) {
  std::vector<std::string> words = {"preview"};
  words.insert(words.end(), args.begin(), args.end());
  return run_dptrain(shell_words(words));
}

// SPLIT.pt's two tensors, read back through dptrain's own reader of torch.save files.
std::pair<torch::Tensor, torch::Tensor> preview_tensors(const std::filesystem::path& file) {
  const serialize::ValuePtr root = serialize::decode_torch_file(read_bytes(file));
  return {serialize::as_tensor(serialize::at(*root, "images", "images"), "images").clone(),
          serialize::as_tensor(serialize::at(*root, "labels", "labels"), "labels").clone()};
}

struct Sheet {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

Sheet read_sheet(const std::filesystem::path& png) {
  const std::string bytes = read_bytes(png);
  Sheet sheet;
  int stored = 0;
  unsigned char* pixels = stbi_load_from_memory(
      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()),
      &sheet.width, &sheet.height, &stored, 3);
  REQUIRE(pixels != nullptr);
  sheet.rgb.assign(pixels, pixels + 3 * sheet.width * sheet.height);
  stbi_image_free(pixels);
  return sheet;
}

const std::vector<std::string> kRandomTransforms = {
    "--set",
    R"(data.train_transforms=[{"name": "random_crop", "size": 28, "padding": 4},
                              {"name": "random_horizontal_flip"}])"};

}  // namespace

TEST_CASE(
    "preview writes a split's first samples as a .pt file PyTorch opens with weights_only=True "
    "and a PNG sheet of their pixels",
    "[cli][preview]") {
  TempDir dir;
  const ProcessResult preview =
      run_preview({"--split", "test", "--count", "6", "--output", (dir / "look").string(), "-q"});
  INFO(preview.err);
  REQUIRE(preview.status == 0);
  // The first six test images of the IDX file, as ToTensor scales them, with their labels.
  const data::IdxArray pixels =
      data::read_idx_items(real_data_dir() / "t10k-images-idx3-ubyte.gz", 0, 6);
  const data::IdxArray labels =
      data::read_idx_items(real_data_dir() / "t10k-labels-idx1-ubyte.gz", 0, 6);
  const torch::Tensor expected_images =
      torch::tensor(std::vector<int64_t>(pixels.values.begin(), pixels.values.end()))
          .reshape({6, 1, 28, 28})
          .to(torch::kFloat32) /
      255;
  const torch::Tensor expected_labels =
      torch::tensor(std::vector<int64_t>(labels.values.begin(), labels.values.end()));
  const auto [images, got_labels] = preview_tensors(dir / "look" / "test.pt");
  CHECK(images.sizes() == expected_images.sizes());
  CHECK(images.dtype() == torch::kFloat32);
  CHECK(torch::equal(images, expected_images));
  CHECK(torch::equal(got_labels, expected_labels));
  // stdout: a line per sample with its label and class, then what was written.
  CHECK(preview.out.find("    0      9  Ankle boot") != std::string::npos);
  CHECK(preview.out.find("6 test samples (epoch 1's draws) of 1x28x28") != std::string::npos);

  // The sheet: 3 columns of tiles 84 pixels a side (28 scaled by 3), each pixel a sample's grey
  // level, captions under them.
  const Sheet sheet = read_sheet(dir / "look" / "test.png");
  CHECK(preview.out.find(fmt::format("({}x{}, values 0 to 1", sheet.width, sheet.height)) !=
        std::string::npos);
  CHECK(sheet.width == 2 + 3 * (84 + 2));
  CHECK(sheet.height == 2 + 2 * (84 + 12 + 2));
  int64_t compared = 0;
  for (int64_t i = 0; i < 6; ++i) {
    const int64_t left = 2 + (i % 3) * 86, top = 2 + (i / 3) * 98;
    for (int64_t y = 0; y < 84; ++y) {
      for (int64_t x = 0; x < 84; ++x) {
        const uint8_t want = pixels.values[static_cast<size_t>(i * 784 + (y / 3) * 28 + x / 3)];
        const size_t at = static_cast<size_t>(3 * ((top + y) * sheet.width + left + x));
        compared += sheet.rgb[at] == want && sheet.rgb[at + 1] == want && sheet.rgb[at + 2] == want;
      }
    }
  }
  CHECK(compared == 6 * 84 * 84);
  // Under each tile its caption ("9 Ankle boot" ...): white strokes on the background.
  for (int64_t i = 0; i < 6; ++i) {
    const int64_t left = 2 + (i % 3) * 86, caption_top = 2 + (i / 3) * 98 + 84;
    int64_t white = 0;
    for (int64_t y = caption_top; y < caption_top + 12; ++y) {
      for (int64_t x = left; x < left + 84; ++x) {
        white += sheet.rgb[static_cast<size_t>(3 * (y * sheet.width + x))] == 255;
      }
    }
    CHECK(white > 20);
  }

  if (!python_torch_present()) {
    DPTRAIN_SKIP("the PyTorch side needs Debian's python3-torch (scripts/setup.sh)");
  }
  const ProcessResult python = run_program(
      "/usr/bin/python3",
      shell_words({std::string(DPTRAIN_SOURCE_DIR) + "/tests/python/preview_load.py",
                   (dir / "look" / "test.pt").string(), (dir / "look" / "test.png").string()}));
  INFO(python.err);
  REQUIRE(python.status == 0);
  const nlohmann::json answer = nlohmann::json::parse(python.out);
  CHECK(answer.at("keys") == nlohmann::json({"images", "labels"}));
  CHECK(answer.at("images").at("dtype") == "torch.float32");
  CHECK(answer.at("images").at("shape") == nlohmann::json({6, 1, 28, 28}));
  CHECK(answer.at("labels").at("dtype") == "torch.int64");
  const auto values = answer.at("images").at("values").get<std::vector<double>>();
  const torch::Tensor theirs = torch::tensor(values, torch::kFloat64).reshape({6, 1, 28, 28});
  CHECK(torch::equal(theirs.to(torch::kFloat32), expected_images));
  CHECK(answer.at("labels").at("values").get<std::vector<int64_t>>() ==
        std::vector<int64_t>(labels.values.begin(), labels.values.end()));
  CHECK(answer.at("sheet").at("size") == nlohmann::json({sheet.width, sheet.height}));
  CHECK(answer.at("sheet").at("mode") == "RGB");
}

TEST_CASE(
    "preview shows the training split as training draws it: after the hold-out, with the random "
    "transforms of the epoch asked for",
    "[cli][preview][transforms]") {
  TempDir dir;
  write_real_subset(dir / "data", 400, 50);
  std::vector<std::string> experiment = {"--set", "data.dir=" + (dir / "data").string(),
                                         "--set", "data.val_split=0.25",
                                         "--set", "seed=7"};
  experiment.insert(experiment.end(), kRandomTransforms.begin(), kRandomTransforms.end());
  std::vector<std::string> args = experiment;
  // --epoch counts from 1, as the console does: the loaders' epoch 3.
  args.insert(args.end(), {"--count", "20", "--epoch", "4", "--output", (dir / "p").string()});
  const ProcessResult preview = run_preview(args);
  INFO(preview.err);
  REQUIRE(preview.status == 0);

  // The training split's dataset as a training session makes it from the same experiment.
  std::vector<std::string> overrides;
  for (size_t i = 1; i < experiment.size(); i += 2) overrides.push_back(experiment[i]);
  const config::Config config = config::load_config(std::nullopt, overrides, model::model_names());
  data::OpenedData opened = data::open_data(config.data);
  data::load_data(opened);
  const data::TrainingSplits splits = data::make_splits(config, opened);
  REQUIRE(splits.random);
  REQUIRE(splits.train->size() == 300);
  std::vector<int64_t> first(20);
  std::iota(first.begin(), first.end(), int64_t{0});
  torch::Tensor images = torch::empty({20, 1, 28, 28}), labels = torch::empty({20}, torch::kLong);
  const auto [got_images, got_labels] = preview_tensors(dir / "p" / "train.pt");
  splits.train->fill_epoch_batch(first, 3, images, labels);
  CHECK(torch::equal(got_images, images));
  CHECK(torch::equal(got_labels, labels));
  // Another epoch's draws differ (of 20 crops and flips, some must), and so do the samples
  // before the hold-out's cut.
  splits.train->fill_epoch_batch(first, 4, images, labels);
  CHECK_FALSE(torch::equal(got_images, images));
  opened.train->fill_batch(first, images, labels);
  CHECK_FALSE(torch::equal(got_labels, labels));
  CHECK(preview.out.find("20 train samples (epoch 4's draws)") != std::string::npos);

  // The validation split has no random transforms: its first samples as stored.
  args = experiment;
  args.insert(args.end(), {"--split", "val", "--count", "4", "--output", (dir / "p").string()});
  REQUIRE(run_preview(args).status == 0);
  splits.val->fill_batch({0, 1, 2, 3}, images, labels);
  CHECK(torch::equal(preview_tensors(dir / "p" / "val.pt").first, images.narrow(0, 0, 4)));
}

TEST_CASE("preview refuses what it cannot show, naming the option", "[cli][preview]") {
  TempDir dir;
  const auto refused = [&](const std::vector<std::string>& args, const std::string& words) {
    const ProcessResult result = run_preview(args);
    INFO(result.err);
    CHECK(result.status == 2);
    CHECK(result.err.find(words) != std::string::npos);
  };
  refused({"--split", "val", "--output", (dir / "p").string()},
          "--split val: this experiment holds out no validation set (data.val_split is 0)");
  const std::string out = (dir / "p").string();
  refused({"--split", "eval", "--output", out}, "--split");
  refused({"--count", "0", "--output", out}, "--count");
  refused({"--count", "5000", "--output", out}, "--count");
  refused({"--epoch", "0", "--output", out}, "--epoch");
  refused({"--output", ""}, "an empty path was given for a file or folder to write");
  refused(
      {"--split", "test", "--epoch", "2", "--output", out},
      "--epoch 2 with --split test: evaluation draws data.eval_transforms alike in every epoch");
  // 4096 samples resized to 2048x2048 would be 64 GiB of floats: refused before any is made.
  refused({"--count", "4096", "--output", out, "--set",
           R"(data.train_transforms=[{"name": "resize", "size": [2048, 2048]}])", "--set",
           R"(data.eval_transforms=[{"name": "resize", "size": [2048, 2048]}])"},
          "--count 4096: 4096 samples of 4194304 values are more than 1024 MiB");
  CHECK_FALSE(std::filesystem::exists(dir / "p"));
}
