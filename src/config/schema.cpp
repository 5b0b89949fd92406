#include "config/schema.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

namespace dptrain::config {
namespace {

using nlohmann::json;

// The path of a Config member and a getter usable on a Config and a const Config alike.
#define KEY(member)               \
#member, [](auto& c) -> auto& { \
    return c.member;              \
  }

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// What the pictures dptrain decodes may be a side (data/picture.h), and a sample at most: a run's
// record sets what predict resizes to, and must not make it hold gigabytes.
constexpr int64_t kMostPictureSide = 16384;
constexpr int64_t kMostSamplePixels = int64_t{1} << 24;
// A hundred times ImageNet's classes: a record naming more would build a larger model than its
// weights are.
constexpr size_t kMostClasses = 100000;

// Integers in [min, max].
template <typename Field>
KeySpec integer(const char* path, Field field, int64_t min, std::string doc,
                int64_t max = std::numeric_limits<int64_t>::max()) {
  std::string allowed = std::to_string(min) + " or more";
  if (max != std::numeric_limits<int64_t>::max()) {
    allowed = std::to_string(min) + " to " + std::to_string(max);
  } else if (min == std::numeric_limits<int64_t>::min()) {
    allowed = "any integer";
  }
  return {
      path,
      "integer",
      allowed,
      std::move(doc),
      [field](const Config& c) { return json(field(c)); },
      [field, path = std::string(path), min, max](const json& v, Config& c, const Checker& check) {
        const auto value = v.get<int64_t>();
        check.at_least(path, value, min);
        check.at_most(path, value, max);
        field(c) = value;
      }};
}

// Numbers above `min` (or from it, with `from`), and below `below` when given; number() takes an
// inclusive maximum too. A key that code multiplies by a unit and turns into an integer (MiB into
// bytes, seconds into milliseconds) needs one, or a huge value overflows there.
struct NumberRange {
  double min = 0;
  bool from = true;  // min itself is allowed
  std::optional<double> below;
  std::string hint;
};

std::string range_text(const NumberRange& r, std::optional<double> max) {
  const std::string low = (r.from ? "[" : "(") + number_text(r.min) + ", ";
  if (r.below) return "in " + low + number_text(*r.below) + ")";
  if (max) return "in " + low + number_text(*max) + "]";
  return (r.from ? ">= " : "> ") + number_text(r.min);
}

template <typename Field>
KeySpec number(const char* path, Field field, NumberRange range, std::string doc,
               std::optional<double> max = std::nullopt) {
  return {path,
          "number",
          range_text(range, max),
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field, path = std::string(path), range, max](const json& v, Config& c,
                                                        const Checker& check) {
            const auto value = v.get<double>();
            const bool above = range.from ? value >= range.min : value > range.min;
            const bool under = (!range.below || value < *range.below) && (!max || value <= *max);
            if (!(above && under)) {  // nan fails too
              check.fail(path, "must be " + range_text(range, max), range.hint);
            }
            field(c) = value;
          }};
}

template <typename Field>
KeySpec boolean(const char* path, Field field, std::string doc) {
  return {path,
          "boolean",
          "`true`, `false`",
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field](const json& v, Config& c, const Checker&) { field(c) = v.get<bool>(); }};
}

template <typename Field>
KeySpec choice(const char* path, Field field, std::string doc) {
  using E = std::decay_t<decltype(field(std::declval<Config&>()))>;
  std::string allowed;
  for (const auto& name : choice_names<E>())
    allowed += (allowed.empty() ? "`" : ", `") + name + "`";
  return {path,
          "choice",
          allowed,
          std::move(doc),
          [field](const Config& c) { return json(name_of(field(c))); },
          [field, path = std::string(path)](const json& v, Config& c, const Checker& check) {
            const auto name = v.get<std::string>();
            const std::optional<E> value = choice_named<E>(name);
            if (!value) check.one_of(path, name, choice_names<E>());
            field(c) = *value;
          }};
}

