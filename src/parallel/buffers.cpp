#include "parallel/buffers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "core/error.h"
#include "core/line_diff.h"
#include "core/terminal.h"
#include "model/batch_norm.h"

namespace dptrain::parallel {
namespace {

class RanksSum : public model::StatisticsSum {
 public:
  explicit RanksSum(distributed::Communicator& comm) : comm_(comm) {}
  void sum(const torch::Tensor& values, const char* what) override {
    comm_.all_reduce(values, what);
  }

 private:
  distributed::Communicator& comm_;
};

// Each tensor's shape, "[6, 1, 5, 5]", a line each.
std::string shapes_text(const std::vector<torch::Tensor>& tensors) {
  std::string text;
  for (const auto& t : tensors) text += fmt::format("[{}]\n", fmt::join(t.sizes(), ", "));
  return text;
}

}  // namespace

void check_same_shapes(const std::vector<std::string>& names,
                       const std::vector<torch::Tensor>& tensors, distributed::Communicator& comm) {
  if (comm.world_size() == 1) return;
  const auto differs =
      core::first_line_difference(comm.all_gather_text("shapes", shapes_text(tensors)));
  if (!differs) return;
  const size_t k = differs->line;
  const std::string name = k < names.size() ? names[k] : "tensor " + std::to_string(k);
  // Another rank's text came through the store: shown escaped and cut short.
  throw core::Error(
      core::ErrorCode::kDistributed,
      fmt::format("rank {}'s model is not rank 0's: its {} is {} there and {} on rank 0 ({} and "
                  "{} tensors)",
                  differs->text, name, core::printable(differs->theirs.substr(0, 100)),
                  differs->ours, differs->their_lines, differs->our_lines),
      "every rank must make the same model: the same model.* keys and the same data "
      "(data.classes, data.channels and data.image_size come from each rank's own data.dir)");
}

void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors,
                          distributed::Communicator& comm, const std::string& what) {
  if (tensors.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  for (const auto& t : tensors) parts.push_back(t.detach().reshape({-1}).to(torch::kFloat64));
  const torch::Tensor flat = torch::cat(parts);
  comm.broadcast(flat, /*root=*/0, what);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    torch::Tensor target = t;
    target.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

int sync_batchnorm_over(torch::nn::Module& model, distributed::Communicator& comm) {
  const auto over = std::make_shared<RanksSum>(comm);
  int count = 0;
  for (auto& module : model.modules()) {
    if (auto* bn = module->as<model::BatchNorm2dImpl>()) {
      bn->sync_statistics(over);
      ++count;
    }
  }
  return count;
}

void stop_syncing_batchnorm(torch::nn::Module& model) {
  for (auto& module : model.modules()) {
    if (auto* bn = module->as<model::BatchNorm2dImpl>()) bn->sync_statistics(nullptr);
  }
}

}  // namespace dptrain::parallel
