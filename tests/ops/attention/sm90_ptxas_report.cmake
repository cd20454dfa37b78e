# Compiles each Hopper kernel source (SOURCES, ';'-separated) for sm_90a with ptxas's resource
# report and fails when ptxas reports that it serialized the warpgroup MMAs (its info lines
# C751x "wgmma.mma_async instructions are serialized due to ...": an accumulator shape chosen at
# run time (C7511, which cost the forward ~20 % on an H200), too few registers (C7512), other
# instructions reading or writing an accumulator in flight (C7514, C7515); ptxas then waits for
# each wgmma before the next), or when a source does not compile. No GPU needed.
#   cmake -DNVCC=... -DROOT=... -DSOURCES=... -P sm90_ptxas_report.cmake
foreach(var NVCC ROOT SOURCES)
  if(NOT ${var})
    message(FATAL_ERROR "sm90_ptxas_report: -D${var}=... is required")
  endif()
endforeach()
set(failed "")
foreach(src IN LISTS SOURCES)
  execute_process(
    COMMAND ${NVCC} -std=c++17 -DGPTBENCH_WITH_CUDA=1 --expt-relaxed-constexpr
            -gencode=arch=compute_90a,code=sm_90a -I${ROOT} -cubin -o /dev/null -Xptxas=-v ${src}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  get_filename_component(name ${src} NAME)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${name}: nvcc exit ${rc}")
    message("${out}")
  endif()
  string(REGEX MATCHALL "C751[0-9][^\n]*instructions are serialized[^\n]*" serialized "${out}")
  list(LENGTH serialized count)
  if(count GREATER 0)
    list(GET serialized 0 example)
    list(APPEND failed "${name}: ${count} serialization report(s), e.g. ${example}")
  elseif(rc EQUAL 0)
    message(STATUS "${name}: compiled for sm_90a, wgmma not serialized")
  endif()
endforeach()
if(failed)
  string(REPLACE ";" "\n  " failed "${failed}")
  message(FATAL_ERROR "sm90_ptxas_report:\n  ${failed}")
endif()
