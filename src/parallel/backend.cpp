#include "parallel/backend.h"

namespace dptrain::parallel {

int64_t Backend::gradient_bytes() {
  int64_t bytes = 0;
  for (const auto& p : parameters()) {
    if (p.grad().defined())
      bytes += p.grad().numel() * static_cast<int64_t>(p.grad().element_size());
  }
  return bytes;
}

}  // namespace dptrain::parallel
