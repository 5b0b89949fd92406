# Which translation units load LibTorch's precompiled header. The header (torch/torch.h, with
# nlohmann/json and spdlog) is about 600 MB: loading it costs a file 4 to 5 s before its first line
# (measured with g++ 12 on the 2-core development machine), and saves a file that includes LibTorch
# 6 to 7 s of parsing, but one that does not only loses those seconds; about a third of dptrain's
# files include no LibTorch header at all. dptrain_torch_pch(target) leaves the header out of each
# of the target's files that includes none, directly or through the project's headers.
#
# The scan runs at configure time: a file that gains or loses a LibTorch include keeps its choice
# until the next configure, which costs seconds of build time, never a wrong build.

# Whether `file` includes LibTorch (torch/, ATen/, c10/), itself or through a header found under
# src/, tests/ or its own folder. Memoized per file for the whole configure run.
function(_dptrain_includes_torch file result)
  string(MAKE_C_IDENTIFIER "${file}" key)
  get_property(known GLOBAL PROPERTY "DPTRAIN_TORCH_${key}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "DPTRAIN_TORCH_${key}")
    set(${result} ${value} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "DPTRAIN_TORCH_${key}" OFF)  # a cycle of headers ends here
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(here "${file}" DIRECTORY)
  set(value OFF)
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"](torch|ATen|c10)/")
      set(value ON)
      break()
    endif()
    if(NOT line MATCHES "\"([^\"]+)\"")
      continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    foreach(root "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/tests" "${here}")
      if(EXISTS "${root}/${name}")
        _dptrain_includes_torch("${root}/${name}" inner)
        if(inner)
          set(value ON)
        endif()
        break()
      endif()
    endforeach()
    if(value)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "DPTRAIN_TORCH_${key}" ${value})
  set(${result} ${value} PARENT_SCOPE)
endfunction()

# Call in the folder that defines `target`, after target_precompile_headers.
function(dptrain_torch_pch target)
  get_target_property(sources ${target} SOURCES)
  set(skipped 0)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE)
    if(NOT path MATCHES "\\.cpp$")
      continue()
    endif()
    _dptrain_includes_torch("${path}" uses)
    if(NOT uses)
      # A unity batch takes the header: a file without LibTorch stays out and compiles alone.
      set_source_files_properties("${path}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON
        SKIP_UNITY_BUILD_INCLUSION ON)
      math(EXPR skipped "${skipped} + 1")
    endif()
  endforeach()
  message(STATUS "dptrain: ${target}: ${skipped} files include no LibTorch and skip its PCH")
endfunction()