// Free text, with `valid` (may be empty) checking it.
template <typename Field>
KeySpec text(const char* path, Field field, std::string allowed, std::string doc,
             std::function<void(const std::string&, const Checker&)> valid = {}) {
  return {path,
          "string",
          std::move(allowed),
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field, valid](const json& v, Config& c, const Checker& check) {
            auto value = v.get<std::string>();
            if (valid) valid(value, check);
            field(c) = std::move(value);
          }};
}

template <typename Field>
KeySpec strings(const char* path, Field field, std::string allowed, std::string doc) {
  return {path,
          "list of strings",
          std::move(allowed),
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field, path = std::string(path)](const json& v, Config& c, const Checker& check) {
            if (v.size() > kMostClasses) {
              check.fail(path,
                         "holds " + std::to_string(v.size()) + " entries, more than the " +
                             std::to_string(kMostClasses) + " dptrain takes",
                         "a list of names, one per class");
            }
            // An empty default leaves the entries' type to be checked here.
            for (size_t i = 0; i < v.size(); ++i) {
              if (!v[i].is_string()) {
                check.fail(path,
                           "entry " + std::to_string(i) + " is " + v[i].dump() + ", not a string",
                           "write a list of strings, such as [\"cat\", \"dog\"]");
              }
            }
            field(c) = v.get<std::vector<std::string>>();
          }};
}

// Two numbers, each in [0, 1): Adam's betas.
template <typename Field>
KeySpec unit_pair(const char* path, Field field, std::string doc) {
  return {path,
          "list of numbers",
          "two numbers, each in [0, 1)",
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field, path = std::string(path)](const json& v, Config& c, const Checker& check) {
            const auto values = v.get<std::vector<double>>();
            if (values.size() != 2) {
              check.fail(path, "must hold two numbers, got " + std::to_string(values.size()),
                         "PyTorch's default is [0.9, 0.999]");
            }
            for (const double b : values) {
              if (!(b >= 0 && b < 1)) {  // nan fails too
                check.fail(path, "each must be in [0, 1), got " + number_text(b),
                           "PyTorch's default is [0.9, 0.999]");
              }
            }
            field(c) = values;
          }};
}

// A picture's size, [height, width], each 1 or more; or empty: the data's.
template <typename Field>
KeySpec picture_size(const char* path, Field field, std::string doc) {
  return {path,
          "list of integers",
          "`[]`, or `[height, width]` each 1 or more",
          std::move(doc),
          [field](const Config& c) { return json(field(c)); },
          [field, path = std::string(path)](const json& v, Config& c, const Checker& check) {
            for (const json& side : v) {
              if (!side.is_number_integer()) {
                check.fail(path, "holds " + side.dump() + ", not a whole number",
                           "write [height, width] in pixels, such as [96, 96]");
              }
            }
            const auto values = v.get<std::vector<int64_t>>();
            if (!values.empty() && values.size() != 2) {
              check.fail(
                  path,
                  "must hold [height, width], got " + std::to_string(values.size()) + " numbers",
                  "leave it [] for the data's own size");
            }
            for (const int64_t side : values) {
              check.at_least(path, side, 1);
              check.at_most(path, side, kMostPictureSide);
            }
            if (values.size() == 2 && values[0] * values[1] > kMostSamplePixels) {
              check.fail(path,
                         "asks for samples of " + std::to_string(values[0] * values[1]) +
                             " pixels, more than the " + std::to_string(kMostSamplePixels) +
                             " a model takes here",
                         "resize the pictures smaller (data.train_transforms)");
            }
            field(c) = values;
          }};
}

// A list of torchvision transforms (config/transforms.h).
template <typename Field>
KeySpec transform_list(const char* path, Field field, std::string doc) {
  return {path,
          "list of transforms",
          "objects `{\"name\": ..., param: value}` (see [Transforms](#transforms))",
          std::move(doc),
          [field](const Config& c) { return transforms_json(field(c)); },
          [field, path = std::string(path)](const json& v, Config& c, const Checker& check) {
            field(c) = parse_transforms(v, path, check);
          }};
}

