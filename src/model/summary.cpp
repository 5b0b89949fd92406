#include "model/summary.h"

#include <ATen/record_function.h>

#include <iomanip>
#include <sstream>

#include "kernels/fused_input_block.h"
#include "kernels/winograd_conv.h"

namespace dptrain::model {
namespace {

int64_t count(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

// "dptrain::model::ResidualImpl" -> "Residual"; "torch::nn::Conv2dImpl" -> "Conv2d".
std::string short_type(const std::string& name) {
  std::string type = name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
  const std::string impl = "Impl";
  if (type.size() > impl.size() &&
      type.compare(type.size() - impl.size(), impl.size(), impl) == 0) {
    type.resize(type.size() - impl.size());
  }
  return type;
}

// What the callbacks count, on the summarising thread alone (the callbacks are this thread's).
thread_local ModelSummary* counting = nullptr;

const torch::Tensor* tensor_at(const c10::ArrayRef<const c10::IValue>& values, size_t i) {
  return i < values.size() && values[i].isTensor() ? &values[i].toTensor() : nullptr;
}

// What an op's start callback saw of its inputs, for its end callback: PyTorch 2.x keeps an op's
// inputs valid only during the start callback (its outputs have taken their place on the stack by
// the end), so the multiplier each output element costs is read there.
struct OpInputs : at::ObserverContext {
  enum class Kind { kConvolution, kMatmul } kind;
  int64_t flops_per_output;
  OpInputs(Kind k, int64_t f) : kind(k), flops_per_output(f) {}
};

// aten::convolution (under conv2d and the backends' own kernels), ResNet-18's Winograd
// convolutions (as many FLOPs as a direct convolution's, as every figure here counts them), LeNet's
// fused input block, and aten::linear / aten::mm / aten::addmm / aten::mkldnn_linear
// (kernels/cpu_kernels.h's dense) as dispatched at the top: a linear that becomes an addmm is
// counted once.
std::unique_ptr<OpInputs> read_inputs(const at::RecordFunction& fn) {
  const std::string name = fn.name();
  const auto inputs = fn.inputs();
  if (name == "aten::convolution" || name == kernels::kWinogradConvOp) {  // counted as a direct one
    const torch::Tensor* weight = tensor_at(inputs, 1);
    if (weight == nullptr || weight->dim() == 0 || weight->size(0) == 0) return nullptr;
    return std::make_unique<OpInputs>(OpInputs::Kind::kConvolution,
                                      2 * (weight->numel() / weight->size(0)));
  }
  if (name ==
      kernels::kFusedInputBlockOp) {  // conv + ReLU + pooling: 4 convolution outputs per output
    const torch::Tensor* weight = tensor_at(inputs, 1);
    if (weight == nullptr || weight->dim() == 0 || weight->size(0) == 0) return nullptr;
    return std::make_unique<OpInputs>(OpInputs::Kind::kConvolution,
                                      4 * 2 * (weight->numel() / weight->size(0)));
  }
  if (name == "aten::linear" || name == "aten::matmul" || name == "aten::mm" ||
      name == "aten::addmm" || name == "aten::mkldnn_linear") {
    const torch::Tensor* input = tensor_at(inputs, name == "aten::addmm" ? 1 : 0);
    if (input == nullptr || input->dim() == 0) return nullptr;
    return std::make_unique<OpInputs>(OpInputs::Kind::kMatmul, 2 * input->size(-1));
  }
  return nullptr;
}

void count_op(const at::RecordFunction& fn, const OpInputs& op) {
  const auto& outputs = fn.outputs();
  if (outputs.empty() || !outputs[0].isTensor()) return;
  const int64_t flops = op.flops_per_output * outputs[0].toTensor().numel();
  if (op.kind == OpInputs::Kind::kConvolution) {
    counting->convolution_flops += flops;
  } else {
    counting->matmul_flops += flops;
  }
}

// Counts only the outermost of nested ops: linear -> addmm, conv2d -> convolution ->
// mkldnn_convolution; aten::convolution and the Winograd convolution wherever they sit.
thread_local int depth = 0;
std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
  const std::string name = fn.name();
  const bool counted = counting != nullptr && (depth == 0 || name == "aten::convolution" ||
                                               name == kernels::kWinogradConvOp);
  ++depth;
  if (!counted) return nullptr;
  return read_inputs(fn);
}
void leave(const at::RecordFunction& fn, at::ObserverContext* context) {
  --depth;
  if (context != nullptr && counting != nullptr)
    count_op(fn, static_cast<const OpInputs&>(*context));
}

// One forward's counting: the callback in, eval mode and no gradients; all undone on leaving,
// an exception included.
class Counting {
 public:
  Counting(torch::nn::Module& model, ModelSummary& into)
      : model_(model), was_training_(model.is_training()) {
    model_.eval();
    counting = &into;
    depth = 0;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(enter, leave).needsInputs(true).needsOutputs(true));
  }
  ~Counting() {
    at::removeCallback(handle_);
    counting = nullptr;
    model_.train(was_training_);
  }
  Counting(const Counting&) = delete;
  Counting& operator=(const Counting&) = delete;

