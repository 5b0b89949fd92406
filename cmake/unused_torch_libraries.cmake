# Debian's LibTorch 1.13 names 17 OpenCV and FFmpeg libraries among its dependencies (Caffe2's
# image and video operators; 264 libraries once theirs are counted) and refers to no symbol of
# theirs. The loader still maps, relocates and initialises all of them in every process that links
# LibTorch, before main(): `dptrain --version` spent 0.66 s of CPU and 164 MB of resident memory
# with them, 0.39 s and 90 MB without (2-core development machine), and every process a test or a
# ddp job starts pays that again.
#
# So dptrain's programs look first in a folder of empty libraries with those sonames
# (BUILD_DIR/unused-torch-libraries, installed under LIBDIR/dptrain/): the folder is in their
# DT_RPATH, which the loader searches for the dependencies of every library the program loads
# (DT_RUNPATH, the linker's default, would serve only the program's own), so libtorch_cpu's
# requests find the stand-ins and the real libraries are never opened. Only where
# cmake/unused_torch_libraries.sh finds it safe at configure time (no LibTorch library refers to
# a symbol they define, and a LibTorch program with the stand-ins starts with every symbol bound);
# with a LibTorch that needs no such library (pip's) nothing changes.
# -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF loads them all.
include(GNUInstallDirs)
option(DPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES
  "Give LibTorch empty stand-ins for the OpenCV and FFmpeg libraries it names but never uses" ON)
set(DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR ${CMAKE_BINARY_DIR}/unused-torch-libraries)
set(DPTRAIN_UNUSED_TORCH_LIBRARIES "")
if(DPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES)
  get_filename_component(_torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
  set(_torch_files "")
  foreach(_name torch torch_cpu c10)
    if(EXISTS "${_torch_lib_dir}/lib${_name}.so")
      list(APPEND _torch_files "${_torch_lib_dir}/lib${_name}.so")
    endif()
  endforeach()
  execute_process(
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/unused_torch_libraries.sh
      ${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR} ${CMAKE_CXX_COMPILER} ${CMAKE_NM} ${CMAKE_OBJDUMP}
      ${_torch_files}
    OUTPUT_VARIABLE _stubbed OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "cmake/unused_torch_libraries.sh failed (${_rc})")
  endif()
  string(REPLACE "\n" ";" DPTRAIN_UNUSED_TORCH_LIBRARIES "${_stubbed}")
  list(LENGTH DPTRAIN_UNUSED_TORCH_LIBRARIES _count)
  message(STATUS "dptrain: ${_count} libraries LibTorch names but never uses get empty stand-ins")
endif()
if(DPTRAIN_UNUSED_TORCH_LIBRARIES)
  set(DPTRAIN_UNUSED_TORCH_LIBRARIES_INSTALL_DIR
    ${CMAKE_INSTALL_LIBDIR}/dptrain/unused-torch-libraries)
  install(DIRECTORY ${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR}/
    DESTINATION ${DPTRAIN_UNUSED_TORCH_LIBRARIES_INSTALL_DIR})
endif()

# Call for each program that links LibTorch.
function(dptrain_skip_unused_torch_libraries target)
  if(NOT DPTRAIN_UNUSED_TORCH_LIBRARIES)
    return()
  endif()
  # Every entry of the program's search path becomes DT_RPATH, this folder's included.
  target_link_options(${target} PRIVATE "LINKER:--disable-new-dtags")
  set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH ${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR})
  set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH
    "$ORIGIN/../${DPTRAIN_UNUSED_TORCH_LIBRARIES_INSTALL_DIR}")
endfunction()
