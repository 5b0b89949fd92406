#include "core/torch_info.h"

#include <sstream>
#include <thread>

#include "build_features.h"
#include "core/torch_compat.h"

namespace dptrain::core {

TorchInfo torch_info() {
  TorchInfo info;
  info.libtorch_version = compat::libtorch_version();
  info.cuda_available = torch::cuda::is_available();
  info.cudnn_available = info.cuda_available && torch::cuda::cudnn_is_available();
  info.mkldnn_available = at::hasMKLDNN();
  // What dptrain's ddp can use in this build (CMake decides from the headers it finds).
#if DPTRAIN_WITH_GLOO
  info.gloo_available = true;
#endif
#if DPTRAIN_WITH_NCCL
  info.nccl_available = true;
#endif
  info.cuda_device_count = info.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
  info.devices.push_back("cpu");
  for (int i = 0; i < info.cuda_device_count; ++i)
    info.devices.push_back("cuda:" + std::to_string(i));
  info.cores = static_cast<int>(std::thread::hardware_concurrency());
  info.default_threads = torch::get_num_threads();
  return info;
}

std::string format_torch_info(const TorchInfo& info) {
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  std::ostringstream out;
  out << "dptrain " << DPTRAIN_VERSION << "\n"
      << "libtorch: " << info.libtorch_version << "\n"
      << "cuda: " << yes_no(info.cuda_available) << " (" << info.cuda_device_count << " devices)\n"
      << "cudnn: " << yes_no(info.cudnn_available) << "\n"
      << "onednn (mkldnn): " << yes_no(info.mkldnn_available) << "\n"
      << "gloo: " << yes_no(info.gloo_available) << "\n"
      << "nccl: " << yes_no(info.nccl_available) << "\n"
      << "devices:";
  for (const auto& d : info.devices) out << " " << d;
  out << "\nthreads: " << info.cores
      << " (runtime.threads 0 uses every core; LibTorch's own default "
      << "here: " << info.default_threads << ")\n";
  return out.str();
}

}  // namespace dptrain::core
