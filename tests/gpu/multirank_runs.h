// Several ranks on ONE GPU: threads of this process, each with its own communicator over a host
// transport (the device buffers go through its pinned staging), its own non-blocking stream,
// all on device 0. One runner records, per call and rank, the output and residual bytes, the rank
// counts and the statistics, with host buffers or with device buffers, so that a test compares
// the two runs bit for bit. The host half calls no CUDA function.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "kernels/shared/half.h"
#include "sparsifier/sparsifier.h"
#include "cuda/device_sparsifier_state.h"
#include "device_buffer.h"
#include "gpu_gradients.h"
#include "gpu_ranks.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl_gpu_test {

enum class Buffers { Host, Device };

struct RankCallRecord {
  scclResult_t result = scclSuccess;
  std::string error;
  std::vector<unsigned char> output;    // count elements of the gradient type
  std::vector<unsigned char> residual;  // count elements of the residual type
  std::vector<uint64_t> counts;
  scclSparseStats_t stats{};
};

struct MultiRankRun {
  std::vector<std::vector<RankCallRecord>> calls;  // [call][rank]
  std::vector<std::string> failures;
};

// The gradient of rank r at call t in `dtype` (float32 or float16: the float value rounded).
inline std::vector<unsigned char> gradientBytes(const HeadHeavyGradient& gradient,
                                                scclDataType_t dtype, int r, uint64_t t) {
  const std::vector<float> values = gradient.vector(r, t);
  std::vector<unsigned char> bytes(values.size() * sccl::dataTypeSize(dtype));
  if (dtype == scclFloat16) {
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h = sccl::floatToFp16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  } else {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  }
  return bytes;
}

// Runs `body(rank, comm)` -> failure text on nranks threads, every rank on device 0 (when
// `device`), each with a communicator of `config`.
inline std::vector<std::string> onRanks(int nranks, const scclConfig_t& config, bool device,
                                        const std::function<std::string(int, scclComm_t)>& body) {
  return onRankThreads(
      nranks, config, [device](int) { return device ? 0 : -1; }, body);
}

inline scclConfig_t transportConfig(const char* transport) {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.transport = transport;
  config.timeoutMs = 60000;
  return config;
}

// One call's record: the output (read back from `out`), the residual, counts and statistics.
inline void recordCall(scclSparsifier_t sp, int nranks, const void* out, Buffers where,
                       size_t count, scclDataType_t dtype, RankCallRecord* record) {
  const size_t out_bytes = count * sccl::dataTypeSize(dtype);
  // A hierarchical sparsifier's residual is its inner one's, over this rank's chunk (none
  // without a chunk).
  const scclSparsifier* holder = sp->hierarchy != nullptr ? sp->hierarchy->inner : sp;
  const size_t residual_bytes =
      holder != nullptr ? holder->count * sccl::dataTypeSize(holder->acc_dtype) : 0;
  record->output.resize(out_bytes);
  record->residual.resize(residual_bytes);
  if (where == Buffers::Device) {
    check(cudaMemcpy(record->output.data(), out, out_bytes, cudaMemcpyDeviceToHost), "read output");
    if (holder != nullptr && holder->device != nullptr && residual_bytes > 0)
      check(cudaMemcpy(record->residual.data(), holder->device->residual, residual_bytes,
                       cudaMemcpyDeviceToHost),
            "read residual");
  } else {
    std::memcpy(record->output.data(), out, out_bytes);
    if (residual_bytes > 0)
      std::memcpy(record->residual.data(), holder->residual.data(), residual_bytes);
  }
  record->counts.resize(size_t(nranks));
  scclSparsifierGetRankCounts(sp, record->counts.data(), nranks);
  record->stats = scclSparseStats_t{};
  record->stats.size = sizeof(record->stats);
  scclSparsifierGetStats(sp, &record->stats);
}

// `iterations` calls of scclSparseAllreduce of `config` on nranks ranks over `transport`, with
// host or device buffers. A call that fails is recorded (result, error text) and ends the rank.
inline MultiRankRun runMultiRank(int nranks, const char* transport, size_t count,
                                 scclDataType_t dtype, const scclSparseConfig_t& config,
                                 int iterations, const HeadHeavyGradient& gradient, Buffers where,
                                 scclRedOp_t op = scclSum) {
  MultiRankRun run;
  run.calls.assign(size_t(iterations), std::vector<RankCallRecord>(size_t(nranks)));
  const bool device = where == Buffers::Device;
  const size_t bytes = count * sccl::dataTypeSize(dtype);
  run.failures = onRanks(
      nranks, transportConfig(transport), device, [&](int r, scclComm_t comm) -> std::string {
        scclSparsifier_t raw = nullptr;
        if (scclSparsifierCreate(&raw, comm, count, dtype, &config) != scclSuccess)
          return std::string("scclSparsifierCreate: ") + scclGetLastError(comm);
        Sparsifier sp{raw, &scclSparsifierDestroy};
        std::vector<unsigned char> host_out(bytes);
        std::unique_ptr<Stream> stream;
        std::unique_ptr<DeviceBuffer<unsigned char>> d_grad, d_out;
        if (device) {
          stream = std::make_unique<Stream>();
          d_grad = std::make_unique<DeviceBuffer<unsigned char>>(bytes);
          d_out = std::make_unique<DeviceBuffer<unsigned char>>(bytes);
        }
        for (int t = 0; t < iterations; ++t) {
          std::vector<unsigned char> grad = gradientBytes(gradient, dtype, r, uint64_t(t));
          RankCallRecord& record = run.calls[size_t(t)][size_t(r)];
          if (device) {
            upload(d_grad->get(), grad.data(), bytes, "gradient");
            record.result = scclSparseAllreduce(d_grad->get(), d_out->get(), count, dtype, op,
                                                sp.get(), comm, stream->get());
            check(cudaStreamSynchronize(stream->get()), "cudaStreamSynchronize");
          } else {
            record.result = scclSparseAllreduce(grad.data(), host_out.data(), count, dtype, op,
                                                sp.get(), comm, nullptr);
          }
          if (record.result != scclSuccess) {
            record.error = scclGetLastError(comm);
            return "";  // the caller compares results and texts
          }
          recordCall(sp.get(), nranks,
                     device ? static_cast<const void*>(d_out->get())
                            : static_cast<const void*>(host_out.data()),
                     where, count, dtype, &record);
        }
        return "";
      });
  return run;
}

}  // namespace sccl_gpu_test