// Beyond these a typo is likelier than a need: each worker is a thread, each prefetched batch a
// buffer (pinned memory, with pin_memory).
constexpr int64_t kMaxWorkers = 64;
constexpr int64_t kMaxPrefetch = 1024;
constexpr int64_t kMaxRestarts = 1000;

std::vector<KeySpec> data_keys() {
  return {
      choice(KEY(data.dataset),
             "the data set: the IDX files of Fashion-MNIST or MNIST, or a `folder` of pictures "
             "in torchvision's ImageFolder layout (see [Your own images](#your-own-images))"),
      text(KEY(data.dir), "a folder",
           "IDX: the folder of the four files, empty: see [data/README.md](../data/README.md); "
           "folder: the one holding `train/<class>/...` and `test/<class>/...`"),
      integer(KEY(data.batch_size), 1, "global batch size, summed over every device"),
      boolean(KEY(data.drop_last), "drop a short last training batch"),
      choice(KEY(data.placement),
             "`device` keeps the data on the training device, `host` assembles batches on the "
             "CPU; `auto`: device on a GPU, host on a CPU (see [Data loading](#data-loading))"),
      integer(KEY(data.num_workers), 0,
              "host placement: threads assembling batches; 0: the training thread", kMaxWorkers),
      integer(KEY(data.prefetch_batches), 0,
              "host placement: batches assembled ahead of training, at most; 0: 2 per worker "
              "(at least 2)",
              kMaxPrefetch),
      boolean(KEY(data.pin_memory),
              "host placement to a GPU: pinned staging buffers and copies on a side stream; no "
              "effect on a CPU"),
      number(KEY(data.val_split),
             {0, true, 1.0, "0 holds nothing out; 0.1 holds out a tenth of the training set"},
             "share of the training set held out for validation, picked by `seed` (0.1: 6,000 "
             "of 60,000); 0: none"),
      integer(KEY(data.channels), 0,
              "the pictures' channels: 1 converts as PIL's `convert(\"L\")`, 3 as "
              "`convert(\"RGB\")`; 0: the data's (IDX 1, folder 3 as ImageFolder's loader). A "
              "run's config.json holds what it was",
              3),
      strings(KEY(data.classes), "class names",
              "the classes by label; []: the data's (a folder's: its class folders, sorted). A "
              "run's config.json holds them; given, the data must have exactly these"),
      picture_size(KEY(data.image_size),
                   "the size of the samples the model sees; []: the data's. A run's config.json "
                   "holds it; given, the data must have it"),
      transform_list(KEY(data.train_transforms),
                     "applied in order to each training sample, as torchvision's transforms.v2 "
                     "with the same names and parameters; random ones draw from (seed, epoch, "
                     "sample index)"),
      transform_list(KEY(data.eval_transforms),
                     "applied in order to each validation and test sample (and by predict)"),
      integer(KEY(data.max_image_pixels), 1,
              "folder: a picture whose header declares more pixels is refused before it is "
              "decoded (the default is PIL's MAX_IMAGE_PIXELS, above which PIL warns; at most "
              "16384 x 16384, the largest side dptrain decodes)",
              int64_t{16384} * 16384),
      choice(KEY(data.on_bad_file),
             "folder: a picture that cannot be read (not decodable, cut short, too large, an "
             "empty file, a link out of the folder) ends the run naming it (`error`), or is left "
             "out and counted (`skip`: every picture is then decoded once when the data is "
             "opened, so that every rank and epoch has the same samples; see [Your own "
             "images](#your-own-images))"),
  };
}

