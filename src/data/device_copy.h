// Copies pinned host batches to a CUDA device on a side stream, so that the copy of batch k + 1
// runs while batch k computes. The training stream waits on the copy's event, never on a
// device-wide synchronisation. Uses LibTorch's device-generic stream and event API, so this file
// builds without CUDA headers (Debian's CPU LibTorch) and runs only when the device is CUDA.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <optional>

#include "data/staging.h"

namespace dptrain::data {

class DeviceCopier {
 public:
  explicit DeviceCopier(torch::Device device);

  bool busy() const { return in_flight_.has_value(); }
  // Launches the non-blocking copy of a pinned batch on the copy stream.
  void launch(StagedBatch host);
  // The launched batch, on the device and safe to use on the current stream. Returns its pinned
  // buffer to the pool once the copy is done.
  Batch take();

 private:
  struct InFlight {
    StagedBatch host;
    Batch device;
  };
  torch::Device device_;
  c10::Stream copy_stream_;
  c10::Event copied_;
  std::optional<InFlight> in_flight_;
};

}  // namespace dptrain::data
