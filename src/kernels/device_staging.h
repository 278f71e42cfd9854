// What a reduction needs, besides the kernels, when the accumulator lives in GPU memory: device
// buffers for the index, value and count arrays its kernels read and write, copies between those
// and the host arrays the exchange and the checks use, a wait before a collective, the NaN output
// of the non-finite policy, and scclAvg's division. The gather and sketch reductions are written
// once: on host buffers SparseCall::device is null and their kernels read the host arrays
// themselves (the host reductions exactly as before); on device buffers
// cuda/device_staging_cuda.cc provides this (algorithms/staged_call.h runs such a call).
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class DeviceStaging {
 public:
  enum Buffer {
    kLocalIndices,      // gather: this rank's selection
    kGlobalIndices,     // gather: the k' indices of every rank
    kValues,            // gather: values at those indices
    kCounts,            // density correction: bin counts
    kBlockNorms,        // sketch: squared norm of every block
    kLocalBitmap,       // sketch: this rank's marked blocks
    kGlobalBitmap,      // sketch: the union
    kTable,             // sketch: the count sketch
    kDecoded,           // sketch, "decode_error": the decoded sum / n
    kEstimatorIndices,  // dgc: sampled or selected indices
    kEstimatorValues,   // dgc: their values
    kEstimatorCounts,   // sidco count check: bin counts
    kRecord,            // resident gather: every rank's range (2 words each), then this rank's
                        // record (header + bins)
    kRecords,           // resident gather: every rank's record (two-step: the summed bins)
    kHeaders,           // resident gather, two-step: every rank's header
    kPlan,              // resident gather: the plan (kernels/shared/gather_plan.h)
    kGatheredIndices,   // resident gather: the padded index all-gather
    kReduceScratch,     // collectives on the stream: the rank-order all-reduce's gathered inputs
    kSyncFreeSlot,      // resident sync_free: this rank's slot
    kSyncFreeSlots,     // resident sync_free: every rank's slot
    kSyncFreeValues,    // resident sync_free: the n * capacity values
    kSyncFreeWords,     // resident sync_free: the call's words (kernels/shared/sync_free_call.h)
    kNodeSum,           // hierarchy node: the node's sum of this rank's chunk
    kNodePadded,        // hierarchy node: the vector padded to L x chunk elements
    kNodeScratch,       // hierarchy node: the non-finite check's widened copy and its count
    kCandidateIndices,  // resident gather on host memory: the fused pass's candidates
    kCandidateValues,   // resident gather on host memory: their values
    kIndexFault,        // resident gather on host memory: the call's index-check word
    kBufferCount
  };
  // Host memory the device reads or writes without the host in between (page-locked on CUDA).
  enum HostBuffer {
    kPlanHost,     // resident gather: the plan read back
    kUploadHost,   // resident gather: the ranges and record header sent up
    kSendHost,     // staged collectives: what this rank sends
    kReceiveHost,  // staged collectives: what it receives
    kHostBufferCount
  };

  virtual ~DeviceStaging() = default;
  // What the staging did since it was created: the copies and waits of the calls it served
  // (launches are counted by backends that can; the CUDA backend leaves them to a counting tool).
  struct Counters {
    uint64_t launches = 0;
    uint64_t to_host = 0, to_host_bytes = 0;  // device-to-host copies (read-backs included)
    uint64_t to_device = 0, to_device_bytes = 0;
    uint64_t waits = 0;  // host waits for the stream
  };
  virtual Counters counters() const { return {}; }
  // Device buffer `which`, at least `bytes` long (grows only; the contents do not survive growth).
  virtual scclResult_t buffer(Buffer which, size_t bytes, void** out) = 0;
  // Host buffer `which`, at least `bytes` long (grows only; contents do not survive growth).
  virtual scclResult_t hostBuffer(HostBuffer which, size_t bytes, void** out) = 0;
  // Copies on the call's stream; toHost waits for it (the host reads the result next).
  virtual scclResult_t toHost(void* host, const void* device, size_t bytes) = 0;
  // The same copy, only enqueued: `host` (a hostBuffer) holds the bytes after synchronize().
  virtual scclResult_t readBack(void* host, const void* device, size_t bytes) = 0;
  virtual scclResult_t toDevice(void* device, const void* host, size_t bytes) = 0;
  // device-to-device copy of `bytes`, enqueued on the call's stream.
  virtual scclResult_t copyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // Waits for the work enqueued on the call's stream, before a transport (whose operations run
  // on their own stream) reads what the kernels wrote.
  virtual scclResult_t synchronize() = 0;
  // recvbuf = NaN of dtype (the host reduction's pattern).
  virtual scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) = 0;
  // x = x / nranks, bitwise the host's divideByRanks (core/divide_by_ranks.h).
  virtual scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) = 0;
};

// The array the kernels use for the host array `host` (bytes long): `host` itself when staging
// is null (host buffers); else the staging's device buffer `which`, filled from `host` when
// `upload`.
inline scclResult_t stagedArray(DeviceStaging* staging, DeviceStaging::Buffer which, void* host,
                                size_t bytes, bool upload, void** out) {
  if (staging == nullptr) {
    *out = host;
    return scclSuccess;
  }
  scclResult_t result = staging->buffer(which, bytes > 0 ? bytes : 1, out);
  if (result == scclSuccess && upload) result = staging->toDevice(*out, host, bytes);
  return result;
}

// After the kernels wrote `array` (from stagedArray): its bytes into `host`, unless they are the
// same memory (staging null).
inline scclResult_t unstageArray(DeviceStaging* staging, void* host, const void* array,
                                 size_t bytes) {
  return staging == nullptr ? scclSuccess : staging->toHost(host, array, bytes);
}

}  // namespace sccl
