#include "config/config.h"

#include <nlohmann/json.hpp>

namespace dptrain::config {

nlohmann::json to_json(const Config& c) {
  return {
      {"name", c.name},
      {"seed", c.seed},
      {"data",
       {{"dataset", c.data.dataset},
        {"dir", c.data.dir},
        {"batch_size", c.data.batch_size},
        {"drop_last", c.data.drop_last},
        {"placement", c.data.placement},
        {"num_workers", c.data.num_workers},
        {"prefetch_batches", c.data.prefetch_batches},
        {"pin_memory", c.data.pin_memory},
        {"val_split", c.data.val_split}}},
      {"model", {{"name", c.model.name}, {"init_std", c.model.init_std}}},
      {"optimizer",
       {{"name", c.optimizer.name},
        {"lr", c.optimizer.lr},
        {"momentum", c.optimizer.momentum},
        {"weight_decay", c.optimizer.weight_decay},
        {"grad_clip_norm", c.optimizer.grad_clip_norm}}},
      {"train",
       {{"epochs", c.train.epochs},
        {"limit_train_batches", c.train.limit_train_batches},
        {"limit_eval_batches", c.train.limit_eval_batches}}},
      {"parallel",
       {{"backend", c.parallel.backend},
        {"devices", c.parallel.devices},
        {"output_device", c.parallel.output_device},
        {"dist_backend", c.parallel.dist_backend},
        {"bucket_mb", c.parallel.bucket_mb},
        {"timeout_s", c.parallel.timeout_s}}},
      {"early_stopping",
       {{"enabled", c.early_stopping.enabled},
        {"monitor", c.early_stopping.monitor},
        {"mode", c.early_stopping.mode},
        {"patience", c.early_stopping.patience},
        {"min_delta", c.early_stopping.min_delta},
        {"restore_best", c.early_stopping.restore_best},
        {"stop_on_non_finite", c.early_stopping.stop_on_non_finite}}},
      {"checkpoint",
       {{"dir", c.checkpoint.dir},
        {"every_epochs", c.checkpoint.every_epochs},
        {"keep_last", c.checkpoint.keep_last},
        {"save_best", c.checkpoint.save_best}}},
      {"precision", c.precision},
      {"runtime", {{"threads", c.runtime.threads}}},
      {"log", {{"level", c.log.level}, {"every_steps", c.log.every_steps}}},
  };
}

}  // namespace dptrain::config
