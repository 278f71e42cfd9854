// FakeDevice, FakeKernels, FakeStaging, FakeStreamExchange: see fake_device.h.
#include "support/fake_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "algorithms/call_header.h"
#include "comm/comm.h"
#include "core/divide_by_ranks.h"
#include "core/collective_bytes.h"
#include "core/dtype.h"
#include "sparsifier/sparsifier.h"
#include "transports/staging/device_copier.h"
#include "transports/staging/pinned_staging_transport.h"
#include "transports/transport.h"

namespace sccl_test {

using sccl::cpuKernels;

FakeDevice::FakeDevice(size_t arena_bytes) : bytes_(arena_bytes) {
  fd_ = memfd_create("sccl-fake-device", 0);
  if (fd_ < 0 || ftruncate(fd_, off_t(bytes_)) != 0) throw std::runtime_error("fake device: memfd");
  void* device = mmap(nullptr, bytes_, PROT_NONE, MAP_SHARED, fd_, 0);
  void* host = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (device == MAP_FAILED || host == MAP_FAILED) throw std::runtime_error("fake device: mmap");
  device_ = static_cast<char*>(device);
  host_ = static_cast<char*>(host);
}

FakeDevice::~FakeDevice() {
  munmap(device_, bytes_);
  munmap(host_, bytes_);
  close(fd_);
}

void* FakeDevice::allocate(size_t bytes) {
  if (capturing_) violation("allocation while capturing");
  const size_t at = (used_ + 255) / 256 * 256;
  if (at + bytes > bytes_) throw std::runtime_error("fake device: arena exhausted");
  used_ = at + bytes;
  std::memset(host_ + at, 0xA5, bytes);
  return device_ + at;
}

bool FakeDevice::isDevice(const void* p) const {
  const char* c = static_cast<const char*>(p);
  return c >= device_ && c < device_ + bytes_;
}

void* FakeDevice::view(const void* p) const {
  if (!isDevice(p)) return const_cast<void*>(p);
  return host_ + (static_cast<const char*>(p) - device_);
}

void FakeDevice::enqueue(std::function<void()> work) {
  queue_.push_back(std::move(work));
}

void FakeDevice::wait() {
  ++counters.waits;
  if (capturing_) violation("host wait while capturing");
  std::vector<std::function<void()>> work;
  work.swap(queue_);
  for (auto& w : work) w();
}

// --- FakeKernels ---

void FakeKernels::launch(const char* what, std::function<scclResult_t()> work) const {
  ++d_.counters.launches;
  FakeDevice* d = &d_;
  d_.enqueue([d, what, work = std::move(work)] {
    if (work() != scclSuccess) d->violation(std::string("kernel failed: ") + what);
  });
}

scclResult_t FakeKernels::synchronous(size_t result_bytes,
                                      const std::function<scclResult_t()>& work) const {
  ++d_.counters.launches;
  ++d_.counters.to_host;
  d_.counters.to_host_bytes += result_bytes;
  d_.wait();
  return work();
}

scclResult_t FakeKernels::accumulate(void* acc, const void* residual, scclDataType_t acc_dtype,
                                     const void* grad, scclDataType_t grad_dtype, size_t count,
                                     uint64_t* nonfinite, void*) const {
  // The CUDA backend adds to a device word; the CPU's overwrites: add, as on the device.
  void* a = d_.view(acc);
  const void* r = d_.view(residual);
  const void* g = d_.view(grad);
  uint64_t* nf = d_.at(nonfinite);
  launch("accumulate", [=] {
    uint64_t mine = 0;
    scclResult_t result = cpuKernels().accumulate(a, r, acc_dtype, g, grad_dtype, count,
                                                  nf != nullptr ? &mine : nullptr, nullptr);
    if (nf != nullptr) *nf += mine;
    return result;
  });
  return scclSuccess;
}

scclResult_t FakeKernels::accumulateSelect(const sccl::AccumulateSelectArgs& args, void*) const {
  sccl::AccumulateSelectArgs a = args;
  a.acc = d_.view(a.acc);
  a.residual = d_.view(a.residual);
  a.grad = d_.view(a.grad);
  a.out = d_.view(a.out);
  a.idx = d_.at(a.idx);
  a.val = d_.view(a.val);
  a.counts = d_.at(a.counts);
  uint64_t* nf = d_.at(a.nonfinite);
  auto run = [a, nf]() mutable {
    uint64_t mine = 0;
    a.nonfinite = nf != nullptr ? &mine : nullptr;
    scclResult_t result = cpuKernels().accumulateSelect(a, nullptr);
    if (nf != nullptr) *nf += mine;
    return result;
  };
  if (a.ncandidates != nullptr) return synchronous(sizeof(uint64_t), run);
  launch("accumulateSelect", run);
  return scclSuccess;
}

scclResult_t FakeKernels::selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                      double threshold, int64_t* idx, void* val, size_t capacity,
                                      size_t* nselected, void*) const {
  const void* xv = d_.view(x);
  int64_t* iv = d_.at(idx);
  void* vv = d_.view(val);
  return synchronous(sizeof(uint64_t), [=] {
    return cpuKernels().selectAbove(xv, dtype, begin, end, threshold, iv, vv, capacity, nselected,
                                    nullptr);
  });
}

