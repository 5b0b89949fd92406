#include "support/catch.h"

#include "core/error.h"
#include "parallel/devices.h"

using dptrain::parallel::format_devices;
using dptrain::parallel::resolve_device;

TEST_CASE("auto picks cuda:0 when LibTorch sees a GPU, else the CPU", "[parallel]") {
  const torch::Device expected =
      torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  CHECK(resolve_device("auto", "parallel.devices[0]") == expected);
  CHECK(resolve_device("cpu", "parallel.devices[0]") == torch::Device(torch::kCPU));
}

TEST_CASE("a GPU that is not there is a device error naming the key", "[parallel]") {
  try {
    resolve_device("cuda:99", "parallel.devices[0]");
    FAIL("no error");
  } catch (const dptrain::core::Error& e) {
    CHECK(e.code() == dptrain::core::ErrorCode::kDevice);
    CHECK_THAT(e.what(), Catch::Matchers::StartsWith("parallel.devices[0]: \"cuda:99\""));
  }
}

TEST_CASE("devices are listed as d2l lists them", "[parallel]") {
  CHECK(format_devices({torch::kCPU}) == "[cpu]");
  CHECK(format_devices({torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 1)}) ==
        "[cuda:0, cuda:1]");
}
