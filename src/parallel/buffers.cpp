#include "parallel/buffers.h"

#include <memory>

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

}  // namespace

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