scclResult_t FakeKernels::gather(const void* src, scclDataType_t dtype, const int64_t* idx,
                                 size_t n, void* out, void*) const {
  const void* s = d_.view(src);
  const int64_t* i = d_.at(idx);
  void* o = d_.view(out);
  launch("gather", [=] { return cpuKernels().gather(s, dtype, i, n, o, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::gatherAndZero(void* src, scclDataType_t dtype, const int64_t* idx,
                                        size_t n, void* out, void*) const {
  void* s = d_.view(src);
  const int64_t* i = d_.at(idx);
  void* o = d_.view(out);
  launch("gatherAndZero", [=] { return cpuKernels().gatherAndZero(s, dtype, i, n, o, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::writeDense(void* dst, scclDataType_t dst_dtype, size_t count,
                                     const int64_t* idx, const void* vals, scclDataType_t val_dtype,
                                     size_t n, double scale, void*) const {
  void* dv = d_.view(dst);
  const int64_t* i = d_.at(idx);
  const void* v = d_.view(vals);
  launch("writeDense", [=] {
    return cpuKernels().writeDense(dv, dst_dtype, count, i, v, val_dtype, n, scale, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::scatter(void* dst, scclDataType_t dtype, const int64_t* idx,
                                  const void* vals, size_t n, void*) const {
  void* dv = d_.view(dst);
  const int64_t* i = d_.at(idx);
  const void* v = d_.view(vals);
  launch("scatter", [=] { return cpuKernels().scatter(dv, dtype, i, v, n, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::zeroAt(void* dst, scclDataType_t dtype, const int64_t* idx, size_t n,
                                 void*) const {
  void* dv = d_.view(dst);
  const int64_t* i = d_.at(idx);
  launch("zeroAt", [=] { return cpuKernels().zeroAt(dv, dtype, i, n, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::scatterValues(void* dst, scclDataType_t dst_dtype, const int64_t* idx,
                                        const void* vals, scclDataType_t val_dtype, size_t n,
                                        double scale, void*) const {
  void* dv = d_.view(dst);
  const int64_t* i = d_.at(idx);
  const void* v = d_.view(vals);
  launch("scatterValues", [=] {
    return cpuKernels().scatterValues(dv, dst_dtype, i, v, val_dtype, n, scale, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::fillZero(void* dst, size_t bytes, void*) const {
  void* dv = d_.view(dst);
  launch("fillZero", [=] { return cpuKernels().fillZero(dv, bytes, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::kthLargestAbs(const void* x, scclDataType_t dtype, size_t begin,
                                        size_t end, uint64_t k, double* value, void*) const {
  const void* xv = d_.view(x);
  return synchronous(sizeof(double), [=] {
    return cpuKernels().kthLargestAbs(xv, dtype, begin, end, k, value, nullptr);
  });
}

scclResult_t FakeKernels::absMoments(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                                     double floor, bool want_log, sccl::AbsMoments* out,
                                     void*) const {
  const void* xv = d_.view(x);
  return synchronous(sizeof(*out), [=] {
    return cpuKernels().absMoments(xv, dtype, begin, end, floor, want_log, out, nullptr);
  });
}

scclResult_t FakeKernels::absBitHistogram(const void* x, scclDataType_t dtype, size_t begin,
                                          size_t end, uint64_t base_bits, unsigned shift,
                                          size_t bins, uint64_t* counts, void*) const {
  const void* xv = d_.view(x);
  uint64_t* c = d_.at(counts);
  launch("absBitHistogram", [=] {
    return cpuKernels().absBitHistogram(xv, dtype, begin, end, base_bits, shift, bins, c, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::countCheckWindow(const void* x, scclDataType_t dtype, size_t begin,
                                           size_t end, const sccl::CountCheckWindow& w,
                                           uint64_t* counts, uint64_t* check,
                                           uint64_t* threshold_bits, void*) const {
  const void* xv = d_.view(x);
  uint64_t* c = d_.at(counts);
  uint64_t* k = d_.at(check);
  uint64_t* t = d_.at(threshold_bits);
  launch("countCheckWindow",
         [=] { return cpuKernels().countCheckWindow(xv, dtype, begin, end, w, c, k, t, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count,
                                            size_t block, double* sq, void*) const {
  const void* xv = d_.view(x);
  double* s = d_.at(sq);
  launch("blockSquaredNorms",
         [=] { return cpuKernels().blockSquaredNorms(xv, dtype, count, block, s, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::markTopBlocks(const double* sq, size_t blocks, size_t max_blocks,
                                        uint8_t* marks, double* cutoff_sq, void*) const {
  const double* s = d_.at(sq);
  uint8_t* m = d_.at(marks);
  double* c = d_.at(cutoff_sq);
  launch("markTopBlocks",
         [=] { return cpuKernels().markTopBlocks(s, blocks, max_blocks, m, c, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::markNonzeroBlocks(const void* x, scclDataType_t dtype, size_t count,
                                            size_t block, uint8_t* bitmap, void*) const {
  const void* xv = d_.view(x);
  uint8_t* b = d_.at(bitmap);
  launch("markNonzeroBlocks",
         [=] { return cpuKernels().markNonzeroBlocks(xv, dtype, count, block, b, nullptr); });
  return scclSuccess;
}

scclResult_t FakeKernels::sketchEncode(const void* x, scclDataType_t dtype,
                                       const sccl::SketchShape& shape, const uint8_t* bitmap,
                                       void* table, size_t listed_bound, void*) const {
  const void* xv = d_.view(x);
  const uint8_t* b = d_.at(bitmap);
  void* t = d_.view(table);
  const sccl::SketchShape s = shape;
  // The row keys are host memory, read when the kernel is enqueued (passed by value on CUDA).
  auto keys = std::make_shared<std::vector<uint64_t>>(s.row_keys, s.row_keys + s.rows);
  const auto encode = [=] {
    sccl::SketchShape copy = s;
    copy.row_keys = keys->data();
    return cpuKernels().sketchEncode(xv, dtype, copy, b, t, sccl::kListedUnknown, nullptr);
  };
  // Without a bound the CUDA encode reads back its listed count (8 bytes, one wait) to size its
  // sort: the budgets counted here are the GPU's.
  if (listed_bound == sccl::kListedUnknown) return synchronous(sizeof(uint64_t), encode);
  launch("sketchEncode", encode);
  return scclSuccess;
}

scclResult_t FakeKernels::sketchDecode(const void* table, scclDataType_t dtype,
                                       const sccl::SketchShape& shape, const uint8_t* bitmap,
                                       uint32_t divisor, void* out, scclDataType_t out_dtype,
                                       void*) const {
  const void* t = d_.view(table);
  const uint8_t* b = d_.at(bitmap);
  void* o = d_.view(out);
  const sccl::SketchShape s = shape;
  auto keys = std::make_shared<std::vector<uint64_t>>(s.row_keys, s.row_keys + s.rows);
  launch("sketchDecode", [=] {
    sccl::SketchShape copy = s;
    copy.row_keys = keys->data();
    return cpuKernels().sketchDecode(t, dtype, copy, b, divisor, o, out_dtype, nullptr);
  });
  return scclSuccess;
}

scclResult_t FakeKernels::updateMarkedBlocks(void* x, scclDataType_t dtype, size_t count,
                                             size_t block, const uint8_t* bitmap, const void* sub,
                                             void*) const {
  void* xv = d_.view(x);
  const uint8_t* b = d_.at(bitmap);
  const void* s = d_.view(sub);
  launch("updateMarkedBlocks",
         [=] { return cpuKernels().updateMarkedBlocks(xv, dtype, count, block, b, s, nullptr); });
  return scclSuccess;
}

// --- FakeStaging ---

scclResult_t FakeStaging::buffer(Buffer which, size_t bytes, void** out) {
  Buf& b = device_[which];
  if (b.bytes < bytes) {
    b.p = d_.allocate(bytes);  // growth loses the contents, as on the GPU
    b.bytes = bytes;
  }
  *out = b.p;
  return scclSuccess;
}

scclResult_t FakeStaging::hostBuffer(HostBuffer which, size_t bytes, void** out) {
  std::vector<unsigned char>& b = host_[which];
  if (b.size() < bytes) b.assign(bytes, 0x5A);
  *out = b.data();
  return scclSuccess;
}

scclResult_t FakeStaging::toHost(void* host, const void* device, size_t bytes) {
  SCCL_CHECK(readBack(host, device, bytes));
  return synchronize();
}

scclResult_t FakeStaging::readBack(void* host, const void* device, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  ++d_.counters.to_host;
  d_.counters.to_host_bytes += bytes;
  std::memset(host, 0xEE, bytes);  // poison until the wait
  const void* src = d_.view(device);
  d_.enqueue([=] { std::memcpy(host, src, bytes); });
  return scclSuccess;
}

scclResult_t FakeStaging::toDevice(void* device, const void* host, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  ++d_.counters.to_device;
  d_.counters.to_device_bytes += bytes;
  auto copy = std::make_shared<std::vector<unsigned char>>(
      static_cast<const unsigned char*>(host), static_cast<const unsigned char*>(host) + bytes);
  void* dst = d_.view(device);
  d_.enqueue([=] { std::memcpy(dst, copy->data(), bytes); });
  return scclSuccess;
}

scclResult_t FakeStaging::copyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  if (!d_.isDevice(dst) || !d_.isDevice(src)) d_.violation("copyOnDevice: not device memory");
  ++d_.counters.launches;
  void* to = d_.view(dst);
  const void* from = d_.view(src);
  d_.enqueue([=] { std::memmove(to, from, bytes); });
  return scclSuccess;
}

scclResult_t FakeStaging::synchronize() {
  d_.wait();
  return scclSuccess;
}

scclResult_t FakeStaging::fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) {
  ++d_.counters.launches;
  void* r = d_.view(recvbuf);
  d_.enqueue([=] { sccl::fillWithNaN(r, count, dtype); });
  return scclSuccess;
}

scclResult_t FakeStaging::divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) {
  ++d_.counters.launches;
  void* xv = d_.view(x);
  FakeDevice* d = &d_;
  d_.enqueue([=] {
    if (sccl::divideByRanks(xv, count, dtype, nranks) != scclSuccess) d->violation("divide");
  });
  return scclSuccess;
}

// --- FakeStreamExchange ---

scclResult_t FakeStreamExchange::allGather(sccl::SparseCall& call, const void* send, void* recv,
                                           size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return scclSuccess;
  sccl::Transport* t = call.ctx->comm->transport.get();
  const int n = call.ctx->comm->nranks;
  const void* s = d_.view(send);
  void* r = d_.view(recv);
  const size_t number = collectives++;
  FakeDevice* d = &d_;
  auto tamper_fn = tamper;
  d_.enqueue([=] {
    if (t->allGather(s, r, bytes_per_rank) != scclSuccess) d->violation("allGather failed");
    if (tamper_fn) tamper_fn(number, r, bytes_per_rank * size_t(n));
  });
  const sccl::WireBytes wire = sccl::allGatherWireBytes(bytes_per_rank, n);
  call.bytes_sent += wire.sent;
  call.bytes_received += wire.received;
  return scclSuccess;
}

scclResult_t FakeStreamExchange::allReduceSum(sccl::SparseCall& call, const void* send, void* recv,
                                              size_t count, scclDataType_t dtype) {
  if (count == 0) return scclSuccess;
  sccl::Transport* t = call.ctx->comm->transport.get();
  const void* s = d_.view(send);
  void* v = d_.view(recv);
  const size_t number = collectives++;
  FakeDevice* d = &d_;
  auto tamper_fn = tamper;
  const size_t bytes = count * sccl::dataTypeSize(dtype);
  d_.enqueue([=] {
    if (t->allReduce(s, v, count, dtype, sccl::ReduceOp::Sum) != scclSuccess)
      d->violation("allReduce failed");
    if (tamper_fn) tamper_fn(number, v, bytes);
  });
  const sccl::WireBytes wire = sccl::allReduceWireBytes(bytes, call.ctx->comm->nranks);
  call.bytes_sent += wire.sent;
  call.bytes_received += wire.received;
  return scclSuccess;
}

scclResult_t FakeStreamExchange::allReduceMaxBytes(sccl::SparseCall& call, const void* send,
                                                   void* recv, size_t bytes) {
  if (bytes == 0) return scclSuccess;
  sccl::Transport* t = call.ctx->comm->transport.get();
  const void* s = d_.view(send);
  void* v = d_.view(recv);
  const size_t number = collectives++;
  FakeDevice* d = &d_;
  auto tamper_fn = tamper;
  d_.enqueue([=] {
    if (t->allReduce(s, v, bytes, scclUint8, sccl::ReduceOp::Max) != scclSuccess)
      d->violation("allReduce max failed");
    if (tamper_fn) tamper_fn(number, v, bytes);
  });
  const sccl::WireBytes wire = sccl::allReduceWireBytes(bytes, call.ctx->comm->nranks);
  call.bytes_sent += wire.sent;
  call.bytes_received += wire.received;
  return scclSuccess;
}

namespace {

class FakeCopier final : public sccl::DeviceCopier {
 public:
  explicit FakeCopier(FakeDevice& device) : d_(device) {}
  const char* name() const override { return "fake-device"; }
  bool isDevice(const void* ptr) const override { return ptr != nullptr && d_.isDevice(ptr); }
  scclResult_t allocateHost(size_t bytes, void** out) override {
    *out = std::malloc(bytes);
    return *out != nullptr ? scclSuccess : scclSystemError;
  }
  void freeHost(void* ptr) override { std::free(ptr); }
  scclResult_t toHost(void* host, const void* device, size_t bytes) override {
    ++d_.counters.to_host;
    d_.counters.to_host_bytes += bytes;
    std::memcpy(host, d_.view(device), bytes);
    return scclSuccess;
  }
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override {
    ++d_.counters.to_device;
    d_.counters.to_device_bytes += bytes;
    std::memcpy(d_.view(device), host, bytes);
    return scclSuccess;
  }

 private:
  FakeDevice& d_;
};

}  // namespace

void installFakeDeviceTransport(scclComm_t comm, FakeDevice& device) {
  comm->device_transport = std::make_unique<sccl::PinnedStagingTransport>(
      &comm->transport, std::make_unique<FakeCopier>(device));
}

scclResult_t FakeStreamExchange::broadcast(sccl::SparseCall& call, void* buf, size_t bytes,
                                           int root) {
  if (bytes == 0) return scclSuccess;
  sccl::Transport* t = call.ctx->comm->transport.get();
  void* b = d_.view(buf);
  const size_t number = collectives++;
  FakeDevice* d = &d_;
  auto tamper_fn = tamper;
  d_.enqueue([=] {
    if (t->broadcast(b, bytes, root) != scclSuccess) d->violation("broadcast failed");
    if (tamper_fn) tamper_fn(number, b, bytes);
  });
  const sccl::WireBytes wire =
      sccl::broadcastWireBytes(bytes, call.ctx->comm->nranks, call.ctx->comm->rank == root);
  call.bytes_sent += wire.sent;
  call.bytes_received += wire.received;
  return scclSuccess;
}

}  // namespace sccl_test
