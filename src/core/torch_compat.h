// Every difference between the LibTorch versions dptrain builds against (Debian's 1.13 and the
// 2.x of official and pip builds) lives here, so that the rest of the code reads the same on both.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "build_features.h"

namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d

// True when the LibTorch being compiled against is version MAJOR.MINOR or newer.
#define DPTRAIN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace dptrain::core::compat {

// A parameter's gradient accumulator as autograd hands it out: a std::shared_ptr<Node> in 1.13
// and early 2.x, a c10::intrusive_ptr<Node> since nodes became intrusive. Holding it keeps the
// accumulator (and the hooks on it) alive.
using GradAccumulatorPtr =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

inline std::string libtorch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Both versions have c10::InferenceMode; the alias keeps call sites independent of its home.
using InferenceGuard = c10::InferenceMode;

// The class that ProcessGroupGloo and ProcessGroupNCCL derive from, which declares the collectives:
// c10d::ProcessGroup in 1.13; since 2.0 a ProcessGroup dispatches to c10d::Backend objects.
#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

// c10d::TCPStoreOptions: 2.4 made the store's server default to its libuv implementation, which
// only builds made with libuv have (Debian's are not), and 1.13 has no such option. The classic
// server is in every build and serves the few dozen ranks of a dptrain job as well.
template <typename StoreOptions>
void use_classic_store_server(StoreOptions& options) {
#if DPTRAIN_TORCH_AT_LEAST(2, 4)
  options.useLibUV = false;
#else
  (void)options;
#endif
}

// PyTorch 2.0 changed the TCPStore wire protocol (a VALIDATE query first, the query codes moved
// by one). A 1.13 client's queries reach a 2.x server as other queries, and it never answers.
constexpr bool kStoreSpeaksPre2Protocol = TORCH_VERSION_MAJOR < 2;

// c10d::Store::clone(): a LibTorch after 2.6 added it to the interface (pure virtual, so every
// store defines it); before, a store's clone() overrides nothing. CMake asks the headers
// (build_features.h), since 2.6's lack it.
#if DPTRAIN_STORE_HAS_CLONE
#define DPTRAIN_STORE_CLONE_OVERRIDE override
#else
#define DPTRAIN_STORE_CLONE_OVERRIDE
#endif

// Autocast's per-thread switches for one device type (CPU or CUDA). 2.4 replaced the functions
// named after each device (set_cpu_enabled, set_autocast_gpu_dtype, ...) with ones that take it.
#if DPTRAIN_TORCH_AT_LEAST(2, 4)
inline bool autocast_enabled(c10::DeviceType type) {
  return at::autocast::is_autocast_enabled(type);
}
inline void set_autocast_enabled(c10::DeviceType type, bool on) {
  at::autocast::set_autocast_enabled(type, on);
}
inline at::ScalarType autocast_dtype(c10::DeviceType type) {
  return at::autocast::get_autocast_dtype(type);
}
inline void set_autocast_dtype(c10::DeviceType type, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(type, dtype);
}
#else
inline bool autocast_enabled(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                       : at::autocast::is_cpu_enabled();
}
inline void set_autocast_enabled(c10::DeviceType type, bool on) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
inline at::ScalarType autocast_dtype(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                       : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(c10::DeviceType type, at::ScalarType dtype) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

// The key of a parameter's entry in Optimizer::state(): its TensorImpl's address as text in 1.13,
// the address itself in later versions. Told apart by the map's key type, not by version number.
using OptimizerStateKey =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
template <typename Key = OptimizerStateKey>  // a template, so that only one branch is compiled
Key optimizer_state_key(const torch::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    // What 1.13's c10::guts::to_string writes (2.x no longer has it): the address via ostream.
    std::ostringstream text;
    text << static_cast<const void*>(param.unsafeGetTensorImpl());
    return text.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

}  // namespace dptrain::core::compat
