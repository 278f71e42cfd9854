# cmake --install: the header, libsparsecoll.so, a CMake package (find_package(sparsecoll) gives
# sparsecoll::sparsecoll) and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS sparsecoll EXPORT sparsecollTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/sparsecoll DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(SCCL_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sparsecoll)
install(EXPORT sparsecollTargets NAMESPACE sparsecoll:: DESTINATION ${SCCL_CMAKE_INSTALL_DIR})
configure_package_config_file(cmake/sparsecollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sparsecollConfig.cmake INSTALL_DESTINATION ${SCCL_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sparsecollConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sparsecollConfig.cmake
              ${PROJECT_BINARY_DIR}/sparsecollConfigVersion.cmake
        DESTINATION ${SCCL_CMAKE_INSTALL_DIR})

file(RELATIVE_PATH SCCL_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/sparsecoll.pc.in ${PROJECT_BINARY_DIR}/sparsecoll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sparsecoll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