std::vector<KeySpec> model_and_optimizer_keys() {
  return {
      text(KEY(model.name), "a registered model", "the model, from the model registry",
           [](const std::string& name, const Checker& check) {
             check.one_of("model.name", name, check.model_names());
           }),
      number(KEY(model.init_std), {0, false, std::nullopt, "d2l uses 0.01"},
             "weights ~ N(0, std²); lenet: biases zero (d2l §13.5); resnet18: conv and linear "
             "weights only, biases as PyTorch initialises them (d2l §13.6)"),
      boolean(KEY(model.sync_batchnorm),
              "ddp: BatchNorm's statistics over the global batch, as torch.nn.SyncBatchNorm; "
              "false: each rank normalises its own shard (see "
              "[BatchNorm](resnet.md#batchnorm-on-each-backend))"),
      choice(KEY(optimizer.name), "the optimizer"),
      number(KEY(optimizer.lr), {0, false, std::nullopt, "d2l uses 0.2"}, "learning rate"),
      number(KEY(optimizer.momentum), {0, true, 1.0, "0 is plain SGD, 0.9 is usual"},
             "sgd: momentum"),
      boolean(KEY(optimizer.nesterov), "sgd: Nesterov momentum (needs `optimizer.momentum` > 0)"),
      unit_pair(KEY(optimizer.betas),
                "adam, adamw: decay rates of the gradient's running mean and square"),
      number(KEY(optimizer.eps), {0, false, std::nullopt, "PyTorch's default is 1e-8"},
             "adam, adamw: added to the denominator"),
      number(KEY(optimizer.weight_decay), {0, true, std::nullopt, "0 disables weight decay"},
             "sgd, adam: L2 penalty added to the gradients; adamw: decoupled decay (PyTorch's "
             "AdamW default is 0.01)"),
      number(KEY(optimizer.grad_clip_norm),
             {0, true, std::nullopt, "0 turns clipping off; 1.0 is usual"},
             "clip the gradients' global L2 norm to this (after unscaling under fp16); 0: no "
             "clipping"),
  };
}

std::vector<KeySpec> scheduler_keys() {
  return {
      choice(KEY(scheduler.name),
             "the learning-rate schedule, stepped per optimizer step; see "
             "[Optimizers and schedules](#optimizers-and-schedules)"),
      integer(KEY(scheduler.step_size), 1, "step: optimizer steps between decays"),
      number(KEY(scheduler.gamma), {0, false, std::nullopt, "0.1 divides the rate by 10"},
             "step: the factor of each decay"),
      number(KEY(scheduler.min_lr), {0, true, std::nullopt, "0 anneals to zero"},
             "cosine: the rate it anneals to"),
      integer(KEY(scheduler.warmup_steps), 0,
              "linear warm-up over this many optimizer steps (onecycle: its rising phase)"),
      integer(KEY(scheduler.warmup_epochs), 0, "the warm-up in epochs instead of steps"),
  };
}

