// The pinned staging transport (transports/staging/pinned_staging_transport.h) on machines
// without a GPU: a host-only copier plays the device runtime. Its "device" memory is a set of
// registered allocations, and a guard between the staging and the in-process transport fails any
// operation handed a "device" pointer, so these tests show that the host transport only ever sees
// host memory, that every collective's result lands in device memory exactly as the host
// transport's does (in place or not, mixed host and device buffers, 1-4 ranks), that the pinned
// buffers are allocated once and grow only to an operation's bytes, and that a failed copy breaks
// the transport like any transport failure. The same class over the CUDA runtime is what the GPU
// suite's [multirank_device] tests run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "core/error.h"
#include "support/local_ranks.h"
#include "transports/staging/pinned_staging_transport.h"

using namespace sccl_test;

namespace {

// Allocations that count as device memory, shared by every rank of a test.
class FakeDeviceMemory {
 public:
  void* allocate(size_t bytes) {
    auto block = std::make_unique<unsigned char[]>(bytes == 0 ? 1 : bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.push_back({block.get(), bytes == 0 ? 1 : bytes});
    owned_.push_back(std::move(block));
    return blocks_.back().begin;
  }
  bool contains(const void* ptr) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* p = static_cast<const unsigned char*>(ptr);
    return std::any_of(blocks_.begin(), blocks_.end(),
                       [&](const Block& b) { return p >= b.begin && p < b.begin + b.bytes; });
  }

 private:
  struct Block {
    unsigned char* begin;
    size_t bytes;
  };
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::vector<std::unique_ptr<unsigned char[]>> owned_;
};

class FakeCopier final : public sccl::DeviceCopier {
 public:
  explicit FakeCopier(const FakeDeviceMemory& memory) : memory_(memory) {}
  const char* name() const override { return "fake"; }
  bool isDevice(const void* ptr) const override { return ptr != nullptr && memory_.contains(ptr); }
  scclResult_t allocateHost(size_t bytes, void** out) override {
    ++allocations;
    allocated_bytes += bytes;
    *out = ::operator new(bytes, std::nothrow);
    return *out != nullptr ? scclSuccess : sccl::fail(scclSystemError, "fake copier: no memory");
  }
  void freeHost(void* ptr) override { ::operator delete(ptr); }
  scclResult_t toHost(void* host, const void* device, size_t bytes) override {
    if (memory_.contains(host) || !memory_.contains(device))
      return sccl::fail(scclInternalError, "fake copier: toHost with the spaces swapped");
    std::memcpy(host, device, bytes);
    return scclSuccess;
  }
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override {
    if (fail_copies_to_device) return sccl::fail(scclUnhandledCudaError, "fake copier: injected");
    if (memory_.contains(host) || !memory_.contains(device))
      return sccl::fail(scclInternalError, "fake copier: toDevice with the spaces swapped");
    std::memcpy(device, host, bytes);
    return scclSuccess;
  }
  int allocations = 0;
  size_t allocated_bytes = 0;
  bool fail_copies_to_device = false;

 private:
  const FakeDeviceMemory& memory_;
};

// Between the staging and the host transport: an operation handed a "device" pointer fails.
class HostOnlyGuard final : public sccl::Transport {
 public:
  HostOnlyGuard(std::unique_ptr<sccl::Transport> inner, const FakeDeviceMemory& memory)
      : inner_(std::move(inner)), memory_(memory) {}
  const char* name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int nranks() const override { return inner_->nranks(); }
  sccl::TransportCapabilities capabilities() const override { return inner_->capabilities(); }
  scclResult_t allGather(const void* s, void* r, size_t b) override {
    return hostOnly(s, r) ? inner_->allGather(s, r, b) : refused();
  }
  scclResult_t allGatherV(const void* s, size_t sb, void* r, const size_t* rb,
                          const size_t* ro) override {
    return hostOnly(s, r) ? inner_->allGatherV(s, sb, r, rb, ro) : refused();
  }
  scclResult_t allReduce(const void* s, void* r, size_t c, scclDataType_t d,
                         sccl::ReduceOp op) override {
    return hostOnly(s, r) ? inner_->allReduce(s, r, c, d, op) : refused();
  }
  scclResult_t broadcast(void* b, size_t n, int root) override {
    return hostOnly(b, b) ? inner_->broadcast(b, n, root) : refused();
  }
  scclResult_t send(const void* b, size_t n, int p, int t) override {
    return hostOnly(b, b) ? inner_->send(b, n, p, t) : refused();
  }
  scclResult_t recv(void* b, size_t n, int p, int t) override {
    return hostOnly(b, b) ? inner_->recv(b, n, p, t) : refused();
  }
  scclResult_t barrier() override { return inner_->barrier(); }
  void abort() override { inner_->abort(); }

