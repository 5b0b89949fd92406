#include "support/runs.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "support/catch.h"

#include "core/fs.h"
#include "model/state_dict.h"
#include "support/fixtures.h"

namespace dptrain::testing {

std::vector<std::string> momentum_sgd_job(const std::filesystem::path& data_dir,
                                          const std::vector<std::string>& extra,
                                          const std::filesystem::path& out) {
  std::vector<std::string> args = {"train"};
  for (const std::string& set :
       {"data.dir=" + data_dir.string(), std::string("data.batch_size=30"),
        std::string("train.epochs=2"), std::string("model.init_std=0.1"),
        std::string("optimizer.lr=0.05"), std::string("optimizer.momentum=0.9"),
        std::string("runtime.threads=1"), std::string("parallel.timeout_s=60")}) {
    args.insert(args.end(), {"--set", set});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--output", out.string()});
  return args;
}

std::vector<std::string> on_cpu_backend(const std::string& backend) {
  if (backend == "ddp") {
    return {"--set", "parallel.backend=ddp", "--set", "parallel.devices=[\"cpu\",\"cpu\"]"};
  }
  return {"--set", "parallel.devices=cpu"};
}

std::vector<torch::Tensor> load_parameters(const std::filesystem::path& model_pt) {
  std::vector<torch::Tensor> params;
  for (const auto& entry : model::decode_state_dict(read_bytes(model_pt))) {
    params.push_back(entry.second);
  }
  return params;
}

nlohmann::json summary_of(const std::filesystem::path& run_dir) {
  return nlohmann::json::parse(core::read_text_file(run_dir / "summary.json"));
}

std::vector<nlohmann::json> metrics_of(const std::filesystem::path& run_dir) {
  std::istringstream lines(core::read_text_file(run_dir / "metrics.jsonl"));
  std::vector<nlohmann::json> epochs;
  for (std::string line; std::getline(lines, line);) epochs.push_back(nlohmann::json::parse(line));
  return epochs;
}

std::filesystem::path the_event_file(const std::filesystem::path& run) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      files.push_back(e.path());
    }
  }
  REQUIRE(files.size() == 1);
  return files[0];
}

bool python_event_reader_present() {
  return run_program("/usr/bin/python3", "-c 'import crc32c, google.protobuf'").status == 0;
}

nlohmann::json read_events(const std::filesystem::path& run) {
  const auto reader = run_program(
      "/usr/bin/python3",
      shell_words({std::string(DPTRAIN_SOURCE_DIR) + "/tests/python/read_tensorboard.py",
                   the_event_file(run).string()}));
  INFO(reader.err);
  REQUIRE(reader.status == 0);
  return nlohmann::json::parse(reader.out);
}

std::string tensorboard_python() {
  // Each test asks twice (whether to skip, then to read): probe once a process.
  static const std::string found = [] {
    const std::filesystem::path python = venv_python();
    if (python.empty()) return std::string();
    const auto probe =
        run_program(python,
                    "-I -c 'import tensorboard.backend.event_processing.data_provider, "
                    "tensorboard_data_server'");
    return probe.status == 0 ? python.string() : std::string();
  }();
  return found;
}

nlohmann::json read_with_tensorboard(const std::filesystem::path& run) {
  const std::string python = tensorboard_python();
  REQUIRE_FALSE(python.empty());
  const auto reader = run_program(
      python, shell_words({std::string(DPTRAIN_SOURCE_DIR) + "/tests/python/tensorboard_reads.py",
                           run.string()}));
  INFO(reader.err);
  REQUIRE(reader.status == 0);
  return nlohmann::json::parse(reader.out);
}

double max_relative_difference(const std::vector<torch::Tensor>& a,
                               const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].sizes() == b[i].sizes());
    // Equal: zero tensors (no 0/0) and infinities in the same places (no inf - inf) included.
    if (torch::equal(a[i], b[i])) continue;
    const double difference = (a[i] - b[i]).abs().max().item<double>();
    const double relative = difference / b[i].abs().max().item<double>();
    // A NaN on either side is a difference: std::max would drop it and report the others'.
    worst =
        std::isnan(relative) ? std::numeric_limits<double>::infinity() : std::max(worst, relative);
  }
  return worst;
}

}  // namespace dptrain::testing