std::vector<KeySpec> train_and_parallel_keys() {
  return {
      integer(KEY(train.epochs), 1, "passes over the training set"),
      integer(KEY(train.accumulate_grad_batches), 1,
              "micro-batches (of `data.batch_size`) whose gradients are summed into one "
              "optimizer step"),
      integer(KEY(train.max_steps), 0,
              "stop after this many optimizer steps, or after `train.epochs`, whichever comes "
              "first; 0: no limit"),
      integer(KEY(train.limit_train_batches), 0, "stop each epoch after this many batches; 0: all"),
      integer(KEY(train.limit_eval_batches), 0, "evaluate on this many test batches; 0: all"),
      choice(
          KEY(parallel.backend),
          "one device, or [dp](backends.md#dp-one-process-several-devices) (one process, several "
          "devices), or [ddp](backends.md#ddp-one-process-per-device) (one process per device)"),
      strings(KEY(parallel.devices), "`auto`, `cpu`, `cuda`, `cuda:N`",
              "single: one device (`auto`: cuda:0 if present, else cpu). dp: one entry per "
              "replica, repeats allowed (`[\"cpu\",\"cpu\"]`). ddp: one entry per rank. "
              "`[\"auto\"]` for dp and ddp: every GPU, else the CPU"),
      text(KEY(parallel.output_device), "`cpu`, `cuda`, `cuda:N`",
           "dp: where outputs are gathered and the loss is taken (and where the loader puts "
           "batches); empty: the first device"),
      choice(KEY(parallel.dist_backend),
             "ddp: `auto` is `nccl` where each rank has a GPU of its own, else `gloo` (CPU "
             "ranks, ranks that share a GPU, a LibTorch without NCCL)"),
      // 64 GiB: far past any model's gradients, and bytes that fit int64 with room to spare.
      number(KEY(parallel.bucket_mb), {0, false, std::nullopt, "DDP's default is 25 (MB)"},
             "ddp: gradient bucket size in MiB, as DDP's `bucket_cap_mb`", /*max=*/65536),
      // A week: its nanoseconds past now still fit the clocks' int64.
      number(KEY(parallel.timeout_s), {0, false, std::nullopt, "the default is 600 (seconds)"},
             "ddp: how long a rank waits for the others (rendezvous, each collective)",
             /*max=*/604800),
      integer(KEY(parallel.max_restarts), 0,
              "ddp under dptrain's launcher: when a rank fails or hangs, every rank starts again "
              "from the newest checkpoint, up to N times (checkpoints needed); see "
              "[Restarts](checkpoints.md#restarts-after-a-failure)",
              kMaxRestarts),
      integer(KEY(parallel.zero_stage), 0,
              "ddp: 0 keeps the optimizer's state and gradients whole on every rank; 1 shards the "
              "optimizer's state over the ranks (ZeRO stage 1), 2 the gradients too; see "
              "[Sharded training](zero.md)",
              /*max=*/2),
      choice(KEY(parallel.grad_compression),
             "ddp: how gradient buckets cross the network: `fp16`/`bf16` halve the bytes, "
             "`powersgd` sends a low-rank approximation with error feedback; see [Slow "
             "links](backends.md#training-over-slow-links)"),
      integer(KEY(parallel.powersgd_rank), 1,
              "powersgd: the rank of each matrix's approximation (PowerSGD's "
              "`matrix_approximation_rank`)"),
      integer(KEY(parallel.powersgd_start_step), 0,
              "powersgd: plain all-reduces for this many optimizer steps first "
              "(`start_powerSGD_iter`)"),
      number(KEY(parallel.powersgd_min_compression), {1, true, std::nullopt, "PyTorch's is 2"},
             "powersgd: a matrix is compressed only where that makes it this many times smaller; "
             "the rest are all-reduced whole"),
      integer(KEY(parallel.local_sgd), 0,
              "ddp: post-local SGD: each rank steps on its own gradients and the ranks average "
              "their parameters every N optimizer steps (and before each evaluation); 0: off"),
      integer(KEY(parallel.local_sgd_warmup_steps), 0,
              "local_sgd: plain ddp steps before the local ones begin (`start_localSGD_iter`)"),
  };
}

std::vector<KeySpec> early_stopping_and_checkpoint_keys() {
  return {
      boolean(KEY(early_stopping.enabled), "see [Early stopping](#early-stopping)"),
      choice(KEY(early_stopping.monitor), "the figure watched; `val_*` need `data.val_split`"),
      choice(KEY(early_stopping.mode), "`auto`: `max` for accuracies, `min` for losses"),
      integer(KEY(early_stopping.patience), 1,
              "evaluations (epochs) in a row without improvement before stopping"),
      number(KEY(early_stopping.min_delta), {0, true, std::nullopt, "0 counts any improvement"},
             "an improvement must beat the best by more than this"),
      boolean(KEY(early_stopping.restore_best),
              "end with the best epoch's weights (`model.pt`) and report that epoch's figures"),
      boolean(KEY(early_stopping.stop_on_non_finite),
              "stop at once when the watched figure is nan or inf"),
      text(KEY(checkpoint.dir), "a folder",
           "where checkpoints go, in a folder per run (`<dir>/<run id>`); empty: "
           "`<output>/checkpoints`"),
      integer(KEY(checkpoint.every_epochs), 0,
              "a checkpoint after every N epochs (and after the last); 0: none"),
      integer(KEY(checkpoint.every_steps), 0,
              "also a checkpoint every N optimizer steps within an epoch, so that a crash loses "
              "fewer than N steps; 0: none"),
      integer(KEY(checkpoint.keep_last), 0,
              "epoch and step checkpoints kept, newest first; 0: all"),
      boolean(KEY(checkpoint.save_best),
              "also `best.pt`, the epoch with the best `early_stopping.monitor`"),
  };
}

