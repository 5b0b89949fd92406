// The vector type of dptrain's own CPU kernels (kernels/vector_clones.h compiles them per CPU):
// kLanes floats as one value, in GCC's and clang's vector extension (one AVX register, two SSE
// ones). Written out because the compilers left the same loops over small arrays scalar.
#pragma once

#include <cstdint>
#include <cstring>

// GCC warns that passing these by value changes with AVX: the helpers are forced inline and the
// kernels' own functions file-local, so no call between differently compiled code exists (without
// always_inline an -O0 build would call one baseline copy from the AVX clones, each expecting the
// vector elsewhere). The pragma reaches every file that includes this one, on purpose: the
// warning is given where a kernel's helpers are called, not here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace dptrain::kernels {

constexpr int64_t kLanes = 8;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t LaneInts __attribute__((vector_size(kLanes * sizeof(int32_t))));

// Unaligned loads and stores of a vector.
template <typename Vector, typename Element>
__attribute__((always_inline)) inline Vector load(const Element* from) {
  Vector v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
template <typename Vector, typename Element>
__attribute__((always_inline)) inline void store(Element* to, const Vector& v) {
  std::memcpy(to, &v, sizeof v);
}

}  // namespace dptrain::kernels
