#include "train/evaluate.h"

#include "core/torch_compat.h"

namespace dptrain::train {

EvalResult evaluate(parallel::Backend& backend, data::Loader& loader) {
  backend.set_training(false);
  core::compat::InferenceGuard no_autograd;
  const auto options = torch::TensorOptions().device(backend.input_device());
  // Summed on the device, read once at the end: no synchronisation per batch.
  torch::Tensor loss_sum = torch::zeros({}, options.dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, options.dtype(torch::kInt64));
  int64_t samples = 0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor logits = backend.forward(batch->images);
    loss_sum += torch::nn::functional::cross_entropy(
        logits, batch->labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    correct += logits.argmax(1).eq(batch->labels).sum();
    samples += batch->size();
  }
  std::vector<double> totals = {loss_sum.item<double>(),
                                static_cast<double>(correct.item<int64_t>()),
                                static_cast<double>(samples)};
  backend.all_reduce_sum(totals);
  backend.set_training(true);
  EvalResult result;
  result.samples = static_cast<int64_t>(totals[2]);
  if (result.samples > 0) {
    result.loss = totals[0] / totals[2];
    result.accuracy = totals[1] / totals[2];
  }
  return result;
}

}  // namespace dptrain::train
