// Running a kernel at 1 and then 2 of LibTorch's intra-op threads, for the tests that its results
// do not depend on the thread count.
#pragma once

#include <utility>

#include <ATen/Parallel.h>

#include "kernels/cpu_kernels.h"

namespace dptrain::testing {

template <typename Result>
struct OneAndTwoThreads {
  Result one, two;
  // How many threads dptrain's own kernels reached at 2: 1 in a build without OpenMP, where the
  // two results cannot differ.
  int kernel_threads;
};

// `run()` at 1 thread, then at 2; LibTorch's thread count is restored after, an exception
// included.
template <typename Run>
auto at_one_and_two_threads(Run run) {
  struct RestoreThreads {
    int threads = at::get_num_threads();
    ~RestoreThreads() { at::set_num_threads(threads); }
  } const restore;
  at::set_num_threads(1);
  auto one = run();
  at::set_num_threads(2);
  auto two = run();
  return OneAndTwoThreads<decltype(one)>{std::move(one), std::move(two),
                                         kernels::own_kernel_threads()};
}

}  // namespace dptrain::testing
