// scclPartitionedSelect: the selection primitive, validated here and run by the kernel backend
// that owns the buffer's memory.
#include <cmath>

#include "api/api_guard.h"
#include "api/api_validate.h"
#include "kernels/kernels.h"
#include "sccl_build_config.h"
#if SCCL_BUILD_CUDA_KERNELS
#include "core/memory_space.h"
#include "kernels/device_select.h"
#endif

extern "C" {

SCCL_API scclResult_t scclPartitionedSelect(const void* buf, size_t count, scclDataType_t dtype,
                                            size_t begin, size_t end, double threshold,
                                            int64_t* idxOut, void* valOut, size_t capacity,
                                            size_t* nselected, void* stream) {
  return sccl::guardedCall(__func__, nullptr, [&]() -> scclResult_t {
    size_t bytes = 0;
    SCCL_CHECK(sccl::requireByteSize(count, dtype, &bytes));
    SCCL_REQUIRE_ARG(sccl::isFloatingType(dtype),
                     "selection needs a floating-point type (float32, float64, float16, bfloat16), "
                     "not %s",
                     sccl::dataTypeName(dtype));
    SCCL_REQUIRE_ARG(begin <= end, "begin %zu > end %zu", begin, end);
    SCCL_REQUIRE_ARG(end <= count, "end %zu > count %zu", end, count);
    SCCL_REQUIRE_ARG(!std::isnan(threshold), "threshold is NaN");
    SCCL_REQUIRE_ARG(threshold >= 0, "threshold %g is negative", threshold);
    SCCL_REQUIRE_ARG(capacity > 0,
                     "capacity is 0 (size idxOut for the range, or retry with "
                     "the count a previous call returned)");
    SCCL_REQUIRE_ARG(idxOut != nullptr, "idxOut is NULL");
    SCCL_REQUIRE_ARG(nselected != nullptr, "nselected is NULL");
    size_t capacity_bytes = 0;
    SCCL_REQUIRE_ARG(sccl::byteSize(capacity, scclInt64, &capacity_bytes),
                     "capacity %zu overflows the address space", capacity);
#if SCCL_BUILD_CUDA_KERNELS
    // Device buffers run on the CUDA backend, ordered on `stream` (kernels/device_select.h, implemented by cuda/device_select.cc).
    if (bytes > 0 && buf != nullptr && sccl::memorySpaceOf(buf) == sccl::MemorySpace::Device) {
      SCCL_REQUIRE_ARG(sccl::memorySpaceOf(idxOut) == sccl::MemorySpace::Device,
                       "buf is GPU memory but idxOut is not");
      SCCL_REQUIRE_ARG(
          valOut == nullptr || sccl::memorySpaceOf(valOut) == sccl::MemorySpace::Device,
          "buf is GPU memory but valOut is not");
      return sccl::deviceSelectAbove(buf, dtype, begin, end, threshold, idxOut, valOut, capacity,
                                     nselected, stream);
    }
#endif
    // An empty range reads nothing, so buf may then be NULL (docs/api.md).
    SCCL_CHECK(sccl::requireHostBuffer(buf, begin == end ? 0 : bytes, "buf", stream));
    SCCL_CHECK(sccl::requireHostBuffer(idxOut, capacity_bytes, "idxOut", stream));
    if (valOut != nullptr) SCCL_CHECK(sccl::requireHostBuffer(valOut, 1, "valOut", stream));
    if (begin == end) {
      *nselected = 0;
      return scclSuccess;
    }
    return sccl::cpuKernels().selectAbove(buf, dtype, begin, end, threshold, idxOut, valOut,
                                          capacity, nselected, nullptr);
  });
}

}  // extern "C"
