# gptbench_pip_nvidia_link_options(<out-var> <LibTorch's libtorch path>): linker options for a
# pip-installed LibTorch. It finds its CUDA libraries (NCCL, cuDNN, ...) in site-packages/nvidia
# through its RPATH at run time; the linker must look there too, not at the toolkit's older ones.
# Used by the suite's build and by gptbenchConfig.cmake for the LibTorch a consumer finds.
function(gptbench_pip_nvidia_link_options out torch_library)
  get_filename_component(dir "${torch_library}" DIRECTORY)
  file(GLOB libs "${dir}/../../nvidia/*/lib")
  set(options)
  foreach(lib ${libs})
    list(APPEND options "LINKER:-rpath-link,${lib}")
  endforeach()
  set(${out} ${options} PARENT_SCOPE)
endfunction()
