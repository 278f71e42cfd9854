// Sparsifiers and the sparse all-reduce.
#include <cstddef>
#include <cstring>

#include "api/api_guard.h"
#include "api/api_validate.h"
#include "algorithms/algorithm.h"
#include "comm/comm.h"
#include "core/memory_space.h"
#include "sparsifier/sparsifier.h"
#include "sparsifier/sparsifier_state.h"
#include "tuning/auto_sparsifier.h"

namespace sccl {
scclResult_t sparseConfigFromJson(const char* text, scclSparseConfig_t* config);
}

namespace {

scclResult_t requireLiveSparsifier(const scclSparsifier* sp) {
  SCCL_REQUIRE_ARG(sp != nullptr, "sparsifier is NULL");
  SCCL_REQUIRE_ARG(sccl::isLiveHandle(sp, scclSparsifier::kMagic),
                   "%p is not a live sparsifier (destroyed, or never created)",
                   static_cast<const void*>(sp));
  return scclSuccess;
}

// The communicator a sparsifier call reports its errors on (only if both handles are live).
scclComm* commOf(const scclSparsifier* sp) {
  return (sp != nullptr && sccl::isLiveHandle(sp, scclSparsifier::kMagic) &&
          sccl::isLiveHandle(sp->comm, scclComm::kMagic))
             ? sp->comm
             : nullptr;
}

}  // namespace

extern "C" {

SCCL_API scclResult_t scclSparseConfigFromJson(const char* json, scclSparseConfig_t* config) {
  return sccl::guardedCall(__func__, nullptr,
                           [&] { return sccl::sparseConfigFromJson(json, config); });
}

SCCL_API scclResult_t scclSparsifierCreate(scclSparsifier_t* sparsifier, scclComm_t comm,
                                           size_t count, scclDataType_t dtype,
                                           const scclSparseConfig_t* config) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_REQUIRE_ARG(sparsifier != nullptr, "sparsifier output pointer is NULL");
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    SCCL_CHECK(sccl::requireDataType(dtype));
    // The residual (float32, or float64 for float64 gradients) is the largest buffer it holds.
    size_t residual_bytes = 0;
    SCCL_REQUIRE_ARG(
        sccl::byteSize(count, dtype == scclFloat64 ? scclFloat64 : scclFloat32, &residual_bytes),
        "sparsifier count %zu overflows the address space", count);
    SCCL_CHECK(sccl::requireBufferBytes(residual_bytes, "the sparsifier's residual"));
    SCCL_REQUIRE_ARG(config != nullptr,
                     "sparse config is NULL (use SCCL_SPARSE_CONFIG_INITIALIZER)");
    scclSparsifier* created = nullptr;
    SCCL_CHECK(sccl::createSparsifier(comm, count, dtype, *config, &created));
    *sparsifier = created;
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclSparsifierGetAlgorithm(scclSparsifier_t sparsifier, const char** name) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(name != nullptr, "algorithm name output pointer is NULL");
    // The registry's string: it stays valid when "auto" switches presets (and after destroy).
    *name = sccl::findPreset(sparsifier->config.algorithm.c_str())->name;
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclSparsifierDestroy(scclSparsifier_t sparsifier) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    sccl::sparsifierDestroy(sparsifier);
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclSparsifierReset(scclSparsifier_t sparsifier) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    return sccl::sparsifierReset(sparsifier);
  });
}

SCCL_API scclResult_t scclSparseAllreduce(const void* sendbuf, void* recvbuf, size_t count,
                                          scclDataType_t dtype, scclRedOp_t op,
                                          scclSparsifier_t sparsifier, scclComm_t comm,
                                          void* stream) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(sparsifier->comm == comm, "sparsifier was created on communicator %p, not %p",
                     static_cast<void*>(sparsifier->comm), static_cast<void*>(comm));
    SCCL_CHECK(sccl::requireDataType(dtype));
    SCCL_REQUIRE_ARG(count == sparsifier->count, "count %zu differs from the sparsifier's %zu",
                     count, sparsifier->count);
    SCCL_REQUIRE_ARG(dtype == sparsifier->dtype, "dtype %s differs from the sparsifier's %s",
                     sccl::dataTypeName(dtype), sccl::dataTypeName(sparsifier->dtype));
    SCCL_CHECK(sccl::requireSparseRedOp(op));
    size_t bytes = count * sccl::dataTypeSize(dtype);
    // In place is sendbuf == recvbuf; a partial overlap would read what the call already wrote.
    SCCL_CHECK(sccl::requireNoPartialOverlap(sendbuf, bytes, recvbuf, bytes, 0));
    // GPU buffers run on the device path (sparsifier/sparsifier_device.h).
    bool on_device = false;
    SCCL_CHECK(sccl::placeBuffers(sendbuf, bytes, recvbuf, bytes, stream, &on_device));
    return sccl::runSparseAllreduce(sparsifier, sendbuf, recvbuf, op, on_device, stream);
  });
}

