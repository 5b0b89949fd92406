// How dense and convolutional layers run fastest on a CPU with Debian's LibTorch. Measured on a
// 2-core x86 machine with LeNet at batch 256: torch::linear goes to the system BLAS (Debian's
// reference BLAS by default), which took over a third of each step; the same product runs in
// oneDNN's JIT kernels instead: its inner product (2.9x as fast as the 1x1 convolution dptrain
// used before, which stays for what the inner product's ops do not take: another dtype, CPU
// autocast, no bias, an empty batch). oneDNN's convolutions are faster on channels-last
// activations and weights (converted per call, so parameters keep the standard layout: measured
// as fast as keeping them channels-last). The arithmetic is unchanged; only the kernels differ.
#pragma once

#include <torch/torch.h>

#include <ATen/record_function.h>

namespace dptrain::kernels {

// True when `t` lives on a CPU and this LibTorch has oneDNN.
bool use_onednn_path(const torch::Tensor& t);

// True when `t` is a defined, strided fp32 tensor on a CPU: what dptrain's own kernels take.
bool is_cpu_fp32(const torch::Tensor& t);

// x [N, in] . weight [out, in]^T + bias [out], as torch::linear, through oneDNN on CPUs: its inner
// product for fp32 tensors with a bias and N > 0 (outside CPU autocast), else a 1x1 convolution.
torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// torch::conv2d with stride 1 and no padding, channels-last on oneDNN CPUs; for fp32 tensors with a
// bias (outside CPU autocast) its gradients are dptrain's kernels (kernels/conv_input_grad.h,
// kernels/conv_weight_grad.h).
torch::Tensor conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias);

// Hands the output of the op that `guard` (RECORD_FUNCTION's) records to a profiler that asked
// for outputs: `dptrain info` counts an op's FLOPs by its output's size (model/summary.cpp).
void record_output(at::RecordFunction& guard, const torch::Tensor& output);

// How many of LibTorch's intra-op threads (up to 64) the at::parallel_for in dptrain's own kernels
// reaches: all of them in a build with GNU OpenMP, 1 without (the CMakeLists says why).
int own_kernel_threads();

}  // namespace dptrain::kernels
