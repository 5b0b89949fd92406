#include "parallel/backend.h"

#include "parallel/devices.h"

namespace dptrain::parallel {

std::string Backend::devices_text() const {
  return format_devices(devices());
}

void Backend::synchronize_device() const {
  synchronize(input_device());
}

int64_t Backend::gradient_bytes() {
  int64_t bytes = 0;
  for (const auto& p : parameters()) {
    if (p.grad().defined())
      bytes += p.grad().numel() * static_cast<int64_t>(p.grad().element_size());
  }
  return bytes;
}

optim::StateList Backend::optimizer_state(torch::optim::Optimizer& optimizer) {
  return optim::read_state(optimizer, parameters());
}

void Backend::load_optimizer_state(torch::optim::Optimizer& optimizer,
                                   const optim::StateList& whole) {
  optim::apply_state(optimizer, parameters(), whole);
}

int64_t Backend::optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  return optim::state_bytes(optimizer);
}

}  // namespace dptrain::parallel
