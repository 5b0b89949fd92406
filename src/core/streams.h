// The streams a device's work goes to, through LibTorch's device-generic stream and event API: the
// same code builds without CUDA headers (Debian's CPU LibTorch) and does its work only on GPUs.
// On a CPU every call is a no-op or the CPU's one stream, because CPU work runs in order anyway.
#pragma once

#include <c10/core/Stream.h>
#include <torch/torch.h>

namespace dptrain::core {

// The stream this thread queues work to on `device`.
c10::Stream current_stream(torch::Device device);

// A stream from LibTorch's pool for `device`, apart from the default one (GPUs only).
c10::Stream pool_stream(torch::Device device);

// Makes `waiter` hold its later work until what `producer` has queued so far is done, without
// blocking the host. Nothing to do when both are the same stream or either is not a GPU's: the host
// reads GPU results only through copies, and those are queued on, and ordered by, GPU streams.
void wait_for(const c10::Stream& waiter, const c10::Stream& producer);

}  // namespace dptrain::core
