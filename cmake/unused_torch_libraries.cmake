# Debian's LibTorch 1.13 names 17 OpenCV and FFmpeg libraries among its dependencies (Caffe2's
# image and video operators; 214 libraries that nothing else needs, once theirs are counted) and
# refers to no symbol of theirs. The loader still maps, relocates and initialises all of them in
# every process that links LibTorch, before main(): `dptrain --version` took 0.63 to 0.70 s of CPU
# and 160 MiB of resident memory with them, 0.38 to 0.40 s and 88 MiB without (2-core development
# machine), and every process a test or a ddp job starts pays that again.
#
# So dptrain's programs in the build tree look first in a folder of empty libraries with those
# sonames, BUILD_DIR/unused-torch-libraries: the folder is in their DT_RPATH, which the loader
# searches for the dependencies of every library the program loads (DT_RUNPATH, the linker's
# default, would serve only the program's own), so libtorch_cpu's requests find the stand-ins and
# the real libraries are never opened. Only where cmake/unused_torch_libraries.sh finds it safe at
# configure time (no LibTorch library refers to a symbol they define, and a LibTorch program with
# the stand-ins starts with every symbol bound); with a LibTorch that needs no such library (pip's)
# nothing changes. A LibTorch updated in place that starts using them would stop dptrain at start
# with the loader's "symbol lookup error": configure again, or build with
# -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF, which loads them all.
#
# The search path is the folder's absolute path, given to the linker directly and not through
# CMake's BUILD_RPATH: CMake pads a build RPATH with empty entries to make room for the install
# one, and the loader reads an empty entry as the current directory, so a program started in a
# folder others can write would load their libraries. Whoever can write the build tree can replace
# dptrain itself, so the folder adds no one who could put code into it. An installed dptrain has
# no search path (install removes it) and loads the real libraries: a path relative to $ORIGIN
# would trust whatever folder a copied binary lands in.
option(DPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES
  "Give LibTorch empty stand-ins for the OpenCV and FFmpeg libraries it names but never uses" ON)
set(DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR ${CMAKE_BINARY_DIR}/unused-torch-libraries)
set(DPTRAIN_UNUSED_TORCH_LIBRARIES "")
# Why no stand-ins were made (tests/cli/unused_libraries_test.cpp skips, saying it), and where the
# check that would make them could not run, why not (that test fails with it).
set(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE "")
set(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED "")
get_filename_component(_torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
if(NOT DPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES)
  set(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE "configured with -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF")
elseif(NOT _torch_lib_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  # A LibTorch in a folder of its own comes with a search path of its own, which
  # --disable-new-dtags would turn into DT_RPATH: LD_LIBRARY_PATH could no longer override it.
  set(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE "LibTorch is outside the system's library folders")
elseif(DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR MATCHES "[,:]")
  # The linker would read the path as several (-Wl splits at commas, the loader at colons).
  set(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED "the build folder's path holds a comma or colon")
elseif(NOT CMAKE_NM OR NOT CMAKE_OBJDUMP)
  set(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED "no nm or objdump (binutils) was found")
else()
  set(_torch_files "")
  foreach(_name torch torch_cpu c10)
    if(EXISTS "${_torch_lib_dir}/lib${_name}.so")
      list(APPEND _torch_files "${_torch_lib_dir}/lib${_name}.so")
    endif()
  endforeach()
  execute_process(
    COMMAND sh "${PROJECT_SOURCE_DIR}/cmake/unused_torch_libraries.sh"
      "${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR}" "${CMAKE_CXX_COMPILER}" "${CMAKE_NM}"
      "${CMAKE_OBJDUMP}" ${_torch_files}
    OUTPUT_VARIABLE _stubbed OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _why ERROR_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "cmake/unused_torch_libraries.sh failed (${_rc}): ${_why}")
  endif()
  string(REPLACE "\n" ";" DPTRAIN_UNUSED_TORCH_LIBRARIES "${_stubbed}")
  if(_stubbed)
    list(LENGTH DPTRAIN_UNUSED_TORCH_LIBRARIES _count)
    message(STATUS "dptrain: ${_count} libraries LibTorch names but never uses get empty "
      "stand-ins")
  elseif(_why MATCHES "(^|\n)used: ([^\n]*)$")
    set(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE "LibTorch uses them: ${CMAKE_MATCH_2}")
  elseif(_why MATCHES "(^|\n)unchecked: ([^\n]*)$")
    set(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED "${CMAKE_MATCH_2}")
  elseif(_why)
    set(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED "${_why}")
  else()
    set(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE "this LibTorch names no OpenCV or FFmpeg library")
  endif()
endif()
if(NOT DPTRAIN_UNUSED_TORCH_LIBRARIES)
  file(REMOVE_RECURSE ${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR})  # an earlier configure's
endif()
if(DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED)
  message(WARNING "dptrain: LibTorch's OpenCV and FFmpeg libraries stay loaded, unchecked: "
    "${DPTRAIN_UNUSED_TORCH_LIBRARIES_UNCHECKED}. Every dptrain process then loads them (65 to 70 "
    "MiB and a quarter of a second more); -DDPTRAIN_SKIP_UNUSED_TORCH_LIBRARIES=OFF says that is "
    "meant.")
elseif(DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE)
  message(STATUS "dptrain: no stand-ins for LibTorch's libraries: "
    "${DPTRAIN_UNUSED_TORCH_LIBRARIES_NONE}")
endif()

# Call for each program that links LibTorch.
function(dptrain_skip_unused_torch_libraries target)
  if(NOT DPTRAIN_UNUSED_TORCH_LIBRARIES)
    return()
  endif()
  target_link_options(${target} PRIVATE "LINKER:--disable-new-dtags"
    "LINKER:-rpath,${DPTRAIN_UNUSED_TORCH_LIBRARIES_DIR}")
endfunction()

# Call after install(TARGETS target): the installed copy loses the build tree's search path.
function(dptrain_install_without_stand_ins target destination)
  if(NOT DPTRAIN_UNUSED_TORCH_LIBRARIES)
    return()
  endif()
  if(IS_ABSOLUTE "${destination}")
    set(where "\$ENV{DESTDIR}${destination}")
  else()
    set(where "\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${destination}")
  endif()
  install(CODE "file(RPATH_REMOVE FILE \"${where}/$<TARGET_FILE_NAME:${target}>\")")
endfunction()