 private:
  bool hostOnly(const void* a, const void* b) const {
    return !memory_.contains(a) && !memory_.contains(b);
  }
  static scclResult_t refused() {
    return sccl::fail(scclInternalError, "the host transport was handed device memory");
  }
  std::unique_ptr<sccl::Transport> inner_;
  const FakeDeviceMemory& memory_;
};

struct StagedRank {
  FakeCopier* copier = nullptr;
  std::unique_ptr<sccl::PinnedStagingTransport> transport;
};

StagedRank stageOver(scclComm_t comm, const FakeDeviceMemory& memory) {
  comm->transport = std::make_unique<HostOnlyGuard>(std::move(comm->transport), memory);
  auto copier = std::make_unique<FakeCopier>(memory);
  StagedRank staged;
  staged.copier = copier.get();
  staged.transport =
      std::make_unique<sccl::PinnedStagingTransport>(&comm->transport, std::move(copier));
  return staged;
}

template <typename T>
T* deviceArray(FakeDeviceMemory& memory, const std::vector<T>& values) {
  T* data = static_cast<T*>(memory.allocate(values.size() * sizeof(T)));
  std::memcpy(data, values.data(), values.size() * sizeof(T));
  return data;
}

template <typename T>
std::vector<T> read(const T* data, size_t n) {
  return std::vector<T>(data, data + n);
}

}  // namespace

TEST_CASE("pinned staging carries device buffers through every collective of a host transport",
          "[staging_transport]") {
  for (int nranks : {1, 2, 3, 4}) {
    INFO(nranks << " ranks");
    FakeDeviceMemory memory;
    const size_t count = 1000;
    auto failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
      StagedRank staged = stageOver(comm, memory);
      sccl::Transport& t = *staged.transport;
      log.check(t.capabilities().device_memory, "carries device memory");
      const auto n = size_t(nranks);
      std::vector<int32_t> mine(count);
      for (size_t i = 0; i < count; ++i) mine[i] = testValue(5, rank, i);

      // all-gather: device to device, host to device, device to host, in place.
      std::vector<int32_t> want(n * count);
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i) want[size_t(r) * count + i] = testValue(5, r, i);
      int32_t* d_send = deviceArray(memory, mine);
      int32_t* d_recv = deviceArray(memory, std::vector<int32_t>(n * count, -1));
      log.checkResult(t.allGather(d_send, d_recv, count * 4), scclSuccess, "allGather d->d");
      log.check(read(d_recv, n * count) == want, "allGather d->d result");
      int32_t* d_recv2 = deviceArray(memory, std::vector<int32_t>(n * count, -1));
      log.checkResult(t.allGather(mine.data(), d_recv2, count * 4), scclSuccess, "allGather h->d");
      log.check(read(d_recv2, n * count) == want, "allGather h->d result");
      std::vector<int32_t> h_recv(n * count, -1);
      log.checkResult(t.allGather(d_send, h_recv.data(), count * 4), scclSuccess, "allGather d->h");
      log.check(h_recv == want, "allGather d->h result");
      std::vector<int32_t> in_place(n * count, -1);
      std::copy(mine.begin(), mine.end(), in_place.begin() + long(size_t(rank) * count));
      int32_t* d_in_place = deviceArray(memory, in_place);
      log.checkResult(t.allGather(d_in_place + size_t(rank) * count, d_in_place, count * 4),
                      scclSuccess, "allGather in place");
      log.check(read(d_in_place, n * count) == want, "allGather in place result");

      // all-reduce, sum and max, out of place and in place, float32 exactly summable values.
      std::vector<float> values(count), sum(count, 0.0f), max(count, -1e30f);
      for (size_t i = 0; i < count; ++i) values[i] = float(testValue(6, rank, i));
      for (int r = 0; r < nranks; ++r)
        for (size_t i = 0; i < count; ++i) {
          sum[i] += float(testValue(6, r, i));
          max[i] = std::max(max[i], float(testValue(6, r, i)));
        }
      float* d_values = deviceArray(memory, values);
      float* d_sum = deviceArray(memory, std::vector<float>(count, -7.0f));
      log.checkResult(t.allReduce(d_values, d_sum, count, scclFloat32, sccl::ReduceOp::Sum),
                      scclSuccess, "allReduce sum");
      log.check(read(d_sum, count) == sum, "allReduce sum result");
      log.checkResult(t.allReduce(d_values, d_values, count, scclFloat32, sccl::ReduceOp::Max),
                      scclSuccess, "allReduce max in place");
      log.check(read(d_values, count) == max, "allReduce max in place result");

      // all-gather-v into a device buffer with gaps between the segments: the gaps keep their
      // bytes (the caller's), every segment arrives.
      std::vector<size_t> seg_bytes(n), offsets(n);
      size_t extent = 0;
      for (size_t r = 0; r < n; ++r) {
        seg_bytes[r] = (r + 1) * 8;
        offsets[(r + 1) % n] = extent + 4;  // rank order differs from offset order
        extent += seg_bytes[(r + 1) % n] + 4;
      }
      extent = 0;
      for (size_t r = 0; r < n; ++r) extent = std::max(extent, offsets[r] + seg_bytes[r]);
      std::vector<unsigned char> v_want(extent, 0xee), v_send(seg_bytes[size_t(rank)]);
      for (size_t r = 0; r < n; ++r)
        for (size_t b = 0; b < seg_bytes[r]; ++b) v_want[offsets[r] + b] = (unsigned char)(r * 16 + b);
      for (size_t b = 0; b < v_send.size(); ++b) v_send[b] = (unsigned char)(size_t(rank) * 16 + b);
      unsigned char* d_vsend = deviceArray(memory, v_send);
      unsigned char* d_vrecv = deviceArray(memory, std::vector<unsigned char>(extent, 0xee));
      log.checkResult(t.allGatherV(d_vsend, v_send.size(), d_vrecv, seg_bytes.data(), offsets.data()),
                      scclSuccess, "allGatherV");
      log.check(read(d_vrecv, extent) == v_want, "allGatherV result and untouched gaps");

      // broadcast from the last rank, and a point-to-point ring.
      std::vector<int32_t> root_data(count);
      for (size_t i = 0; i < count; ++i) root_data[i] = testValue(7, nranks - 1, i);
      int32_t* d_bcast = deviceArray(memory, rank == nranks - 1 ? root_data
                                                                 : std::vector<int32_t>(count, 0));
      log.checkResult(t.broadcast(d_bcast, count * 4, nranks - 1), scclSuccess, "broadcast");
      log.check(read(d_bcast, count) == root_data, "broadcast result");
      if (nranks > 1) {
        const int next = (rank + 1) % nranks, previous = (rank + nranks - 1) % nranks;
        int32_t* d_from = deviceArray(memory, std::vector<int32_t>(count, 0));
        log.checkResult(t.send(d_send, count * 4, next, 3), scclSuccess, "send");
        log.checkResult(t.recv(d_from, count * 4, previous, 3), scclSuccess, "recv");
        std::vector<int32_t> want_from(count);
        for (size_t i = 0; i < count; ++i) want_from[i] = testValue(5, previous, i);
        log.check(read(d_from, count) == want_from, "send/recv result");
      }
      log.checkResult(t.barrier(), scclSuccess, "barrier");

      // Pinned memory: two buffers at most, sized by the largest operation (the all-gather's
      // n x count x 4 received bytes), allocated again only when an operation needs more.
      const int allocations = staged.copier->allocations;
      log.check(staged.transport->stagingBytes() <= (n + 1) * count * 4,
                "pinned bytes " + std::to_string(staged.transport->stagingBytes()));
      log.checkResult(t.allGather(d_send, d_recv, count * 4), scclSuccess, "allGather again");
      log.checkResult(t.allReduce(d_sum, d_sum, count, scclFloat32, sccl::ReduceOp::Sum),
                      scclSuccess, "allReduce again");
      log.check(staged.copier->allocations == allocations,
                "steady-state operations allocated pinned memory");
    });
    REQUIRE_NO_RANK_FAILURES(failures);
  }
}

