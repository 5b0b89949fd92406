// `dptrain predict`: each image's most likely classes. An input that cannot be read is reported
// (naming the file) and the others are still answered; the exit status then says data error.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "core/terminal.h"
#include "data/classes.h"
#include "data/image_file.h"
#include "train/evaluate_model.h"

namespace dptrain::app {
namespace {

struct Ranked {
  int64_t label;
  double probability;
};

std::vector<Ranked> top_classes(const torch::Tensor& probabilities, int top) {
  const auto best = probabilities.topk(top);
  std::vector<Ranked> ranked;
  for (int64_t k = 0; k < top; ++k) {
    ranked.push_back({std::get<1>(best)[k].item<int64_t>(), std::get<0>(best)[k].item<double>()});
  }
  return ranked;
}

void print_answer(const std::string& input, const std::vector<Ranked>& ranked,
                  const std::vector<std::string>& classes, bool json_lines) {
  if (json_lines) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& r : ranked) {
      top.push_back(
          {{"label", r.label}, {"class", classes[r.label]}, {"probability", r.probability}});
    }
    // A file name need not be UTF-8; JSON text must be (such bytes become U+FFFD).
    std::cout << nlohmann::json{{"input", input}, {"top", top}}.dump(
                     -1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace)
              << "\n";
    return;
  }
  std::cout << fmt::format("{:<40}", core::printable(input));  // a name may hold any byte
  for (const auto& r : ranked) {
    std::cout << fmt::format("  {:>11} {:.4f}", core::printable(classes[r.label]), r.probability);
  }
  std::cout << "\n";
}

}  // namespace

int run_predict(const cli::Command& command) {
  check_model_file(command.model_file);
  std::string source;
  const config::Config config = resolve_for_model(command, source);
  core::init_logging(config::name_of(config.log.level));
  spdlog::info("predicting with {}, with the experiment of {}", command.model_file.string(),
               source);
  train::Classifier classifier(config, command.model_file);
  const std::vector<std::string> classes = data::class_names_of(config.data);
  const data::InputShape shape = data::input_shape_of(config.data);
  const int top = std::min<int>(command.top, static_cast<int>(classes.size()));
  if (!command.json && isatty(STDOUT_FILENO)) {
    std::cout << fmt::format("{:<40}  top {} classes with their probabilities\n", "input", top);
  }
  bool failed = false;
  for (const auto& path : command.inputs) {
    std::vector<data::InputImage> images;
    try {
      images = data::read_input_images(path, command.index, shape);
    } catch (const core::Error& e) {
      spdlog::error("{}: {}", core::code_name(e.code()), e.what());
      failed = true;
      continue;
    }
    constexpr size_t kBatch = 256;  // LeNet's activations for 256 images: some 35 MB
    for (size_t first = 0; first < images.size(); first += kBatch) {
      std::vector<torch::Tensor> batch;
      for (size_t i = first; i < std::min(images.size(), first + kBatch); ++i) {
        batch.push_back(images[i].image);
      }
      const torch::Tensor p = classifier.probabilities(torch::stack(batch));
      for (size_t i = 0; i < batch.size(); ++i) {
        print_answer(images[first + i].name, top_classes(p[i], top), classes, command.json);
      }
    }
  }
  std::cout << std::flush;
  if (!failed) return 0;
  spdlog::error(
      "hint: give IDX image files (such as t10k-images-idx3-ubyte.gz) or PNG, JPEG or PGM/PPM "
      "images");
  return core::exit_status(core::ErrorCode::kData);
}

}  // namespace dptrain::app
