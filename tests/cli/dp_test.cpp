// dp as users run it: `dptrain train` with parallel.backend dp over repeated CPU devices.
#include "support/catch.h"

#include "support/fixtures.h"
#include "support/runs.h"

using namespace dptrain::testing;

namespace {

// 610 training images in batches of 60: ten full steps and a short last one of 10. At lr 0.1 the
// run is well conditioned; at d2l's 0.2 this tiny data set makes training chaotic enough that
// even the single backend with 1 and 2 threads ends 50% apart.
std::string common_args(const TempDir& data) {
  return "train --set data.dir=" + (data / "data").string() +
         " --set data.batch_size=60 --set train.epochs=2 --set model.init_std=0.1"
         " --set optimizer.lr=0.1 --set runtime.threads=1";
}

}  // namespace

TEST_CASE("dp over 2 CPU devices gives single-device training's parameters", "[cli][dp]") {
  TempDir dir;
  write_tiny_dataset(dir / "data", 610, 90);
  const auto single = dir / "single";
  REQUIRE(run_dptrain(common_args(dir) + " --set parallel.devices=cpu --output " + single.string())
              .status == 0);
  const auto out = dir / "dp";
  const auto result =
      run_dptrain(common_args(dir) +
                  " --set parallel.backend=dp --set parallel.devices='[\"cpu\",\"cpu\"]'"
                  " --output " +
                  out.string());
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(max_relative_difference(load_parameters(out / "model.pt"),
                                load_parameters(single / "model.pt")) <= 1e-5);
  const auto dp = summary_of(out);
  CHECK(dp.at("backend") == "dp");
  CHECK(dp.at("devices") == nlohmann::json::array({"cpu", "cpu"}));
  CHECK(dp.at("world_size") == 1);
  CHECK(dp.at("test_acc") == summary_of(single).at("test_acc"));
  CHECK_THAT(result.out, ContainsSubstring("sec/epoch on [cpu, cpu]"));
}

TEST_CASE("dp names the device entry that is not there", "[cli][dp]") {
  TempDir dir;
  const auto result = run_dptrain(
      "train --set parallel.backend=dp --set parallel.devices='[\"cpu\",\"cuda:7\"]' --output " +
      (dir / "out").string());
  CHECK(result.status == 6);
  CHECK_THAT(result.err, ContainsSubstring("device error: parallel.devices[1]: \"cuda:7\""));
  // The hint offers the repeated-device form, which runs a multi-device config on fewer devices.
  CHECK_THAT(result.err, ContainsSubstring("repeat"));
}
