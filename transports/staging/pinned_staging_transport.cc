// PinnedStagingTransport: see pinned_staging_transport.h.
#include "transports/staging/pinned_staging_transport.h"

#include <algorithm>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "transports/collective_arguments.h"

namespace sccl {

PinnedStagingTransport::PinnedStagingTransport(const std::unique_ptr<Transport>* inner,
                                               std::unique_ptr<DeviceCopier> copier)
    : inner_(inner), copier_(std::move(copier)) {
  name_ = std::string((*inner_)->name()) + "+pinned";
}

PinnedStagingTransport::~PinnedStagingTransport() {
  if (send_.data != nullptr) copier_->freeHost(send_.data);
  if (recv_.data != nullptr) copier_->freeHost(recv_.data);
}

TransportCapabilities PinnedStagingTransport::capabilities() const {
  TransportCapabilities capabilities = inner().capabilities();
  capabilities.device_memory = true;
  return capabilities;
}

scclResult_t PinnedStagingTransport::failed(scclResult_t result) {
  if (result != scclSuccess && result != scclInvalidArgument && broken_ == scclSuccess)
    broken_ = result;
  return result;
}

scclResult_t PinnedStagingTransport::reserve(PinnedBuffer& buffer, size_t bytes, void** out) {
  if (bytes > buffer.bytes) {
    if (buffer.data != nullptr) copier_->freeHost(buffer.data);
    buffer = PinnedBuffer{};
    void* data = nullptr;
    SCCL_CHECK(failed(copier_->allocateHost(bytes, &data)));
    buffer = PinnedBuffer{data, bytes};
  }
  *out = buffer.data;
  return scclSuccess;
}

scclResult_t PinnedStagingTransport::copyIn(void* host, const void* device, size_t bytes) {
  return bytes == 0 ? scclSuccess : failed(copier_->toHost(host, device, bytes));
}

scclResult_t PinnedStagingTransport::copyOut(void* device, const void* host, size_t bytes) {
  return bytes == 0 ? scclSuccess : failed(copier_->toDevice(device, host, bytes));
}

scclResult_t PinnedStagingTransport::hostSource(const void* buf, size_t bytes, PinnedBuffer& buffer,
                                                const void** out) {
  if (!copier_->isDevice(buf)) {
    *out = buf;
    return scclSuccess;
  }
  void* host = nullptr;
  SCCL_CHECK(reserve(buffer, bytes, &host));
  SCCL_CHECK(copyIn(host, buf, bytes));
  *out = host;
  return scclSuccess;
}

scclResult_t PinnedStagingTransport::allGather(const void* send, void* recv,
                                               size_t bytes_per_rank) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks()));
  const bool recv_on_device = copier_->isDevice(recv);
  if (!recv_on_device && !copier_->isDevice(send))
    return inner().allGather(send, recv, bytes_per_rank);
  // The send slice is staged on its own, so an in-place call (send inside recv) needs no case.
  const void* host_send = nullptr;
  SCCL_CHECK(hostSource(send, bytes_per_rank, send_, &host_send));
  const size_t total = bytes_per_rank * size_t(nranks());
  void* host_recv = recv;
  if (recv_on_device) SCCL_CHECK(reserve(recv_, total, &host_recv));
  SCCL_CHECK(inner().allGather(host_send, host_recv, bytes_per_rank));
  return recv_on_device ? copyOut(recv, host_recv, total) : scclSuccess;
}

scclResult_t PinnedStagingTransport::allGatherV(const void* send, size_t send_bytes, void* recv,
                                                const size_t* recv_bytes,
                                                const size_t* recv_offsets) {
  if (broken_ != scclSuccess) return broken_;
  bool any_bytes = false;
  SCCL_CHECK(checkAllGatherVArguments(send, send_bytes, recv, recv_bytes, recv_offsets, rank(),
                                      nranks(), "allGatherV", &any_bytes));
  const bool recv_on_device = copier_->isDevice(recv);
  if (!any_bytes || (!recv_on_device && !copier_->isDevice(send)))
    return inner().allGatherV(send, send_bytes, recv, recv_bytes, recv_offsets);
  const void* host_send = nullptr;
  SCCL_CHECK(hostSource(send, send_bytes, send_, &host_send));
  if (!recv_on_device)
    return inner().allGatherV(host_send, send_bytes, recv, recv_bytes, recv_offsets);
  // The pinned copy mirrors recv's layout up to the furthest segment; only the segments go back
  // (recv's bytes between them are the caller's).
  const size_t n = size_t(nranks());
  size_t extent = 0;
  for (size_t r = 0; r < n; ++r) extent = std::max(extent, recv_offsets[r] + recv_bytes[r]);
  void* host_recv = nullptr;
  SCCL_CHECK(reserve(recv_, extent, &host_recv));
  SCCL_CHECK(inner().allGatherV(host_send, send_bytes, host_recv, recv_bytes, recv_offsets));
  std::vector<size_t> order(n);
  for (size_t r = 0; r < n; ++r) order[r] = r;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return recv_offsets[a] < recv_offsets[b]; });
  // Adjacent segments (the usual packed layout) go back in one copy.
  size_t run_begin = 0, run_end = 0;
  const auto* host_bytes = static_cast<const unsigned char*>(host_recv);
  auto* device_bytes = static_cast<unsigned char*>(recv);
  for (size_t r : order) {
    if (recv_bytes[r] == 0) continue;
    if (recv_offsets[r] != run_end) {
      SCCL_CHECK(copyOut(device_bytes + run_begin, host_bytes + run_begin, run_end - run_begin));
      run_begin = recv_offsets[r];
    }
    run_end = recv_offsets[r] + recv_bytes[r];
  }
  return copyOut(device_bytes + run_begin, host_bytes + run_begin, run_end - run_begin);
}

