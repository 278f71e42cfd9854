// Where the vectors of a hierarchical call live (sparsifier/node_hierarchy.h): host buffers, or
// device buffers reached through the kernel interface and a device staging (the CUDA backend's,
// or the tests' fake device). The call's steps are written once, against this interface; what
// differs between the two is how a vector is copied, zeroed, checked for NaN/Inf and divided, which
// transport carries it inside the node, and how the inner sparsifier runs on the node's sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "sparsecoll/sparsecoll.h"

struct scclSparsifier;

namespace sccl {

class DeviceStaging;
class KernelBackend;
class Transport;
struct NodeHierarchy;

class HierarchyMemory {
 public:
  virtual ~HierarchyMemory() = default;
  virtual bool onDevice() const = 0;
  // The call about to run is ordered on `stream` (host memory: ignored).
  virtual void setStream(void* stream) = 0;
  // The node's sum of this rank's chunk (chunk elements), and the vector padded to L x chunk
  // elements (null when L divides the count: the call then reads sendbuf and writes recvbuf).
  virtual void* nodeSum() = 0;
  virtual void* padded() = 0;
  // dst = src, and dst = 0 (bytes), ordered on the call's stream.
  virtual scclResult_t copy(void* dst, const void* src, size_t bytes) = 0;
  virtual scclResult_t fillZero(void* dst, size_t bytes) = 0;
  // *found = the NaN/+-inf among `count` elements of x (on the device: waits for the stream).
  virtual scclResult_t countNonFinite(const void* x, size_t count, scclDataType_t dtype,
                                      uint64_t* found) = 0;
  // x = NaN of dtype, and x = x / nranks bitwise the host's division (core/divide_by_ranks.h).
  virtual scclResult_t fillNaN(void* x, size_t count, scclDataType_t dtype) = 0;
  virtual scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) = 0;
  // Before a transport reads what the stream wrote: a transport's operations run on a stream of
  // their own (pinned staging, NCCL through the public collectives' contract).
  virtual scclResult_t synchronize() = 0;
  // The transport inside the node that carries this memory.
  virtual Transport& intraTransport() = 0;
  // The inner sparsifier's call (the preset across nodes) on the node's sum, in place, scclSum.
  virtual scclResult_t innerCall(scclSparsifier* inner, void* chunk) = 0;
};

// Host buffers: the hierarchy's own (NodeHierarchy::node_sum, padded), the intra communicator's
// transport, the inner sparsifier on host buffers.
std::unique_ptr<HierarchyMemory> hostHierarchyMemory(NodeHierarchy& h);

// The inner sparsifier's call on device memory (the CUDA path: scclSparseAllreduce's device
// call; the tests: the fake device's).
using InnerDeviceCall =
    std::function<scclResult_t(scclSparsifier* inner, void* chunk, void* stream)>;

// Device buffers through a kernel backend and its staging: the node's vectors are the staging's
// buffers (reserved here, once), every copy and kernel on the call's stream, `intra` the
// transport inside the node that carries device memory. The non-finite count is one 8-byte
// read-back and one wait. Derived classes that own the backend set its stream in setStream.
class StagedHierarchyMemory : public HierarchyMemory {
 public:
  StagedHierarchyMemory(const KernelBackend& kernels, DeviceStaging& staging, Transport& intra,
                        InnerDeviceCall inner)
      : kernels_(kernels), staging_(staging), intra_(intra), inner_(std::move(inner)) {}
  // The buffers of the sparsifier's hierarchy (chunk and padding sizes, gradient dtype).
  scclResult_t reserve(const NodeHierarchy& h, size_t count, scclDataType_t dtype);

  bool onDevice() const override { return true; }
  void setStream(void* stream) override { stream_ = stream; }
  void* nodeSum() override { return node_sum_; }
  void* padded() override { return padded_; }
  scclResult_t copy(void* dst, const void* src, size_t bytes) override;
  scclResult_t fillZero(void* dst, size_t bytes) override;
  scclResult_t countNonFinite(const void* x, size_t count, scclDataType_t dtype,
                              uint64_t* found) override;
  scclResult_t fillNaN(void* x, size_t count, scclDataType_t dtype) override;
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override;
  scclResult_t synchronize() override;
  Transport& intraTransport() override { return intra_; }
  scclResult_t innerCall(scclSparsifier* inner, void* chunk) override;

 protected:
  void* stream() const { return stream_; }

 private:
  const KernelBackend& kernels_;
  DeviceStaging& staging_;
  Transport& intra_;
  InnerDeviceCall inner_;
  void* stream_ = nullptr;
  void* node_sum_ = nullptr;
  void* padded_ = nullptr;
  void* scratch_ = nullptr;    // the widened copy the non-finite count writes
  uint64_t* count_ = nullptr;  // its device word
  size_t scratch_elements_ = 0;
};

}  // namespace sccl
