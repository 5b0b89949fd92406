#include "core/torch_info.h"

#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cctype>
#include <sstream>
#include <thread>

#include "build_features.h"
#include "core/torch_compat.h"

#if DPTRAIN_WITH_NCCL
#include <nccl.h>
#endif

namespace dptrain::core {
namespace {

// LibTorch's CUDA hooks answer these from the CUDART_VERSION and CUDNN_VERSION it was compiled
// with, so they need no GPU; a build without CUDA (or without cuDNN) throws instead.
std::string cuda_build_version() {
  try {
    const long v = at::detail::getCUDAHooks().versionCUDART();  // 12040: 12.4
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  } catch (const std::exception&) {
    return "";
  }
}

std::string cudnn_build_version() {
  try {
    const long v = at::detail::getCUDAHooks().versionCuDNN();
    const long major_unit = v >= 90000 ? 10000 : 1000;  // cuDNN 9 widened the major's field
    return std::to_string(v / major_unit) + "." + std::to_string(v % major_unit / 100) + "." +
           std::to_string(v % 100);
  } catch (const std::exception&) {
    return "";
  }
}

std::string nccl_build_version() {
#if DPTRAIN_WITH_NCCL
  return std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH);
#else
  return "";
#endif
}

std::string built_with(const std::string& what, const std::string& version) {
  return version.empty() ? "; not in this build" : "; built with " + what + " " + version;
}

}  // namespace

// As at::show_config() states it ("CPU capability usage: AVX2"): the dispatcher's own query is
// not exported from libtorch_cpu (1.13), while the text is there in 1.13 and 2.x alike.
std::string aten_cpu_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const size_t from = at + key.size();
  std::string value = config.substr(from, config.find('\n', from) - from);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value == "no avx" ? "default" : value;  // ATEN_CPU_CAPABILITY's name for it
}

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
  info.cuda_build_version = cuda_build_version();
  info.cudnn_build_version = cudnn_build_version();
  info.nccl_build_version = nccl_build_version();
  info.devices.push_back("cpu");
  for (int i = 0; i < info.cuda_device_count; ++i)
    info.devices.push_back("cuda:" + std::to_string(i));
  info.cores = static_cast<int>(std::thread::hardware_concurrency());
  info.default_threads = torch::get_num_threads();
  info.aten_cpu_capability = aten_cpu_capability();
  return info;
}

std::string format_torch_info(const TorchInfo& info) {
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  std::ostringstream out;
  out << "dptrain " << DPTRAIN_VERSION << "\n"
      << "libtorch: " << info.libtorch_version << "\n"
      << "cuda: " << yes_no(info.cuda_available) << " (" << info.cuda_device_count << " devices)"
      << built_with("CUDA", info.cuda_build_version) << "\n"
      << "cudnn: " << yes_no(info.cudnn_available) << built_with("cuDNN", info.cudnn_build_version)
      << "\n"
      << "onednn (mkldnn): " << yes_no(info.mkldnn_available) << "\n"
      << "gloo: " << yes_no(info.gloo_available) << "\n"
      << "nccl: " << yes_no(info.nccl_available) << built_with("NCCL", info.nccl_build_version)
      << "\n"
      << "devices:";
  for (const auto& d : info.devices) out << " " << d;
  out << "\nthreads: " << info.cores
      << " (runtime.threads 0 uses every core; LibTorch's own default "
      << "here: " << info.default_threads << ")\n";
  return out.str();
}

nlohmann::json to_json(const TorchInfo& info) {
  const auto version = [](const std::string& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(v);
  };
  return {
      {"dptrain_version", DPTRAIN_VERSION},
      {"libtorch_version", info.libtorch_version},
      {"cuda",
       {{"available", info.cuda_available},
        {"devices", info.cuda_device_count},
        {"built_with", version(info.cuda_build_version)}}},
      {"cudnn",
       {{"available", info.cudnn_available}, {"built_with", version(info.cudnn_build_version)}}},
      {"mkldnn", {{"available", info.mkldnn_available}}},
      {"gloo", {{"available", info.gloo_available}}},
      {"nccl",
       {{"available", info.nccl_available}, {"built_with", version(info.nccl_build_version)}}},
      {"devices", info.devices},
      {"cores", info.cores},
      {"default_threads", info.default_threads},
      {"aten_cpu_capability", info.aten_cpu_capability}};
}

}  // namespace dptrain::core
