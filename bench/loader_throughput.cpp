// Loader-only throughput: how many training batches per second each data placement and worker
// count delivers on a device when nothing trains. scripts/bench_loader.sh runs it; it prints one
// line per setting with the median of several passes over the training split.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <thread>

#include "core/timer.h"
#include "data/loader.h"
#include "data/locate.h"
#include "parallel/devices.h"

using namespace dptrain;

namespace {

struct Setting {
  data::Placement placement;
  int64_t workers;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Batches per second of each pass; the first pass (start-up, caches) is run but not counted.
std::vector<double> time_passes(data::Loader& loader, torch::Device device, int passes) {
  std::vector<double> rates;
  for (int p = 0; p <= passes; ++p) {
    core::Stopwatch timer;
    int64_t batches = 0;
    loader.start_epoch(p);
    while (auto batch = loader.next()) ++batches;
    parallel::synchronize(device);
    if (p > 0) rates.push_back(static_cast<double>(batches) / timer.seconds());
  }
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dptrain loader throughput (batches/s, no training)"};
  std::string device_name = "cpu", data_dir;
  std::vector<int64_t> workers = {0, 1, 2, 4};
  std::vector<std::string> placements = {"host", "device"};
  int64_t batch_size = 256;
  int passes = 5;
  bool pin_memory = false;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--threads", threads,
                 "intra-op threads, as runtime.threads (default: every core)");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N");
  app.add_option("--workers", workers, "worker counts for the host placement")->delimiter(',');
  app.add_option("--placements", placements, "host and/or device")->delimiter(',');
  app.add_option("--batch-size", batch_size);
  app.add_option("--passes", passes, "timed passes over the training split per setting");
  app.add_option("--data", data_dir, "Fashion-MNIST folder; default: dptrain's lookup");
  app.add_flag("--pin-memory", pin_memory, "pinned staging buffers (CUDA)");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  torch::set_num_threads(std::max(1, threads));

  const torch::Device device = parallel::resolve_device(device_name, "--device");
  const auto dir = data::locate_data_dir(data_dir, "fashion-mnist");
  const data::Splits splits = data::load_splits(dir);
  auto sampler = std::make_shared<data::RandomSampler>(splits.train->size(), /*seed=*/1);

  std::vector<Setting> settings;
  for (const auto& p : placements) {
    const data::Placement placement = data::resolve_placement(p, device);
    if (placement == data::Placement::kDevice) {
      settings.push_back({placement, 0});
      continue;
    }
    for (const int64_t w : workers) settings.push_back({placement, w});
  }
  std::cout << "device " << device.str() << ", batch " << batch_size << ", "
            << (splits.train->size() + batch_size - 1) / batch_size << " batches a pass, " << passes
            << " timed passes, " << torch::get_num_threads() << " intra-op threads"
            << (pin_memory ? ", pinned" : "") << "\n";
  for (const Setting& s : settings) {
    data::LoaderOptions options;
    options.batch_size = batch_size;
    options.placement = s.placement;
    options.num_workers = s.workers;
    options.pin_memory = pin_memory;
    const auto loader = data::make_loader(splits.train, sampler, options, device);
    const double rate = median(time_passes(*loader, device, passes));
    std::cout << "placement " << data::placement_name(s.placement) << " workers " << s.workers
              << ": " << static_cast<int64_t>(rate) << " batches/s, "
              << static_cast<int64_t>(rate * batch_size) << " samples/s\n";
  }
  return 0;
}
