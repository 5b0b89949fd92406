// Loader-only throughput over a folder of pictures: the training split of an experiment (its
// --set keys, as `dptrain train` takes them: the folder, its channels, the training transforms)
// assembled into batches by the host loader with W workers, nothing trained. Prints images/s (the
// median of several passes, each an epoch of its own draws) and the process's peak resident
// memory; with --breakdown N, where one thread's time goes for N samples: reading the file,
// decoding it, the transforms, and the copy into the batch (collate). scripts/bench_loader.sh
// runs it beside torchvision's DataLoader.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <thread>

#include "config/load.h"
#include "core/fs.h"
#include "core/heap.h"
#include "core/timer.h"
#include "data/crop_flip.h"
#include "data/folder_dataset.h"
#include "data/loader.h"
#include "data/sources.h"
#include "data/splits.h"
#include "data/transforms.h"
#include "model/registry.h"

using namespace dptrain;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Images per second of each pass; the first (start-up, the page cache) is run but not counted.
double images_per_second(const std::shared_ptr<const data::Dataset>& train, int64_t workers,
                         int64_t batch_size, int passes) {
  data::LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  const auto loader = data::make_loader(train,
                                        std::make_shared<data::DistributedSampler>(
                                            train->size(), data::DistributedSampler::Options{}),
                                        options, torch::kCPU);
  std::vector<double> rates;
  for (int p = 0; p <= passes; ++p) {
    core::Stopwatch timer;
    int64_t images = 0;
    loader->start_epoch(p);
    while (auto batch = loader->next()) images += batch->size();
    if (p > 0) rates.push_back(static_cast<double>(images) / timer.seconds());
  }
  return median(rates);
}

// Microseconds a sample spends in each step, on this one thread, over the first `n` samples.
void print_breakdown(const config::Config& config, const data::OpenedData& opened, int64_t n) {
  const auto folder = std::dynamic_pointer_cast<const data::FolderDataset>(opened.train);
  if (!folder) throw std::runtime_error("--breakdown needs data.dataset folder");
  n = std::min(n, folder->size());
  data::PictureLimits limits;
  limits.max_pixels = config.data.max_image_pixels;
  limits.max_sample_bytes = config.data.max_image_pixels * 4;
  const int channels = static_cast<int>(config.data.channels);
  const std::vector<int64_t> shape =
      data::shape_after(config.data.train_transforms, folder->sample_shape());
  torch::Tensor batch = torch::empty({1, shape[0], shape[1], shape[2]});
  // The loaders' one pass where the list is of its shape (data/crop_flip.h): it writes the batch
  // row itself, so its collate is part of its transforms.
  std::string why;
  const std::optional<data::CropFlip> one_pass =
      data::CropFlip::plan(config.data.train_transforms, config.seed, "transforms", &why);
  std::vector<float> table;
  if (one_pass) {
    const torch::Tensor t = one_pass->value_table(shape[0]);
    table.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  double read = 0, decode = 0, transform = 0, collate = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::filesystem::path path =
        opened.dir / "train" / std::string(folder->listing().file(i));
    core::Stopwatch step;
    const std::string bytes = core::read_regular_file(path, size_t{1} << 30);
    read += step.seconds();
    step = core::Stopwatch();
    const torch::Tensor pixels = data::decode_picture(path, bytes, channels, limits);
    decode += step.seconds();
    step = core::Stopwatch();
    if (one_pass && one_pass->render(pixels.permute({2, 0, 1}), i, 0, shape, table.data(),
                                     batch.data_ptr<float>())) {
      transform += step.seconds();
      continue;
    }
    at::Generator generator = data::sample_generator(config.seed, 0, i);
    const torch::Tensor sample =
        data::apply_transforms(config.data.train_transforms, pixels.permute({2, 0, 1}), generator);
    transform += step.seconds();
    step = core::Stopwatch();
    if (sample.sizes() == batch[0].sizes()) batch[0].copy_(sample);
    collate += step.seconds();
  }
  const auto us = [n](double seconds) { return static_cast<int64_t>(seconds / n * 1e6); };
  std::cout << "per sample, one thread, " << n << " samples: read " << us(read) << " us, decode "
            << us(decode) << " us, transforms " << us(transform) << " us, collate " << us(collate)
            << " us" << (one_pass ? " (one pass: transforms and collate at once)" : "") << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dptrain's loader over a folder of pictures (images/s, no training)"};
  std::vector<std::string> sets;
  int64_t workers = 0, batch_size = 256, breakdown = 0;
  int passes = 3;
  int threads = 1;
  app.add_option("--set", sets, "an experiment key, as train's --set (repeatable)");
  app.add_option("--workers", workers, "loader worker threads (data.num_workers)");
  app.add_option("--batch-size", batch_size);
  app.add_option("--passes", passes, "timed passes over the training split");
  app.add_option("--threads", threads, "intra-op threads (default 1: the workers are the test)");
  app.add_option("--breakdown", breakdown, "also time each step of the first N samples");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  torch::set_num_threads(std::max(1, threads));
  try {
    config::Config config = config::load_config(std::nullopt, sets, model::model_names());
    data::OpenedData opened = data::open_data(config.data);
    config.data = data::with_data_facts(config.data, opened);
    data::load_data(opened);
    const data::TrainingSplits splits = data::make_splits(config, opened);
    if (breakdown > 0) print_breakdown(config, opened, breakdown);
    const double rate = images_per_second(splits.train, workers, batch_size, passes);
    std::cout << "dptrain workers " << workers << ": " << static_cast<int64_t>(rate)
              << " images/s, peak RSS " << (core::peak_resident_bytes() >> 20) << " MiB\n";
  } catch (const std::exception& e) {
    std::cerr << "dptrain_bench_folder: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
