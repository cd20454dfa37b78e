# gptbench_tool_options(TARGET): the settings of the tools' libraries (runjson/, compare/):
# C++17 for their users, warnings, and an optimised build even when the project is configured
# without a build type (loading and comparing 10k x 10 repetitions takes well under a second).
function(gptbench_tool_options target)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_compile_options(${target} PRIVATE $<$<CONFIG:>:-O2>)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra)
  endif()
endfunction()