scclResult_t PinnedStagingTransport::allReduce(const void* send, void* recv, size_t count,
                                               scclDataType_t dtype, ReduceOp op) {
  if (broken_ != scclSuccess) return broken_;
  size_t bytes = 0;
  SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, op, &bytes));
  const bool recv_on_device = copier_->isDevice(recv);
  if (!recv_on_device && !copier_->isDevice(send))
    return inner().allReduce(send, recv, count, dtype, op);
  void* host_recv = recv;
  if (recv_on_device) SCCL_CHECK(reserve(recv_, bytes, &host_recv));
  const void* host_send = nullptr;
  if (send == recv) {  // in place: one pinned buffer, reduced in place
    SCCL_CHECK(copyIn(host_recv, send, bytes));
    host_send = host_recv;
  } else {
    SCCL_CHECK(hostSource(send, bytes, send_, &host_send));
  }
  SCCL_CHECK(inner().allReduce(host_send, host_recv, count, dtype, op));
  return recv_on_device ? copyOut(recv, host_recv, bytes) : scclSuccess;
}

scclResult_t PinnedStagingTransport::reduceScatter(const void* send, void* recv, size_t recvcount,
                                                   scclDataType_t dtype, ReduceOp op) {
  if (broken_ != scclSuccess) return broken_;
  size_t block = 0;
  SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks(), &block));
  const bool recv_on_device = copier_->isDevice(recv);
  if (!recv_on_device && !copier_->isDevice(send))
    return inner().reduceScatter(send, recv, recvcount, dtype, op);
  const size_t total = block * static_cast<size_t>(nranks());
  const void* host_send = nullptr;
  SCCL_CHECK(hostSource(send, total, send_, &host_send));
  // Into the receive buffer, never the staged input: in place, recv is the own block of send.
  void* host_recv = recv;
  if (recv_on_device) SCCL_CHECK(reserve(recv_, block, &host_recv));
  SCCL_CHECK(inner().reduceScatter(host_send, host_recv, recvcount, dtype, op));
  return recv_on_device ? copyOut(recv, host_recv, block) : scclSuccess;
}

scclResult_t PinnedStagingTransport::broadcast(void* buf, size_t bytes, int root) {
  if (broken_ != scclSuccess) return broken_;
  SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks()));
  if (!copier_->isDevice(buf)) return inner().broadcast(buf, bytes, root);
  void* host = nullptr;
  SCCL_CHECK(reserve(recv_, bytes, &host));
  if (rank() == root) SCCL_CHECK(copyIn(host, buf, bytes));
  SCCL_CHECK(inner().broadcast(host, bytes, root));
  return rank() == root ? scclSuccess : copyOut(buf, host, bytes);
}

scclResult_t PinnedStagingTransport::send(const void* buf, size_t bytes, int peer, int tag) {
  if (broken_ != scclSuccess) return broken_;
  if (buf == nullptr || bytes == 0 || !copier_->isDevice(buf))
    return inner().send(buf, bytes, peer, tag);
  const void* host = nullptr;
  SCCL_CHECK(hostSource(buf, bytes, send_, &host));
  // The host transport's send has copied or delivered the bytes when it returns (its contract),
  // so the pinned buffer may be reused by the next operation.
  return inner().send(host, bytes, peer, tag);
}

scclResult_t PinnedStagingTransport::recv(void* buf, size_t bytes, int peer, int tag) {
  if (broken_ != scclSuccess) return broken_;
  if (buf == nullptr || bytes == 0 || !copier_->isDevice(buf))
    return inner().recv(buf, bytes, peer, tag);
  void* host = nullptr;
  SCCL_CHECK(reserve(recv_, bytes, &host));
  SCCL_CHECK(inner().recv(host, bytes, peer, tag));
  return copyOut(buf, host, bytes);
}

scclResult_t PinnedStagingTransport::barrier() {
  if (broken_ != scclSuccess) return broken_;
  return inner().barrier();
}

scclResult_t PinnedStagingTransport::createWindow(size_t bytes, std::unique_ptr<Window>* out) {
  return inner().createWindow(bytes, out);  // windows are host memory on every host transport
}

void PinnedStagingTransport::abort() {
  if (broken_ == scclSuccess) broken_ = scclRemoteError;
  inner().abort();
}

}  // namespace sccl
