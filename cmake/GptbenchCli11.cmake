# CLI11::CLI11 for every command-line tool of the project (compare, runner, history, the suite).
# Debian's libcli11-dev ships a CMake package; a prefix that holds only the header (CLI/CLI.hpp)
# works too. Included by each folder that uses it (a folder may be configured on its own, as
# runner/checks does): a package target is visible in the including folder and below.
if(NOT TARGET CLI11::CLI11)
  find_package(CLI11 CONFIG QUIET)
endif()
if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED GLOBAL)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