std::vector<KeySpec> all_keys() {
  std::vector<KeySpec> keys = {
      text(KEY(name), "a name without `/`", "names the run folder `runs/<name>/`",
           [](const std::string& name, const Checker& check) {
             if (name.empty() || name.find('/') != std::string::npos) {
               check.fail("name", "must be a non-empty name without '/'",
                          "it names the folder runs/<name>/");
             }
           }),
      integer(KEY(seed), std::numeric_limits<int64_t>::min(),
              "initial weights and the per-epoch shuffle (`randperm` seeded with seed + epoch)"),
  };
  for (auto part : {data_keys(), model_and_optimizer_keys(), scheduler_keys(),
                    train_and_parallel_keys(), early_stopping_and_checkpoint_keys()}) {
    for (auto& k : part) keys.push_back(std::move(k));
  }
  keys.push_back(choice(KEY(precision),
                        "`bf16`: autocast on CPUs and GPUs; `fp16`: GPUs only, with dynamic loss "
                        "scaling; see [Mixed precision](#mixed-precision)"));
  keys.push_back(integer(KEY(runtime.threads), 0,
                         "intra-op threads of each process, ddp rank and CPU dp replica; 0: "
                         "every core, shared out between the ranks on a machine and the CPU "
                         "replicas in a process. Another count adds floats in another order, and "
                         "the run then ends elsewhere (resuming warns)"));
  keys.push_back(choice(KEY(log.level), "the least severe log messages shown"));
  keys.push_back(integer(KEY(log.every_steps), 0,
                         "a log line (and TensorBoard's step figures) every N optimizer steps; "
                         "0: none"));
  keys.push_back(choice(KEY(log.progress),
                        "a live progress line for the running epoch on rank 0; `auto`: when "
                        "stdout is a terminal"));
  keys.push_back(boolean(KEY(log.tensorboard),
                         "a TensorBoard event file in the run folder (rank 0); see "
                         "[docs/runs.md](runs.md)"));
  return keys;
}

#undef KEY

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> keys = all_keys();
  return keys;
}

nlohmann::json::json_pointer key_pointer(const std::string& path) {
  std::string pointer = "/" + path;
  for (char& ch : pointer) {
    if (ch == '.') ch = '/';
  }
  return nlohmann::json::json_pointer(pointer);
}

std::string key_path_of(const std::string& pointer) {
  std::string path;
  for (size_t start = 1; start <= pointer.size();) {  // past each '/'
    const size_t end = std::min(pointer.find('/', start), pointer.size());
    std::string token;
    for (size_t i = start; i < end; ++i) {  // the pointer's escapes: ~1 for '/', ~0 for '~'
      const bool escape =
          pointer[i] == '~' && i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1');
      token += escape ? (pointer[++i] == '1' ? '/' : '~') : pointer[i];
    }
    const bool index = !token.empty() && std::all_of(token.begin(), token.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    path += index ? "[" + token + "]" : (path.empty() ? "" : ".") + token;
    start = end + 1;
  }
  return path;
}

std::string key_table_markdown() {
  const Config defaults;
  std::string table =
      "| key | type | default | values | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& k : schema()) {
    table += "| `" + k.path + "` | " + k.type + " | `" + k.get(defaults).dump() + "` | " +
             k.allowed + " | " + k.doc + " |\n";
  }
  return table;
}

