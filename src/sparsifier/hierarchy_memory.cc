#include "sparsifier/hierarchy_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/call_header.h"
#include "comm/comm.h"
#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/device_staging.h"
#include "kernels/kernels.h"
#include "kernels/shared/half.h"
#include "sparsifier/node_hierarchy.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
namespace {

class HostHierarchyMemory final : public HierarchyMemory {
 public:
  explicit HostHierarchyMemory(NodeHierarchy& h) : h_(h) {}
  bool onDevice() const override { return false; }
  void setStream(void*) override {}
  void* nodeSum() override { return h_.node_sum.data(); }
  void* padded() override { return h_.padded.size() > 0 ? h_.padded.data() : nullptr; }
  scclResult_t copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
    return scclSuccess;
  }
  scclResult_t fillZero(void* dst, size_t bytes) override {
    if (bytes > 0) std::memset(dst, 0, bytes);
    return scclSuccess;
  }
  scclResult_t countNonFinite(const void* data, size_t count, scclDataType_t dtype,
                              uint64_t* found) override {
    uint64_t n = 0;
    for (size_t i = 0; i < count; ++i) {
      double x = 0;
      switch (dtype) {
        case scclFloat64: x = static_cast<const double*>(data)[i]; break;
        case scclFloat32: x = static_cast<const float*>(data)[i]; break;
        case scclFloat16: x = fp16ToFloat(static_cast<const uint16_t*>(data)[i]); break;
        case scclBfloat16: x = bf16ToFloat(static_cast<const uint16_t*>(data)[i]); break;
        default: break;
      }
      n += std::isfinite(x) ? 0 : 1;
    }
    *found = n;
    return scclSuccess;
  }
  scclResult_t fillNaN(void* x, size_t count, scclDataType_t dtype) override {
    fillWithNaN(x, count, dtype);
    return scclSuccess;
  }
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override {
    return sccl::divideByRanks(x, count, dtype, nranks);
  }
  scclResult_t synchronize() override { return scclSuccess; }
  Transport& intraTransport() override { return *h_.intra->transport; }
  scclResult_t innerCall(scclSparsifier* inner, void* chunk) override {
    return sparseAllreduce(inner, chunk, chunk, scclSum);
  }

 private:
  NodeHierarchy& h_;
};

}  // namespace

std::unique_ptr<HierarchyMemory> hostHierarchyMemory(NodeHierarchy& h) {
  return std::make_unique<HostHierarchyMemory>(h);
}

scclResult_t StagedHierarchyMemory::reserve(const NodeHierarchy& h, size_t count,
                                            scclDataType_t dtype) {
  const size_t element = dataTypeSize(dtype);
  const size_t L = static_cast<size_t>(h.local_ranks);
  SCCL_CHECK(
      staging_.buffer(DeviceStaging::kNodeSum, std::max<size_t>(h.chunk, 1) * element, &node_sum_));
  if (h.chunk * L != count)
    SCCL_CHECK(staging_.buffer(DeviceStaging::kNodePadded, h.chunk * L * element, &padded_));
  // The non-finite count reuses accumulate's (widening, counting) pass: float32 for the half
  // types and float32, float64 for float64; the count word after the copy, 256-byte aligned.
  scratch_elements_ = std::max<size_t>(h.chunk_length, 1);
  const size_t widened = scratch_elements_ * (dtype == scclFloat64 ? 8 : 4);
  const size_t word_at = (widened + 255) / 256 * 256;
  void* scratch = nullptr;
  SCCL_CHECK(staging_.buffer(DeviceStaging::kNodeScratch, word_at + sizeof(uint64_t), &scratch));
  scratch_ = scratch;
  count_ = reinterpret_cast<uint64_t*>(static_cast<char*>(scratch) + word_at);
  return scclSuccess;
}

scclResult_t StagedHierarchyMemory::copy(void* dst, const void* src, size_t bytes) {
  return staging_.copyOnDevice(dst, src, bytes);
}

scclResult_t StagedHierarchyMemory::fillZero(void* dst, size_t bytes) {
  return bytes == 0 ? scclSuccess : kernels_.fillZero(dst, bytes, stream_);
}

scclResult_t StagedHierarchyMemory::countNonFinite(const void* x, size_t count,
                                                   scclDataType_t dtype, uint64_t* found) {
  *found = 0;
  if (count == 0) return scclSuccess;
  if (count > scratch_elements_) {
    return fail(scclInternalError,
                "hierarchy node: non-finite check of %zu elements, scratch for %zu", count,
                scratch_elements_);
  }
  SCCL_CHECK(kernels_.fillZero(count_, sizeof(uint64_t), stream_));
  SCCL_CHECK(kernels_.accumulate(scratch_, nullptr,
                                 dtype == scclFloat64 ? scclFloat64 : scclFloat32, x, dtype, count,
                                 count_, stream_));
  // Asked for at every call: a staging's host buffer may move when something else grows it.
  void* host = nullptr;
  SCCL_CHECK(staging_.hostBuffer(DeviceStaging::kPlanHost, sizeof(uint64_t), &host));
  SCCL_CHECK(staging_.toHost(host, count_, sizeof(uint64_t)));
  *found = *static_cast<const uint64_t*>(host);
  return scclSuccess;
}

scclResult_t StagedHierarchyMemory::fillNaN(void* x, size_t count, scclDataType_t dtype) {
  return staging_.fillNaN(x, count, dtype);
}

scclResult_t StagedHierarchyMemory::divideByRanks(void* x, size_t count, scclDataType_t dtype,
                                                  int nranks) {
  return staging_.divideByRanks(x, count, dtype, nranks);
}

scclResult_t StagedHierarchyMemory::synchronize() {
  return staging_.synchronize();
}

scclResult_t StagedHierarchyMemory::innerCall(scclSparsifier* inner, void* chunk) {
  return inner_(inner, chunk, stream_);
}

}  // namespace sccl