 private:
  torch::nn::Module& model_;
  bool was_training_;
  torch::NoGradGuard no_grad_;
  at::CallbackHandle handle_{};
};

}  // namespace

ModelSummary summarize(torch::nn::AnyModule& network, const std::vector<int64_t>& input_shape) {
  torch::nn::Module& model = *network.ptr();
  ModelSummary s;
  s.input_shape = input_shape;
  for (const auto& child : model.named_children()) {
    const auto grandchildren = child.value()->named_children();
    const bool container = child.value()->parameters(/*recurse=*/false).empty() &&
                           child.value()->named_buffers(/*recurse=*/false).is_empty() &&
                           grandchildren.size() > 1;
    const auto add = [&](const std::string& name, const torch::nn::Module& m) {
      s.layers.push_back({name, short_type(m.name()), count(m.parameters()), count(m.buffers())});
    };
    if (!container) {
      add(child.key(), *child.value());
      continue;
    }
    for (const auto& g : grandchildren) add(child.key() + "." + g.key(), *g.value());
  }
  s.parameters = count(model.parameters());
  s.buffers = count(model.buffers());

  std::vector<int64_t> batch = {1};
  batch.insert(batch.end(), input_shape.begin(), input_shape.end());
  torch::Tensor out;
  {
    const Counting scope(model, s);
    out = network.forward(torch::zeros(batch));
  }
  s.output_shape.assign(out.sizes().begin() + 1, out.sizes().end());
  return s;
}

std::string format_summary(const std::string& name, const ModelSummary& s) {
  std::ostringstream o;
  const auto shape = [](const std::vector<int64_t>& dims) {
    std::string text;
    for (const int64_t d : dims) text += (text.empty() ? "" : "x") + std::to_string(d);
    return text;
  };
  o << "model " << name << ": input " << shape(s.input_shape) << ", output "
    << shape(s.output_shape) << "\n\n";
  o << std::left << std::setw(22) << "layer" << std::setw(14) << "type" << std::right
    << std::setw(12) << "parameters" << std::setw(10) << "buffers"
    << "\n";
  for (const auto& l : s.layers) {
    o << std::left << std::setw(22) << l.name << std::setw(14) << l.type << std::right
      << std::setw(12) << l.parameters << std::setw(10) << l.buffers << "\n";
  }
  o << std::left << std::setw(36) << "total" << std::right << std::setw(12) << s.parameters
    << std::setw(10) << s.buffers << "\n\n";
  o << std::fixed << std::setprecision(2);
  const double total = static_cast<double>(s.convolution_flops + s.matmul_flops);
  o << "forward FLOPs per sample: " << total / 1e6 << " M (convolutions "
    << static_cast<double>(s.convolution_flops) / 1e6 << " M, matrix products "
    << static_cast<double>(s.matmul_flops) / 1e6
    << " M; multiply-adds counted twice); a training step costs about three times that\n";
  o << "parameters: " << static_cast<double>(s.parameters * 4) / (1 << 20)
    << " MiB in fp32; ddp all-reduces that much gradient per step\n";
  return o.str();
}

}  // namespace dptrain::model
