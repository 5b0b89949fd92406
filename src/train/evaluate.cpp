#include "train/evaluate.h"

#include "core/torch_compat.h"

namespace dptrain::train {

EvalResult evaluate(parallel::Backend& backend, data::Loader& loader, int64_t classes,
                    const std::function<void(int64_t, int64_t)>& after_batch) {
  backend.set_training(false);
  core::compat::InferenceGuard no_autograd;
  const auto options = torch::TensorOptions().device(backend.input_device());
  // Summed on the device, read once at the end: no synchronisation per batch.
  torch::Tensor loss_sum = torch::zeros({}, options.dtype(torch::kFloat64));
  // classes^2 counts, summed over the ranks: kept only for as many classes as a person reads.
  const bool with_confusion = classes <= kConfusionClasses;
  torch::Tensor confusion =
      torch::zeros({with_confusion ? classes * classes : 0}, options.dtype(torch::kInt64));
  torch::Tensor correct = torch::zeros({}, options.dtype(torch::kInt64));
  int64_t samples = 0;
  int64_t done = 0;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    const torch::Tensor logits = backend.forward(batch->images);
    TORCH_CHECK(logits.size(1) == classes, "evaluate: the model gives ", logits.size(1),
                " classes, and the data has ", classes);
    loss_sum += torch::nn::functional::cross_entropy(
        logits, batch->labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    const torch::Tensor predicted = logits.argmax(1);
    correct += (predicted == batch->labels).sum();
    if (with_confusion) {
      const torch::Tensor cell = batch->labels * classes + predicted;
      confusion.index_add_(0, cell, torch::ones_like(cell));
    }
    samples += batch->size();
    if (after_batch) after_batch(++done, loader.batches_per_epoch());
  }
  const torch::Tensor counts = confusion.cpu();
  std::vector<double> totals = {loss_sum.item<double>(), static_cast<double>(samples),
                                static_cast<double>(correct.item<int64_t>())};
  const int64_t* count = counts.data_ptr<int64_t>();
  for (int64_t i = 0; i < counts.numel(); ++i) totals.push_back(static_cast<double>(count[i]));
  backend.all_reduce_sum(totals);
  backend.set_training(true);
  EvalResult result;
  result.samples = static_cast<int64_t>(totals[1]);
  result.correct = static_cast<int64_t>(totals[2]);
  for (size_t i = 3; i < totals.size(); ++i) {
    result.confusion.push_back(static_cast<int64_t>(totals[i]));
  }
  if (result.samples > 0) {
    result.loss = totals[0] / totals[1];
    result.accuracy = static_cast<double>(result.correct) / totals[1];
  }
  return result;
}

}  // namespace dptrain::train
