# Building against the torch wheel from PyPI (its CUDA build) as the LibTorch, which CMake alone
# gets wrong on a Debian machine in three ways (scripts/check_torch_pip.sh sets
# DPTRAIN_PIP_TORCH to the venv's site-packages and GLOO_INCLUDE_DIR):
# - torch.utils.cmake_prefix_path (torch/share/cmake) as the prefix lets TorchConfig's
#   find_library take Debian's libtorch and libc10 (system folders come before its PATHS): the
#   prefix here is the package folder itself, so every library comes from the wheel.
# - Caffe2Config's CUDA part wants nvcc and a CUDA toolkit, and takes a system one of another
#   version, with its older nccl.h, over the wheel's. dptrain compiles no CUDA code and the wheel
#   carries the CUDA runtime and NCCL, so torch::cudart is defined here from the wheel's own
#   files, which makes that part return before it looks for a toolkit.
# - The wheel carries no Gloo headers, and Debian 12's are older than its Gloo (another Store
#   vtable): GLOO_INCLUDE_DIR must name matching ones; /usr/include's are refused.
set(_site "${DPTRAIN_PIP_TORCH}")
foreach(_needed torch/share/cmake/Torch/TorchConfig.cmake nvidia/nccl/include/nccl.h)
  if(NOT EXISTS "${_site}/${_needed}")
    message(FATAL_ERROR "DPTRAIN_PIP_TORCH=${_site} has no ${_needed}: name the site-packages "
                        "folder of a venv with pip's torch (CUDA build) in it")
  endif()
endforeach()
# The CUDA runtime: nvidia/cu<major>/ in CUDA 13's wheels, nvidia/cuda_runtime/ in CUDA 12's.
file(GLOB _cudart "${_site}/nvidia/cu[0-9]*/lib/libcudart.so.*"
     "${_site}/nvidia/cuda_runtime/lib/libcudart.so.*")
file(GLOB _cuda_include LIST_DIRECTORIES true "${_site}/nvidia/cu[0-9]*/include"
     "${_site}/nvidia/cuda_runtime/include")
if(NOT _cudart OR NOT _cuda_include)
  message(FATAL_ERROR "DPTRAIN_PIP_TORCH=${_site}: no CUDA runtime wheel "
                      "(nvidia/*/lib/libcudart.so.*) beside torch; pip's CPU-only torch is not "
                      "what this mode builds against")
endif()
list(GET _cudart 0 _cudart)
add_library(torch::cudart INTERFACE IMPORTED)
set_target_properties(torch::cudart PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${_cuda_include};${_site}/nvidia/nccl/include"
  INTERFACE_LINK_LIBRARIES "${_cudart}")
list(PREPEND CMAKE_PREFIX_PATH "${_site}/torch")
set(NCCL_INCLUDE_DIR "${_site}/nvidia/nccl/include" CACHE PATH "nccl.h's folder" FORCE)
if(NOT GLOO_INCLUDE_DIR OR GLOO_INCLUDE_DIR STREQUAL "/usr/include"
   OR NOT EXISTS "${GLOO_INCLUDE_DIR}/gloo/rendezvous/store.h")
  message(FATAL_ERROR "pip's torch carries no Gloo headers and /usr/include's do not match its "
                      "Gloo: set GLOO_INCLUDE_DIR to matching ones (scripts/check_torch_pip.sh "
                      "unpacks Debian's newest libgloo-dev for this)")
endif()
