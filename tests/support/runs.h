// Reading back what a finished run wrote, to compare backends: model.pt's parameters and
// summary.json.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dptrain::testing {

// The environment of a job across machines (tests/cli/hosts, nodes, elastic): the secret every
// machine of the job gets, as a batch script would export it.
inline const std::vector<std::string> kJobSecretEnv = {
    "DPTRAIN_JOB_SECRET=4f1b2c3d4e5f60718293a4b5c6d7e8f9"};

// The arguments of a short momentum-SGD run that resumes exactly: `train` on the IDX files in
// `data_dir` in batches of 30, two epochs, weights drawn wide enough to learn at once (init_std
// 0.1), lr 0.05 with momentum 0.9 (state a checkpoint must carry), one thread, a 60 s ddp
// timeout; then `extra` and --output `out`.
std::vector<std::string> momentum_sgd_job(const std::filesystem::path& data_dir,
                                          const std::vector<std::string>& extra,
                                          const std::filesystem::path& out);

// The options of a job on `backend`: "single" on the CPU, or "ddp" over two CPU ranks.
std::vector<std::string> on_cpu_backend(const std::string& backend);

// model.pt's tensors in the model's order.
std::vector<torch::Tensor> load_parameters(const std::filesystem::path& model_pt);
nlohmann::json summary_of(const std::filesystem::path& run_dir);
// metrics.jsonl's records, one per epoch.
std::vector<nlohmann::json> metrics_of(const std::filesystem::path& run_dir);

// The run folder's one TensorBoard event file (fails the test unless there is exactly one).
std::filesystem::path the_event_file(const std::filesystem::path& run);
// Whether tests/python/read_tensorboard.py can run (Debian's python3-protobuf and python3-crc32c).
bool python_event_reader_present();
// The event file as tests/python/read_tensorboard.py reads it: {"scalars": {tag: [[step, value,
// wall_time], ...]}, "texts": ..., "file_version": ...}.
nlohmann::json read_events(const std::filesystem::path& run);

// venv_python() (support/fixtures.h) when TensorBoard imports there; empty when it does not.
std::string tensorboard_python();
// The run's scalars as TensorBoard's own code shows them (tests/python/tensorboard_reads.py):
// {"version": ..., "file_version": ..., "data_server"|"provider"|"accumulator": {tag: [[step,
// value], ...]}, "texts": {tag: [[step, text], ...]}}.
nlohmann::json read_with_tensorboard(const std::filesystem::path& run);

// The largest difference between matching tensors, relative to the largest magnitude in `b`'s
// tensor; infinity where either holds a NaN. Fails the test when the lists do not match in
// length or shapes.
double max_relative_difference(const std::vector<torch::Tensor>& a,
                               const std::vector<torch::Tensor>& b);

}  // namespace dptrain::testing