TEST_CASE("pinned staging passes host buffers through and checks arguments first",
          "[staging_transport]") {
  FakeDeviceMemory memory;
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    StagedRank staged = stageOver(comm, memory);
    sccl::Transport& t = *staged.transport;
    std::vector<float> one{float(rank + 1)}, sum(1);
    log.checkResult(t.allReduce(one.data(), sum.data(), 1, scclFloat32, sccl::ReduceOp::Sum),
                    scclSuccess, "host allReduce");
    log.check(sum[0] == 3.0f, "host allReduce result");
    log.check(staged.copier->allocations == 0, "host buffers allocated pinned memory");
    float* d = deviceArray(memory, one);
    log.checkResult(t.allReduce(d, d, 1, scclDataType_t(99), sccl::ReduceOp::Sum),
                    scclInvalidArgument, "unknown dtype");
    log.checkResult(t.broadcast(d, 4, 5), scclInvalidArgument, "root out of range");
    log.checkResult(t.allGather(d, d, SIZE_MAX / 2 + 1), scclInvalidArgument, "overflowing size");
    log.check(staged.copier->allocations == 0, "a refused argument allocated pinned memory");
    log.checkResult(t.allReduce(d, d, 1, scclFloat32, sccl::ReduceOp::Sum), scclSuccess,
                    "a valid call after the refusals");
    log.check(*d == 3.0f, "its result");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("a failed staging copy breaks the staging transport as a transport failure does",
          "[staging_transport]") {
  FakeDeviceMemory memory;
  auto failures = runLocalRanks(2, [&](int rank, scclComm_t comm, RankLog& log) {
    StagedRank staged = stageOver(comm, memory);
    sccl::Transport& t = *staged.transport;
    float* d = deviceArray(memory, std::vector<float>{float(rank)});
    staged.copier->fail_copies_to_device = true;
    log.checkResult(t.allReduce(d, d, 1, scclFloat32, sccl::ReduceOp::Sum),
                    scclUnhandledCudaError, "the failed copy back");
    staged.copier->fail_copies_to_device = false;
    log.checkResult(t.barrier(), scclUnhandledCudaError, "an operation after the failure");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
