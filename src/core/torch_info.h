// What this LibTorch build and machine offer: versions, accelerators, communication backends.
// Printed by `dptrain info` and recorded in each run's summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dptrain::core {

struct TorchInfo {
  std::string libtorch_version;
  bool cuda_available = false;
  bool cudnn_available = false;
  bool mkldnn_available = false;
  bool gloo_available = false;  // compiled into this LibTorch
  bool nccl_available = false;  // compiled into this LibTorch
  int cuda_device_count = 0;
  // Versions this build was compiled against, "12.4"; empty where the build has none of it.
  std::string cuda_build_version;    // the CUDA runtime LibTorch was built with
  std::string cudnn_build_version;   // the cuDNN LibTorch was built with
  std::string nccl_build_version;    // the nccl.h dptrain's ddp was compiled with
  std::vector<std::string> devices;  // "cpu", then "cuda:0" ...
  int cores = 0;                     // what runtime.threads 0 uses
  int default_threads = 0;           // LibTorch's own default intra-op thread count
  // Which build of ATen's own vectorised CPU kernels runs ("avx2"; ATEN_CPU_CAPABILITY caps it).
  std::string aten_cpu_capability;
};

TorchInfo torch_info();
// ATen's CPU capability alone ("avx2", "avx512", "default"), as TorchInfo holds it.
std::string aten_cpu_capability();
std::string format_torch_info(const TorchInfo& info);
// The same for scripts (`dptrain info --json`), with dptrain's version.
nlohmann::json to_json(const TorchInfo& info);

}  // namespace dptrain::core
