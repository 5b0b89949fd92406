// Training on a folder of pictures through the real binary: the folder trains to the very
// parameters of IDX files holding its samples in its order (with loader workers); the run records
// what the data is (classes, channels, size) in config.json and in model.pt itself, so that
// predict and evaluate need only a copied model.pt and print the folder's class names; a resume
// over a folder changed since its checkpoint is refused; LeNet refuses pictures that are not
// 28x28 and ResNet-18 takes them, in colour.
#include "support/catch.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "config/config.h"
#include "core/fs.h"
#include "data/sources.h"
#include "support/fixtures.h"
#include "support/picture_folders.h"
#include "support/runs.h"

using namespace dptrain;
using namespace dptrain::testing;

namespace {

// A short run: 600 pictures in batches of 60, one epoch, one thread.
std::vector<std::string> folder_job(const std::filesystem::path& out,
                                    const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"train"};
  for (const std::string set : {"data.batch_size=60", "train.epochs=1", "model.init_std=0.1",
                                "runtime.threads=1", "parallel.devices=cpu"}) {
    args.insert(args.end(), {"--set", set});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--output", out.string()});
  return args;
}

std::vector<std::string> on_folder(const std::filesystem::path& pictures, int channels) {
  return {"--set", "data.dataset=folder",
          "--set", "data.dir=" + pictures.string(),
          "--set", "data.channels=" + std::to_string(channels)};
}

// The folder's samples, in its order, written as IDX files: the same samples at the same indices.
void write_as_idx(const std::filesystem::path& pictures, const std::filesystem::path& idx) {
  config::DataConfig c;
  c.dataset = config::Dataset::kFolder;
  c.dir = pictures.string();
  c.channels = 1;
  const data::OpenedData folder = data::open_data(c);
  std::filesystem::create_directories(idx);
  const auto write = [&](const data::Dataset& split, const std::string& images,
                         const std::string& labels) {
    std::vector<int64_t> all(static_cast<size_t>(split.size()));
    std::iota(all.begin(), all.end(), int64_t{0});
    const data::Batch batch = split.get_batch(all);
    const torch::Tensor pixels = (batch.images * 255).round().to(torch::kUInt8).contiguous();
    const torch::Tensor classes = batch.labels.to(torch::kUInt8).contiguous();
    const auto n = static_cast<uint32_t>(split.size());
    write_gzip(idx / images, idx_bytes({n, 28, 28}, {pixels.data_ptr<uint8_t>(),
                                                     pixels.data_ptr<uint8_t>() + pixels.numel()}));
    write_gzip(idx / labels, idx_bytes({n}, {classes.data_ptr<uint8_t>(),
                                             classes.data_ptr<uint8_t>() + classes.numel()}));
  };
  write(*folder.train, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz");
  write(*folder.test, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz");
}

// Rank `rank` of 2 on this machine, as torchrun starts it.
std::vector<std::string> two_rank_env(int rank, int port) {
  return {"RANK=" + std::to_string(rank),
          "WORLD_SIZE=2",
          "LOCAL_RANK=" + std::to_string(rank),
          "LOCAL_WORLD_SIZE=2",
          "MASTER_ADDR=127.0.0.1",
          "MASTER_PORT=" + std::to_string(port)};
}

ProcessResult run_args(const std::vector<std::string>& args) {
  return run_dptrain(shell_words(args));
}

}  // namespace

TEST_CASE(
    "a folder of real pictures trains to the parameters of IDX files of its samples, and its run "
    "records the data's classes, channels and size in config.json and model.pt",
    "[cli][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 600, 200);
  write_as_idx(dir / "pictures", dir / "idx");
  std::vector<std::string> folder = on_folder(dir / "pictures", 1);
  folder.insert(folder.end(), {"--set", "data.num_workers=2", "--set", "data.val_split=0.1"});
  std::vector<std::string> idx_held = {"--set", "data.dir=" + (dir / "idx").string(), "--set",
                                       "data.val_split=0.1"};
  const auto from_folder = run_args(folder_job(dir / "folder_run", folder));
  INFO(from_folder.err);
  REQUIRE(from_folder.status == 0);
  const auto idx_val = run_args(folder_job(dir / "idx_val_run", idx_held));
  INFO(idx_val.err);
  REQUIRE(idx_val.status == 0);
  CHECK_THAT(from_folder.err, ContainsSubstring("data: 540 training samples, 60 held out"));
  CHECK_THAT(from_folder.err, ContainsSubstring("600 training and 200 test pictures of 10 classes, "
                                                "28x28 with 1 channel"));
  // Bit for bit: the same samples, batches, shuffles and hold-out, read from pictures by workers.
  const auto folder_params = load_parameters(dir / "folder_run" / "model.pt");
  const auto idx_params = load_parameters(dir / "idx_val_run" / "model.pt");
  REQUIRE(folder_params.size() == idx_params.size());
  for (size_t i = 0; i < folder_params.size(); ++i) {
    CHECK(torch::equal(folder_params[i], idx_params[i]));
  }
  CHECK(summary_of(dir / "folder_run").at("test_correct") ==
        summary_of(dir / "idx_val_run").at("test_correct"));

  // What the data is, in the run's config and in model.pt's own record.
  const auto config =
      nlohmann::json::parse(core::read_text_file(dir / "folder_run" / "config.json"));
  CHECK(config["data"]["channels"] == 1);
  CHECK(config["data"]["image_size"] == nlohmann::json::array({28, 28}));
  REQUIRE(config["data"]["classes"].size() == 10);
  CHECK(config["data"]["classes"][9] == "9_Ankle boot");
  const auto idx_config =
      nlohmann::json::parse(core::read_text_file(dir / "idx_val_run" / "config.json"));
  CHECK(idx_config["data"]["classes"][0] == "T-shirt/top");

  // model.pt alone, elsewhere: predict prints the folder's class names, evaluate finds its data.
  std::filesystem::create_directories(dir / "alone");
  std::filesystem::copy_file(dir / "folder_run" / "model.pt", dir / "alone" / "model.pt");
  const auto picture = dir / "pictures" / "test" / "3_Dress";
  const auto first = std::filesystem::directory_iterator(picture)->path();
  const auto predicted = run_dptrain("predict --json --model " +
                                     (dir / "alone" / "model.pt").string() + " " + first.string());
  INFO(predicted.err);
  REQUIRE(predicted.status == 0);
  CHECK_THAT(predicted.err, ContainsSubstring("with the experiment of the model file's own"));
  const auto answer = nlohmann::json::parse(predicted.out);
  const std::string top = answer["top"][0]["class"];
  CHECK(std::find(config["data"]["classes"].begin(), config["data"]["classes"].end(), top) !=
        config["data"]["classes"].end());
  const auto report = dir / "alone" / "report.json";
  const auto evaluated = run_dptrain("evaluate --model " + (dir / "alone" / "model.pt").string() +
                                     " --output " + report.string());
  INFO(evaluated.err);
  REQUIRE(evaluated.status == 0);
  const auto figures = nlohmann::json::parse(core::read_text_file(report));
  CHECK(figures["samples"] == 200);
  CHECK(figures["correct"] == summary_of(dir / "folder_run").at("test_correct"));
  CHECK(figures["classes"][3] == "3_Dress");
  CHECK_THAT(evaluated.out, ContainsSubstring("3_Dress"));

  // A damaged record is refused, naming it, rather than taken for the defaults' classes.
  std::string bytes = read_bytes(dir / "alone" / "model.pt");
  const size_t at = bytes.find("\"max_image_pixels\"");
  REQUIRE(at != std::string::npos);
  bytes[at + 1] = 'M';
  write_text(dir / "alone" / "damaged.pt", bytes);
  const auto damaged = run_dptrain("predict --model " + (dir / "alone" / "damaged.pt").string() +
                                   " " + first.string());
  CHECK(damaged.status != 0);
  CHECK_THAT(damaged.err, ContainsSubstring("damaged.pt: its record dptrain_experiment.json is "
                                            "damaged"));

  // A test folder whose classes are not the model's: refused, naming the key.
  std::filesystem::rename(dir / "pictures" / "test" / "9_Ankle boot",
                          dir / "pictures" / "test" / "9_Boot");
  std::filesystem::rename(dir / "pictures" / "train" / "9_Ankle boot",
                          dir / "pictures" / "train" / "9_Boot");
  const auto other = run_dptrain("evaluate --model " + (dir / "alone" / "model.pt").string());
  CHECK(other.status != 0);
  CHECK_THAT(other.err, ContainsSubstring("data.classes is \"0_T-shirt_top\""));
  CHECK_THAT(other.err, ContainsSubstring("\"9_Boot\""));
}

TEST_CASE("a resume over a folder changed since its checkpoint is refused, naming it",
          "[cli][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 300, 60);
  const std::vector<std::string> job = folder_job(dir / "run", [&] {
    auto args = on_folder(dir / "pictures", 1);
    args.insert(args.end(),
                {"--set", "train.limit_train_batches=2", "--set", "checkpoint.every_epochs=1"});
    return args;
  }());
  const auto first = run_args(job);
  INFO(first.err);
  REQUIRE(first.status == 0);
  const auto pictures = dir / "pictures" / "train" / "0_T-shirt_top";
  const auto some = std::filesystem::directory_iterator(pictures)->path();
  std::filesystem::rename(some, pictures / "zz.pgm");
  std::vector<std::string> resume = job;
  resume.insert(resume.end() - 2, {"--set", "train.epochs=2", "--resume", "auto"});
  const auto resumed = run_args(resume);
  CHECK(resumed.status != 0);
  CHECK_THAT(resumed.err,
             ContainsSubstring("a checkpoint of a run over a folder listed otherwise"));
  CHECK_THAT(resumed.err, ContainsSubstring("pictures were added, removed or renamed"));
  CHECK_THAT(resumed.err, ContainsSubstring("--init-from"));
  // Put back, it resumes.
  std::filesystem::rename(pictures / "zz.pgm", some);
  const auto again = run_args(resume);
  INFO(again.err);
  CHECK(again.status == 0);
}

TEST_CASE("LeNet refuses pictures that are not 28x28, and ResNet-18 takes them, in colour",
          "[cli][folder]") {
  TempDir dir;
  PictureFolderOptions cut;
  cut.rows = 27;
  write_picture_folder(dir / "pictures", 64, 100, cut);
  const auto lenet = run_args(folder_job(dir / "lenet", on_folder(dir / "pictures", 1)));
  CHECK(lenet.status != 0);
  CHECK_THAT(lenet.err, ContainsSubstring("model.name \"lenet\" takes 28x28 pictures, and the "
                                          "data's are 28x27"));
  CHECK_THAT(lenet.err, ContainsSubstring("\"resize\""));
  auto resnet = on_folder(dir / "pictures", 0);  // 0: the folder's default, RGB
  resnet.insert(resnet.end(),
                {"--set", "model.name=resnet18", "--set", "data.batch_size=16", "--set",
                 "train.limit_train_batches=2", "--set", "train.limit_eval_batches=1"});
  const auto trained = run_args(folder_job(dir / "resnet", resnet));
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  const auto config = nlohmann::json::parse(core::read_text_file(dir / "resnet" / "config.json"));
  CHECK(config["data"]["channels"] == 3);
  CHECK(config["data"]["image_size"] == nlohmann::json::array({27, 28}));
  const auto params = load_parameters(dir / "resnet" / "model.pt");
  CHECK(params.front().sizes() == torch::IntArrayRef({64, 3, 3, 3}));  // the stem takes RGB
  CHECK(params.back().sizes() == torch::IntArrayRef({10}));            // fc.1's bias
}

TEST_CASE(
    "random transforms draw per sample: the same parameters for any worker count and other "
    "ones without them, and a config names a bad transform by its place",
    "[cli][transforms]") {
  TempDir dir;
  write_real_subset(dir / "idx", 600, 100);
  const std::string transforms =
      R"(data.train_transforms=[{"name": "random_crop", "size": 28, "padding": 2},)"
      R"( {"name": "random_horizontal_flip"}])";
  const auto run = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--set", "data.dir=" + (dir / "idx").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_args(folder_job(dir / name, args));
    INFO(r.err);
    REQUIRE(r.status == 0);
    return load_parameters(dir / name / "model.pt");
  };
  const auto alone = run("alone", {"--set", transforms});
  const auto workers = run("workers", {"--set", transforms, "--set", "data.num_workers=2", "--set",
                                       "data.prefetch_batches=3"});
  const auto plain = run("plain", {});
  REQUIRE(alone.size() == workers.size());
  bool differs_from_plain = false;
  for (size_t i = 0; i < alone.size(); ++i) {
    CHECK(torch::equal(alone[i], workers[i]));
    differs_from_plain = differs_from_plain || !torch::equal(alone[i], plain[i]);
  }
  CHECK(differs_from_plain);
  const auto config = nlohmann::json::parse(core::read_text_file(dir / "alone" / "config.json"));
  CHECK(config["data"]["train_transforms"][0] ==
        nlohmann::json::parse(R"({"name": "random_crop", "size": [28, 28],
                                  "padding": [2, 2, 2, 2], "pad_if_needed": false, "fill": 0.0,
                                  "padding_mode": "constant"})"));

  const auto typo =
      run_dptrain(shell_words({"config", "--set",
                               R"(data.train_transforms=[{"name": "resize", "size": 32},)"
                               R"( {"name": "random_crop", "pading": 2, "size": 28}])"}));
  CHECK(typo.status != 0);
  CHECK_THAT(typo.err, ContainsSubstring("data.train_transforms[1].pading: is no parameter of "
                                         "random_crop"));
  const auto unknown =
      run_dptrain(shell_words({"config", "--set", R"(data.eval_transforms=[{"name": "rotate"}])"}));
  CHECK_THAT(unknown.err, ContainsSubstring("data.eval_transforms[0].name: unknown transform "
                                            "\"rotate\""));
  // Kept on the device, the split is cropped and flipped there with the host's draws: the same
  // parameters (data/crop_flip.h).
  const auto device = run("device", {"--set", transforms, "--set", "data.placement=device"});
  REQUIRE(device.size() == alone.size());
  for (size_t i = 0; i < alone.size(); ++i) CHECK(torch::equal(alone[i], device[i]));
  const auto resized =
      run_dptrain(shell_words({"train", "--set", "data.dir=" + (dir / "idx").string(), "--set",
                               R"(data.train_transforms=[{"name": "random_resized_crop",)"
                               R"( "size": 28}])",
                               "--set", "data.placement=device", "--set", "parallel.devices=cpu",
                               "--output", (dir / "resized").string()}));
  CHECK(resized.status != 0);
  CHECK_THAT(resized.err,
             ContainsSubstring("data.placement \"device\": data.train_transforms[0] "
                               "(random_resized_crop) cannot run on the device: only random_crop "
                               "and random_horizontal_flip are drawn there"));
}

TEST_CASE(
    "ddp ranks that each list the folder agree on it and train to the parameters ddp takes over "
    "IDX files of its samples",
    "[cli][folder][ddp]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 600, 100);
  write_as_idx(dir / "pictures", dir / "idx");
  const std::vector<std::string> ddp = {"--set", "parallel.backend=ddp",
                                        "--set", "parallel.devices=[\"cpu\",\"cpu\"]",
                                        "--set", "parallel.timeout_s=60"};
  auto folder = on_folder(dir / "pictures", 1);
  folder.insert(folder.end(), ddp.begin(), ddp.end());
  auto idx = ddp;
  idx.insert(idx.end(), {"--set", "data.dir=" + (dir / "idx").string()});
  std::vector<std::vector<torch::Tensor>> params;
  for (const auto& [name, extra] : {std::pair{"folder_ddp", folder}, {"idx_ddp", idx}}) {
    auto args = folder_job(dir / name, extra);
    // folder_job pins one device; ddp's list comes after it and wins.
    const auto r = run_args(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    params.push_back(load_parameters(dir / name / "model.pt"));
  }
  REQUIRE(params[0].size() == params[1].size());
  for (size_t i = 0; i < params[0].size(); ++i) CHECK(torch::equal(params[0][i], params[1][i]));
}

TEST_CASE(
    "ddp ranks whose folders hold other classes are refused before their first broadcast, naming "
    "the rank and the tensor that differs",
    "[cli][folder][ddp]") {
  // Two ranks started as torchrun starts them, each with its own data.dir: rank 1's copy lacks a
  // class, so its LeNet ends in 9 outputs where rank 0's has 10.
  TempDir dir;
  write_picture_folder(dir / "all", 100, 20);
  write_picture_folder(dir / "fewer", 100, 20);
  for (const char* split : {"train", "test"}) {
    std::filesystem::remove_all(dir / "fewer" / split / picture_class_folder(9, true));
  }
  const int port = free_port();
  const auto rank_args = [&](const std::string& folder) {
    auto extra = on_folder(dir / folder, 1);
    extra.insert(extra.end(), {"--set", "parallel.backend=ddp", "--set", "parallel.timeout_s=60"});
    return folder_job(dir / "run", extra);
  };
  BackgroundRun rank0(rank_args("all"), two_rank_env(0, port));
  BackgroundRun rank1(rank_args("fewer"), two_rank_env(1, port));
  const ProcessResult r0 = rank0.finish(120);
  const ProcessResult r1 = rank1.finish(60);
  INFO(r0.err << "\n" << r1.err);
  // LeNet's last layer's weight: [classes, 128].
  const std::string refused =
      "rank 1's model is not rank 0's: its 9.weight is [9, 128] there and [10, 128] on rank 0";
  CHECK(r0.status != 0);
  CHECK(r1.status != 0);
  CHECK(r0.status != -1);  // each ended by itself, not killed at the timeout or by a signal
  CHECK(r1.status != -1);
  CHECK_THAT(r0.err, ContainsSubstring(refused));
  CHECK_THAT(r1.err, ContainsSubstring(refused));
}

TEST_CASE(
    "a run with data.on_bad_file skip trains on the pictures that read and counts the others in "
    "summary.json, and without it the run is refused naming the file",
    "[cli][folder]") {
  TempDir dir;
  write_picture_folder(dir / "pictures", 100, 20);
  const auto bad = dir / "pictures" / "train" / picture_class_folder(3, true) / "zz-empty.png";
  write_text(bad, "");
  const ProcessResult refused =
      run_args(folder_job(dir / "refused", on_folder(dir / "pictures", 1)));
  CHECK(refused.status != 0);
  CHECK_THAT(refused.err, ContainsSubstring(bad.string() + ": "));
  auto skip = on_folder(dir / "pictures", 1);
  skip.insert(skip.end(), {"--set", "data.on_bad_file=skip"});
  const ProcessResult run = run_args(folder_job(dir / "run", skip));
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.err, ContainsSubstring("data.on_bad_file skip: 1 picture left out"));
  CHECK_THAT(run.err, ContainsSubstring(bad.string() + ": neither a PNG, a JPEG nor a PGM/PPM"));
  CHECK(summary_of(dir / "run").at("skipped_files") == 1);
  CHECK(metrics_of(dir / "run").at(0).at("train_samples") == 100);
}

TEST_CASE(
    "ddp ranks that would train another experiment are refused before the first step, naming the "
    "key: pictures of another size for ResNet-18, another data.val_split",
    "[cli][folder][ddp]") {
  TempDir dir;
  write_picture_folder(dir / "square", 60, 20);
  PictureFolderOptions shorter;
  shorter.rows = 27;
  write_picture_folder(dir / "short", 60, 20, shorter);
  // Each rank's own extra settings; both must end by themselves, refused with `words`.
  const auto refused = [&](const std::vector<std::string>& zero,
                           const std::vector<std::string>& one, const std::string& words) {
    const int port = free_port();
    const auto args = [&](const std::vector<std::string>& own) {
      std::vector<std::string> extra = {"--set", "parallel.backend=ddp", "--set",
                                        "parallel.timeout_s=60"};
      extra.insert(extra.end(), own.begin(), own.end());
      return folder_job(dir / "run", extra);
    };
    BackgroundRun rank0(args(zero), two_rank_env(0, port));
    BackgroundRun rank1(args(one), two_rank_env(1, port));
    const ProcessResult r0 = rank0.finish(120);
    const ProcessResult r1 = rank1.finish(60);
    INFO(r0.err << "\n" << r1.err);
    CHECK(r0.status > 0);
    CHECK(r1.status > 0);
    CHECK_THAT(r0.err, ContainsSubstring(words));
    CHECK_THAT(r1.err, ContainsSubstring(words));
  };
  // ResNet-18's tensors do not depend on the picture size: the shapes agree, the data does not.
  auto square = on_folder(dir / "square", 1), short_ones = on_folder(dir / "short", 1);
  for (auto* own : {&square, &short_ones})
    own->insert(own->end(), {"--set", "model.name=resnet18"});
  refused(square, short_ones,
          "rank 1 does not train rank 0's experiment: it has data.image_size=[27,28], and rank 0 "
          "has data.image_size=[28,28]");
  refused({"--set", "data.val_split=0.25"}, {"--set", "data.val_split=0.5"},
          "rank 1 does not train rank 0's experiment: it has data.val_split=0.5, and rank 0 has "
          "data.val_split=0.25");
}
