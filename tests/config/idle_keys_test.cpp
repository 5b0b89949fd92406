// Keys set where they do nothing are named, each once, with the reason.
#include "config/idle_keys.h"

#include "config/load.h"
#include "core/error.h"
#include "support/catch.h"

using namespace dptrain;

namespace {

config::Config with(const std::vector<std::string>& overrides) {
  return config::resolve_config(std::nullopt, "test", overrides, {"lenet"});
}

}  // namespace

TEST_CASE("ddp's keys under single or dp are named as ignored, defaults are not", "[config]") {
  CHECK(config::idle_key_warnings(with({}), "none").empty());
  CHECK(config::idle_key_warnings(with({"parallel.backend=dp", "parallel.timeout_s=600"}), "none")
            .empty());  // a default, however given, does nothing to warn of
  const auto warnings = config::idle_key_warnings(
      with({"parallel.backend=dp", "parallel.bucket_mb=1", "parallel.dist_backend=gloo",
            "parallel.timeout_s=5", "parallel.max_restarts=2"}),
      "none");
  CHECK(warnings ==
        std::vector<std::string>{
            "parallel.dist_backend applies to ddp's ranks, and parallel.backend is "
            "\"dp\": it is ignored",
            "parallel.bucket_mb applies to ddp's ranks, and parallel.backend is \"dp\": "
            "it is ignored",
            "parallel.timeout_s applies to ddp's ranks, and parallel.backend is \"dp\": "
            "it is ignored",
            "parallel.max_restarts applies to ddp's ranks, and parallel.backend is "
            "\"dp\": it is ignored"});
}

TEST_CASE("model.sync_batchnorm on single is named as ignored, and on dp refused naming the key",
          "[config][batchnorm]") {
  CHECK(config::idle_key_warnings(with({"model.sync_batchnorm=true"}), "none") ==
        std::vector<std::string>{"model.sync_batchnorm applies to ddp's ranks, and "
                                 "parallel.backend is \"single\": it is ignored"});
  CHECK(
      config::idle_key_warnings(with({"model.sync_batchnorm=true", "parallel.backend=ddp"}), "none")
          .empty());
  try {
    with({"model.sync_batchnorm=true", "parallel.backend=dp"});
    FAIL("dp took model.sync_batchnorm");
  } catch (const core::Error& e) {
    CHECK(std::string(e.what()) ==
          "--set model.sync_batchnorm=true: model.sync_batchnorm: sums BatchNorm's statistics over "
          "the ranks of the ddp "
          "backend; dp keeps the first replica's, as torch.nn.DataParallel does");
  }
}

TEST_CASE("restarts are named as ignored where dptrain's launcher does not start the ranks",
          "[config]") {
  const auto ddp = with({"parallel.backend=ddp", "parallel.max_restarts=2"});
  CHECK(config::idle_key_warnings(ddp, "dptrain").empty());
  CHECK(config::idle_key_warnings(ddp, "torchrun") ==
        std::vector<std::string>{"parallel.max_restarts applies to ranks that dptrain's launcher "
                                 "starts, and torchrun started these: it is ignored (restart them "
                                 "with torchrun's --max_restarts)"});
  CHECK(config::idle_key_warnings(ddp, "slurm").at(0).find("SLURM's requeue") != std::string::npos);
  CHECK(config::idle_key_warnings(ddp, "mpirun").at(0).find("requeueing the job") !=
        std::string::npos);
  CHECK(config::idle_key_warnings(ddp, "none") ==
        std::vector<std::string>{"parallel.max_restarts applies to ranks that dptrain's launcher "
                                 "starts, and this job's one rank runs in this process: it is "
                                 "ignored"});
}
