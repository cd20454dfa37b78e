# cmake --install <build> --prefix <prefix>: the suite as a CMake package (docs/extending.md).
#   include/gptbench/{fixtures,model,ops,train}/   the harness's headers, included by path as in
#                                                   the suite ("fixtures/extension.h")
#   lib/libgptbench_*.a, lib/gptbench/objects/      the libraries; the families' and main's
#                                                   objects (linked whole: they self-register)
#   lib/cmake/gptbench/                             gptbenchConfig.cmake, its version file and
#                                                   the exported targets (gptbench::harness,
#                                                   gptbench::main, ...)
#   bin/                                            gptbench, gptbench-run, gptbench-compare,
#                                                   gptbench-premerge
# Included by the top-level CMakeLists.txt once every library target is defined.
include(CMakePackageConfigHelpers)
set(GPTBENCH_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gptbench)

set(GPTBENCH_EXPORTED_TARGETS gptbench_options gptbench_ops gptbench_model gptbench_fixtures
    gptbench_train gptbench_harness gptbench_families gptbench_main_object)
if(TARGET gptbench_kernels)
  list(APPEND GPTBENCH_EXPORTED_TARGETS gptbench_kernels gptbench_kernels_sm90a)
endif()
foreach(target ${GPTBENCH_EXPORTED_TARGETS})  # gptbench_fixtures -> gptbench::fixtures
  string(REGEX REPLACE "^gptbench_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()
install(TARGETS ${GPTBENCH_EXPORTED_TARGETS} EXPORT gptbenchTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/gptbench/objects)
install(EXPORT gptbenchTargets NAMESPACE gptbench:: DESTINATION ${GPTBENCH_INSTALL_CMAKEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/fixtures ${PROJECT_SOURCE_DIR}/model
                  ${PROJECT_SOURCE_DIR}/ops ${PROJECT_SOURCE_DIR}/train
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gptbench
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh" PATTERN "*.inc")

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/gptbenchConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/gptbenchConfig.cmake
                              INSTALL_DESTINATION ${GPTBENCH_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the extension API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gptbenchConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gptbenchConfig.cmake ${PROJECT_BINARY_DIR}/gptbenchConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/GptbenchCli11.cmake ${CMAKE_CURRENT_LIST_DIR}/GptbenchTorchLinks.cmake
        DESTINATION ${GPTBENCH_INSTALL_CMAKEDIR})

# The suite's binary keeps the path to LibTorch it was linked with.
set_target_properties(gptbench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS gptbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
