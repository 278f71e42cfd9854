# Reliability builds (docs/reliability.md): sanitizers over the whole build, and the libFuzzer
# harnesses of tests/fuzz. Both go in a build directory of their own (scripts/sanitize.sh,
# scripts/fuzz.sh), never in the release build.
#
# SCCL_SANITIZE: "" (default), "address,undefined" or "thread". Every target, library included,
#   is instrumented; the first report aborts the program (-fno-sanitize-recover) so a test fails.
# SCCL_FUZZ: builds tests/fuzz (needs clang: -fsanitize=fuzzer); everything is instrumented for
#   coverage and with ASan + UBSan.
set(SCCL_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | thread")
option(SCCL_FUZZ "Build the libFuzzer harnesses (clang)" OFF)

if(SCCL_SANITIZE)
  add_compile_options(-fsanitize=${SCCL_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${SCCL_SANITIZE})
endif()

if(SCCL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SCCL_FUZZ needs clang (CC=clang CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