SCCL_API scclResult_t scclSparsifierGetStats(scclSparsifier_t sparsifier,
                                             scclSparseStats_t* stats) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(stats != nullptr, "stats is NULL");
    // 0.1.0's struct ends at meanAbsDensityError.
    SCCL_CHECK(
        sccl::requireStatsSize("scclSparseStats_t", stats->size,
                               offsetof(scclSparseStats_t, meanAbsDensityError) + sizeof(double)));
    return sccl::sparsifierStats(sparsifier, stats);
  });
}

SCCL_API scclResult_t scclSparsifierGetRankCounts(scclSparsifier_t sparsifier, uint64_t* counts,
                                                  int nranks) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(counts != nullptr, "counts is NULL");
    SCCL_REQUIRE_ARG(nranks == sparsifier->comm->nranks,
                     "nranks %d differs from the communicator's %d", nranks,
                     sparsifier->comm->nranks);
    if (sparsifier->device != nullptr) SCCL_CHECK(sccl::deviceRefreshStats(*sparsifier));
    std::copy(sparsifier->reduction_memory.rank_counts.begin(),
              sparsifier->reduction_memory.rank_counts.end(), counts);
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclSparsifierMaskSent(scclSparsifier_t sparsifier, void* buffer,
                                             size_t count, scclDataType_t dtype) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(count == sparsifier->count, "count %zu differs from the sparsifier's %zu",
                     count, sparsifier->count);
    SCCL_REQUIRE_ARG(buffer != nullptr || count == 0, "buffer is NULL");
    SCCL_REQUIRE_ARG(dtype == scclFloat32 || dtype == scclFloat16 || dtype == scclBfloat16 ||
                         dtype == scclFloat64,
                     "dtype %d: the buffer must be float32, float16, bfloat16 or float64",
                     int(dtype));
    if (sparsifier->hierarchy != nullptr) {
      return sccl::fail(scclInvalidUsage,
                        "scclSparsifierMaskSent: a \"hierarchy\": \"node\" sparsifier knows only "
                        "its own chunk's index list; mask with the output (where it is non-zero)");
    }
    if (sparsifier->device != nullptr ||
        (buffer != nullptr && sccl::memorySpaceOf(buffer) == sccl::MemorySpace::Device)) {
      return sccl::fail(scclInvalidUsage,
                        "scclSparsifierMaskSent works on host memory after calls on host "
                        "buffers; on the GPU mask with the output (where it is non-zero)");
    }
    if (count == 0) return scclSuccess;
    return sccl::sparsifierMaskSent(*sparsifier, buffer, dtype);
  });
}

SCCL_API scclResult_t scclSparsifierSetDensity(scclSparsifier_t sparsifier, double density) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    return sccl::sparsifierSetDensity(sparsifier, density);
  });
}

SCCL_API scclResult_t scclSparsifierGetAsyncError(scclSparsifier_t sparsifier,
                                                  scclResult_t* asyncError) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(asyncError != nullptr, "asyncError pointer is NULL");
    // A hierarchical sparsifier's device calls across nodes are its inner preset's.
    const scclSparsifier* calls = sparsifier;
    if (sparsifier->hierarchy != nullptr && sparsifier->hierarchy->inner != nullptr)
      calls = sparsifier->hierarchy->inner;
    SCCL_CHECK(sccl::deviceAsyncError(*calls, asyncError));
    if (*asyncError != scclSuccess) {  // the query succeeds; the fault's text is the comm's error
      std::lock_guard<std::mutex> lock(sparsifier->comm->last_error_mutex);
      sparsifier->comm->last_error = sccl::threadLastError();
    }
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclSparsifierGetStateSize(scclSparsifier_t sparsifier, size_t* bytes) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(bytes != nullptr, "state size output pointer is NULL");
    return sccl::sparsifierStateSize(*sparsifier, bytes);
  });
}

SCCL_API scclResult_t scclSparsifierExportState(scclSparsifier_t sparsifier, void* buffer,
                                                size_t bytes, size_t* written) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_REQUIRE_ARG(buffer != nullptr, "checkpoint buffer is NULL");
    return sccl::sparsifierExportState(*sparsifier, buffer, bytes, written);
  });
}

SCCL_API scclResult_t scclSparsifierImportState(scclSparsifier_t sparsifier, const void* buffer,
                                                size_t bytes) {
  return sccl::guardedCall(__func__, commOf(sparsifier), [&] {
    SCCL_CHECK(requireLiveSparsifier(sparsifier));
    SCCL_CHECK(sccl::requireHealthyComm(sparsifier->comm));
    SCCL_REQUIRE_ARG(buffer != nullptr || bytes == 0, "checkpoint buffer is NULL");
    // An empty buffer is a blob too short for its header: refused by every rank's checks.
    static const unsigned char kNothing = 0;
    return sccl::sparsifierImportState(*sparsifier, buffer != nullptr ? buffer : &kNothing, bytes);
  });
}

}  // extern "C"
