#include "parallel/backend.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "core/error.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/devices.h"
#include "parallel/single.h"
#include "parallel/transport_choice.h"

namespace dptrain::parallel {
namespace {

std::unique_ptr<Backend> make_ddp(const config::ParallelConfig& config, torch::nn::AnyModule model,
                                  const launch::RankInfo& rank, bool sync_batchnorm) {
  const torch::Device device = device_for_local_rank(config.devices, rank.local_rank, rank.rank);
  const std::optional<std::string> obstacle = why_not_nccl(config.devices);
  const TransportChoice choice = choose_transport(config.dist_backend, device, rank.rank, obstacle,
                                                  distributed::nccl_available());
  const distributed::Transport transport = choice.transport;
  if (rank.rank == 0 && obstacle && transport == distributed::Transport::kNccl) {
    spdlog::warn(
        "ddp: parallel.dist_backend nccl: {}, unless CUDA_VISIBLE_DEVICES gives each rank "
        "another GPU; \"auto\" or \"gloo\" would take Gloo",
        *obstacle);
  }
  if (!choice.reason.empty() && rank.rank == 0) {
    // Gloo on GPUs works but is slower than NCCL: worth a warning, with the reason.
    const bool slower = device.is_cuda() && transport == distributed::Transport::kGloo;
    spdlog::log(slower ? spdlog::level::warn : spdlog::level::info,
                "ddp: parallel.dist_backend auto picks {}: {}",
                distributed::transport_name(transport), choice.reason);
  }
  spdlog::info("ddp: {} on {}, joining over {} at {}", launch::describe(rank), device.str(),
               distributed::transport_name(transport),
               rank.master_addr.empty()
                   ? std::string("this process")
                   : rank.master_addr + ":" + std::to_string(rank.master_port));
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::ceil(config.timeout_s * 1000)));
  auto comm = distributed::Communicator::join(rank, transport, device, timeout);
  const auto bucket_bytes = static_cast<int64_t>(config.bucket_mb * 1024 * 1024);
  if (config.zero_stage > 0) {
    spdlog::info("ddp: ZeRO stage {}: the optimizer's state{} sharded over {} ranks",
                 config.zero_stage, config.zero_stage >= 2 ? " and the gradients" : "",
                 rank.world_size);
  }
  ExchangeOptions exchange;
  exchange.compression = {config.grad_compression, config.powersgd_rank, config.powersgd_start_step,
                          config.powersgd_min_compression};
  exchange.local_sgd = config.local_sgd;
  exchange.local_sgd_warmup_steps = config.local_sgd_warmup_steps;
  if (config.grad_compression != config::GradCompression::kNone) {
    spdlog::info("ddp: gradient buckets cross as {}", config::name_of(config.grad_compression));
  }
  if (config.local_sgd > 0) {
    spdlog::info(
        "ddp: local SGD: ranks average their parameters every {} steps after {} plain ones",
        config.local_sgd, config.local_sgd_warmup_steps);
  }
  return std::make_unique<DistributedDataParallel>(
      std::move(model), device, std::move(comm), bucket_bytes, static_cast<int>(config.zero_stage),
      sync_batchnorm, exchange);
}

}  // namespace

std::unique_ptr<Backend> make_backend(const config::ParallelConfig& config,
                                      torch::nn::AnyModule model, const launch::RankInfo& rank,
                                      bool sync_batchnorm) {
  if (config.backend == config::Backend::kDdp) {
    return make_ddp(config, std::move(model), rank, sync_batchnorm);
  }
  if (rank.world_size > 1) {
    throw core::Error(core::ErrorCode::kConfig,
                      "parallel.backend: \"" + config::name_of(config.backend) +
                          "\" trains in one process, but " + rank.launcher + " started " +
                          std::to_string(rank.world_size),
                      "use parallel.backend \"ddp\" under a launcher, or start one process");
  }
  if (config.backend == config::Backend::kDp) {
    std::vector<torch::Device> devices = resolve_device_list(config.devices);
    if (devices.size() == 1) {
      spdlog::warn(
          "parallel.backend \"dp\" over one device ({}) trains as \"single\" does, with dp's "
          "replica overhead on top; list two or more devices (parallel.devices=[\"cpu\",\"cpu\"]) "
          "or use parallel.backend \"single\"",
          format_devices(devices));
    }
    const torch::Device output =
        config.output_device.empty()
            ? devices[0]
            : resolve_device(config.output_device, "parallel.output_device");
    return std::make_unique<DataParallel>(std::move(model), std::move(devices), output);
  }
  const torch::Device device = resolve_device(config.devices.at(0), "parallel.devices[0]");
  return std::make_unique<SingleDevice>(std::move(model), device);
}

}  // namespace dptrain::parallel
