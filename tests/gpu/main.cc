// Entry point of the GPU suite (CTest label `gpu`). Without a usable device it prints one line
// and exits 77, which CTest reports as skipped. The return code of cudaGetDeviceCount is checked,
// not only the count: on machines without a driver it fails (cudaErrorInsufficientDriver or
// cudaErrorNoDevice) and leaves the count undefined.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices < 1) {
    std::printf(
        "SKIP: no usable CUDA device (cudaGetDeviceCount: %s, %d devices); the GPU suite "
        "did not run\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "cudaSuccess",
        status != cudaSuccess ? 0 : devices);
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
