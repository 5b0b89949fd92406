#include "core/streams.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace dptrain::core {

c10::Stream current_stream(torch::Device device) {
  if (!device.is_cuda()) return c10::Stream(c10::Stream::DEFAULT, device);
  return c10::impl::VirtualGuardImpl(device.type()).getStream(device);
}

c10::Stream pool_stream(torch::Device device) {
  TORCH_CHECK(device.is_cuda(), "pool_stream: ", device.str(), " is not a CUDA device");
  return c10::impl::VirtualGuardImpl(device.type())
      .getStreamFromGlobalPool(device, /*isHighPriority=*/false);
}

void wait_for(const c10::Stream& waiter, const c10::Stream& producer) {
  if (waiter == producer || !producer.device().is_cuda() || !waiter.device().is_cuda()) return;
  c10::Event done(producer.device_type());
  done.record(producer);
  done.block(waiter);
}

}  // namespace dptrain::core
