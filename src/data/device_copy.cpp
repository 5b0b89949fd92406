#include "data/device_copy.h"

#include <c10/core/StreamGuard.h>

#include <thread>

#include "core/streams.h"

namespace dptrain::data {

DeviceCopier::DeviceCopier(torch::Device device)
    : device_(device), copy_stream_(core::pool_stream(device)), copied_(device.type()) {}

void DeviceCopier::launch(StagedBatch host) {
  TORCH_CHECK(!in_flight_, "DeviceCopier: take() the previous batch first");
  const c10::StreamGuard on_copy_stream(copy_stream_);
  // Allocated on the copy stream; take() records their use on the training stream so that the
  // caching allocator does not hand the memory out again while that stream still reads it.
  Batch device{host.batch.images.to(device_, /*non_blocking=*/true),
               host.batch.labels.to(device_, /*non_blocking=*/true)};
  copied_.record(copy_stream_);
  in_flight_ = InFlight{std::move(host), std::move(device)};
}

Batch DeviceCopier::take() {
  TORCH_CHECK(in_flight_, "DeviceCopier: nothing launched");
  const c10::Stream training = core::current_stream(device_);
  copied_.block(training);
  Batch batch = std::move(in_flight_->device);
  batch.images.record_stream(training);
  batch.labels.record_stream(training);
  // The copy was launched a step ago and is normally long done; the pinned buffer may only be
  // refilled after it, so wait for this one event on the host (not for the whole device).
  while (!copied_.query()) std::this_thread::yield();
  in_flight_.reset();
  return batch;
}

}  // namespace dptrain::data
