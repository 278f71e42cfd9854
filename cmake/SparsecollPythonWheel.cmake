# The Python wheel, build/python/sparsecoll-<version>-py3-none-<platform>.whl: the package of
# bindings/python plus libsparsecoll, installable offline into a bare venv (docs/python.md). Built
# with ALL, again whenever the library or a package file changes. Writes only under the build
# directory.
#
# The bundled library must find nothing of the checkout: it is installed (component
# sparsecoll_python_wheel, not part of a plain `cmake --install`) into a staging prefix, and
# CMake rewrites its RUNPATH at install to INSTALL_RPATH, $ORIGIN, without patchelf. The property
# is the target's, so the `cmake --install` copy gets $ORIGIN too: harmless, its dependencies
# (MPI, UCX, CUDA) stay system libraries found by the loader, and $ORIGIN only adds the directory
# it lies in. (The build tree keeps its own RUNPATH; CMake pads it so the rewrite fits.)

# The interpreter of the wheel build and of the Python tests (bindings/python/CMakeLists.txt).
# /usr/bin/python3 is preferred because `python3` on PATH may be another interpreter without
# torch, numpy, pytest and mpi4py, which the tests need.
if(EXISTS /usr/bin/python3 AND NOT DEFINED SCCL_PYTHON)
  set(SCCL_PYTHON /usr/bin/python3)
endif()
find_program(SCCL_PYTHON NAMES python3)
set(SCCL_PYTHON ${SCCL_PYTHON} CACHE FILEPATH
    "Python interpreter of the wheel build and the Python package tests")

option(SCCL_PYTHON_WHEEL "Build the Python wheel (build/python/*.whl) with the library" ON)
if(NOT SCCL_PYTHON_WHEEL OR NOT SCCL_PYTHON)
  return()
endif()

set_target_properties(sparsecoll PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS sparsecoll LIBRARY DESTINATION sparsecoll/lib NAMELINK_SKIP
        COMPONENT sparsecoll_python_wheel EXCLUDE_FROM_ALL)

# build_wheel.py runs setuptools and wheel's bdist_wheel in-process, offline: say so now rather
# than fail in the middle of the build.
execute_process(COMMAND ${SCCL_PYTHON} -B -c "import setuptools, wheel.bdist_wheel"
                RESULT_VARIABLE _sccl_wheel_tools ERROR_QUIET)
if(NOT _sccl_wheel_tools EQUAL 0)
  message(FATAL_ERROR "The Python wheel needs setuptools and wheel for ${SCCL_PYTHON} (Debian: "
          "python3-setuptools python3-wheel, scripts/install-deps.sh); -DSCCL_PYTHON_WHEEL=OFF "
          "skips the wheel")
endif()

set(_sccl_py_src ${PROJECT_SOURCE_DIR}/bindings/python)
set(_sccl_wheel_dir ${PROJECT_BINARY_DIR}/python)
set(_sccl_wheel_staging ${_sccl_wheel_dir}/staging)
execute_process(COMMAND ${SCCL_PYTHON} -c "import sysconfig; print(sysconfig.get_platform())"
                OUTPUT_VARIABLE _sccl_platform OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
string(REGEX REPLACE "[-.]" "_" _sccl_platform "${_sccl_platform}")
set(SCCL_PYTHON_WHEEL_FILE
    ${_sccl_wheel_dir}/sparsecoll-${PROJECT_VERSION}-py3-none-${_sccl_platform}.whl
    CACHE INTERNAL "The wheel built by the python_wheel target")
# The soname, a real file in the staging prefix (a wheel cannot hold the symlinks).
set(_sccl_wheel_library
    ${_sccl_wheel_staging}/sparsecoll/lib/libsparsecoll.so.${PROJECT_VERSION_MAJOR})

file(GLOB _sccl_py_package_files CONFIGURE_DEPENDS ${_sccl_py_src}/sparsecoll/*.py)
add_custom_command(
  OUTPUT ${SCCL_PYTHON_WHEEL_FILE}
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_sccl_wheel_staging}
  COMMAND ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --component sparsecoll_python_wheel
          --prefix ${_sccl_wheel_staging}
  COMMAND ${SCCL_PYTHON} -B ${_sccl_py_src}/build_wheel.py
          --pyproject ${_sccl_py_src}/pyproject.toml --library ${_sccl_wheel_library}
          --version ${PROJECT_VERSION} --platform-tag ${_sccl_platform} --out-dir ${_sccl_wheel_dir}
  DEPENDS sparsecoll $<TARGET_FILE:sparsecoll> ${_sccl_py_package_files}
          ${_sccl_py_src}/pyproject.toml ${_sccl_py_src}/build_wheel.py
  COMMENT "Python wheel with the library: ${SCCL_PYTHON_WHEEL_FILE}"
  VERBATIM)
add_custom_target(python_wheel ALL DEPENDS ${SCCL_PYTHON_WHEEL_FILE})
