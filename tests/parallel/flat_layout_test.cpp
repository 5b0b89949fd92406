// Where a flat layout puts tensors: each on a 64-byte boundary, as the allocator puts a tensor of
// its own, whatever the element size; and the views that FlatBuffer::adopt hands back sit there.
#include "parallel/flat_layout.h"

#include "core/error.h"
#include "parallel/flat_buffer.h"
#include "support/catch.h"

namespace {

using dptrain::parallel::FlatBuffer;
using dptrain::parallel::FlatLayout;

// Three tensors of 3, 12 and 4 elements, laid out last first (as ddp's buckets order them).
FlatLayout three_tensors(int world, int64_t element_size) {
  return {{3, 12, 4}, {2, 1, 0}, world, /*rank=*/0, element_size};
}

}  // namespace

TEST_CASE("a flat layout starts every tensor on a 64-byte boundary, for any element size",
          "[parallel][flat]") {
  // fp32: 16 elements to a boundary; bf16 and fp16: 32; fp64: 8.
  const FlatLayout f32 = three_tensors(1, 4);
  CHECK(f32.offset(2) == 0);
  CHECK(f32.offset(1) == 16);
  CHECK(f32.offset(0) == 32);
  CHECK(f32.numel() == 35);  // no gap after the last
  CHECK(f32.padded_numel() == 35);
  const FlatLayout f16 = three_tensors(1, 2);
  CHECK(f16.offset(1) == 32);
  CHECK(f16.offset(0) == 64);
  CHECK(f16.numel() == 67);
  const FlatLayout f64 = three_tensors(1, 8);
  CHECK(f64.offset(1) == 8);
  CHECK(f64.offset(0) == 24);
  CHECK(f64.numel() == 27);
  // Shards of the laid-out size, gaps included: 4 ranks of ceil(35 / 4) = 9.
  const FlatLayout sharded = three_tensors(4, 4);
  CHECK(sharded.shard_numel() == 9);
  CHECK(sharded.padded_numel() == 36);
  // An element size that 64 bytes do not hold a whole number of.
  CHECK_THROWS_AS(three_tensors(1, 3), dptrain::core::Error);
  CHECK_THROWS_AS(three_tensors(1, 0), dptrain::core::Error);
}

TEST_CASE("tensors adopted by a flat buffer keep their values and sit on 64-byte boundaries",
          "[parallel][flat]") {
  for (const auto dtype : {torch::kFloat32, torch::kFloat64, torch::kBFloat16}) {
    INFO(c10::toString(dtype));
    std::vector<torch::Tensor> tensors;
    std::vector<torch::Tensor> values;
    for (const int64_t n : {10, 1280, 50, 3}) {
      tensors.push_back(torch::arange(n, torch::dtype(dtype)));
      values.push_back(tensors.back().clone());
    }
    const FlatLayout layout(dptrain::parallel::numels_of(tensors), {3, 2, 1, 0}, 2, 0,
                            tensors[0].element_size());
    const FlatBuffer buffer = FlatBuffer::adopt(tensors, layout, "test");
    for (size_t i = 0; i < tensors.size(); ++i) {
      CHECK(tensors[i].data_ptr() != values[i].data_ptr());  // moved into the buffer
      CHECK(reinterpret_cast<uintptr_t>(tensors[i].data_ptr()) % 64 == 0);
      CHECK(torch::equal(tensors[i], values[i]));
    }
    // The gaps and the end padding are zeros.
    torch::Tensor rest = buffer.flat().clone();
    for (size_t i = 0; i < tensors.size(); ++i) {
      rest.narrow(0, layout.offset(i), tensors[i].numel()).zero_();
    }
    CHECK(rest.eq(0).all().item<bool>());
  }
}