namespace {

std::string_view last_part(std::string_view path) {
  return path.substr(path.rfind('.') + 1);  // npos + 1: all of a path of one part
}

// The first letters of a name in words ("lr" for learning_rate); nothing for a one-word name.
std::string initials(std::string_view name) {
  if (name.find('_') == std::string_view::npos) return "";
  std::string letters;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '_' && (i == 0 || name[i - 1] == '_')) letters += name[i];
  }
  return letters;
}

bool same_name(std::string_view a, std::string_view b) {
  return a == b || (!initials(a).empty() && initials(a) == b) ||
         (!initials(b).empty() && initials(b) == a);
}

// How many leading characters `a` and `b` share as whole sections ("optimizer."), which a
// comparison of the paths leaves aside: otherwise the shared letters would let a long path's
// last part pass for any other of its section.
size_t shared_sections(std::string_view a, std::string_view b) {
  size_t shared = 0;
  for (size_t dot = a.find('.'); dot != std::string_view::npos; dot = a.find('.', shared)) {
    if (b.compare(0, dot + 1, a, 0, dot + 1) != 0) break;
    shared = dot + 1;
  }
  return shared;
}

// Every key, and every section above one ("optimizer"), once each, in the schema's order.
std::vector<std::string> keys_and_sections() {
  std::vector<std::string> paths;
  for (const auto& key : schema()) {
    for (size_t dot = key.path.find('.'); dot != std::string::npos;
         dot = key.path.find('.', dot + 1)) {
      std::string section = key.path.substr(0, dot);
      if (std::find(paths.begin(), paths.end(), section) == paths.end()) {
        paths.push_back(std::move(section));
      }
    }
    paths.push_back(key.path);
  }
  return paths;
}

// How near `path` is to `typed`, as edits (0 for a last part of the same name, else the fewer of
// the two measures that are close enough), then the letters of `typed` outside the sections both
// share, so that of keys as many edits away those of the section typed come first ("log.lvl":
// log.level, not optimizer.lr). Nothing when neither measure is close.
std::optional<std::pair<size_t, size_t>> nearness(std::string_view typed, std::string_view path) {
  const size_t shared = shared_sections(typed, path);
  const std::string_view typed_last = last_part(typed);
  const std::string_view last = last_part(path);
  if (same_name(typed_last, last)) return std::pair(size_t{0}, typed.size() - shared);
  std::optional<size_t> fewest;
  for (const auto& [a, b] :
       {std::pair(typed.substr(shared), path.substr(shared)), std::pair(typed_last, last)}) {
    const size_t distance = edit_distance(a, b);
    if (close_enough(distance, a, b) && (!fewest || distance < *fewest)) fewest = distance;
  }
  if (!fewest) return std::nullopt;
  return std::pair(*fewest, typed.size() - shared);
}

}  // namespace

std::vector<std::string> near_keys(const std::string& typed) {
  // Edits are counted in a table of both lengths, and a file's key may be megabytes long: one
  // far longer than any key's path is no mistyped key.
  constexpr size_t kLongestMeasured = 256;
  if (typed.size() > kLongestMeasured) return {};
  std::vector<std::pair<std::pair<size_t, size_t>, std::string>> near;
  for (const std::string& path : keys_and_sections()) {
    if (const auto how_near = nearness(typed, path)) near.emplace_back(*how_near, path);
  }
  std::vector<std::string> nearest;
  if (near.empty()) return nearest;
  const auto best = std::min_element(near.begin(), near.end())->first;
  for (const auto& [how_near, path] : near) {
    if (how_near == best) nearest.push_back(path);
  }
  return nearest;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein's table, plus a swap of two neighbours as one edit
  // ("trian" is one edit from "train").
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

bool close_enough(size_t distance, std::string_view typed, std::string_view name) {
  const size_t longest = std::max(typed.size(), name.size());
  return distance <= std::max<size_t>(2, longest / 3) && distance < longest;
}

}  // namespace dptrain::config
