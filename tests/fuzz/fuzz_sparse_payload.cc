// libFuzzer harness: everything the sparse all-reduce reads from peers (the 32-byte call
// header, index lists, CLT-k's broadcast indices, reduced values, the sketch table and bitmap,
// the density correction's bin counts), taken from the fuzz input.
//
// This process is rank 0 of a 2-4 rank communicator whose transport (PeerInput below) is the
// input: every byte a real transport would deliver from another rank is read from it, and a
// transport that runs out of input fails the operation as a peer that closed mid-frame would.
// The sparsifier is created honestly (peers echo rank 0), then 1-3 calls run on hostile data.
// Each must return success or a documented error code and never crash, read out of bounds or
// write outside recvbuf (ASan + UBSan); after a failure the communicator must refuse calls,
// except after a refused call agreement (a peer's well-formed record that differs), which
// leaves it usable.
//
// Input layout: byte 0 preset, byte 1 ranks and calls, byte 2 header fix-up flags (a random
// 64-bit config fingerprint and call number would never match, which would stop the fuzzer at
// the first check: with the flag set they are copied from rank 0's own header, and the peers'
// call records are rank 0's), bytes 3-4 the element count; the rest is the peers' data in the
// order the transport asks for it (without the flag, each call's records come first).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "core/dtype.h"
#include "core/handle_registry.h"
#include "sparsecoll/sparsecoll.h"
#include "transports/transport.h"

namespace {

class PeerInput final : public sccl::Transport {
 public:
  PeerInput(const uint8_t* data, size_t size, int nranks, bool fix_headers)
      : data_(data), size_(size), nranks_(nranks), fix_headers_(fix_headers) {}

  bool armed = false;  // false while the sparsifier is created: peers echo rank 0

  const char* name() const override { return "fuzz"; }
  int rank() const override { return 0; }
  int nranks() const override { return nranks_; }
  sccl::TransportCapabilities capabilities() const override { return {}; }

  scclResult_t allGather(const void* send, void* recv, size_t bytes) override {
    auto* out = static_cast<uint8_t*>(recv);
    if (bytes > 0 && send != out) std::memmove(out, send, bytes);
    for (int r = 1; r < nranks_; ++r) {
      uint8_t* slot = out + size_t(r) * bytes;
      if (!armed) {
        std::memcpy(slot, out, bytes);
        continue;
      }
      if (!take(slot, bytes)) return scclRemoteError;
      if (fix_headers_ && bytes == 32) std::memcpy(slot + 16, out + 16, 16);
    }
    return scclSuccess;
  }

  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override {
    auto* out = static_cast<uint8_t*>(recv);
    if (send_bytes > 0) std::memmove(out + recv_offsets[0], send, send_bytes);
    for (int r = 1; r < nranks_; ++r) {
      if (!armed) continue;
      if (!take(out + recv_offsets[r], recv_bytes[r])) return scclRemoteError;
    }
    return scclSuccess;
  }

  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         sccl::ReduceOp) override {
    size_t bytes = count * sccl::dataTypeSize(dtype);
    if (!armed) {
      if (send != recv && bytes > 0) std::memmove(recv, send, bytes);
      return scclSuccess;
    }
    return take(static_cast<uint8_t*>(recv), bytes) ? scclSuccess : scclRemoteError;
  }

  scclResult_t broadcast(void* buf, size_t bytes, int root) override {
    if (root == 0 || !armed) return scclSuccess;
    return take(static_cast<uint8_t*>(buf), bytes) ? scclSuccess : scclRemoteError;
  }

  scclResult_t send(const void*, size_t, int, int) override { return scclSuccess; }
  scclResult_t recv(void* buf, size_t bytes, int, int) override {
    return take(static_cast<uint8_t*>(buf), bytes) ? scclSuccess : scclRemoteError;
  }
  scclResult_t barrier() override { return scclSuccess; }
  // The call records every collective starts with: with the fix-up flag (or while the sparsifier
  // is created) the peers send rank 0's own record, as matched calls would; otherwise each
  // peer's 64 bytes come from the input (a hostile record must be refused, never trusted).
  scclResult_t agree(const sccl::CallAgreement& agreement) override {
    std::vector<sccl::CallRecord> all(static_cast<size_t>(nranks_), *agreement.mine);
    for (int r = 1; r < nranks_; ++r) {
      all[size_t(r)].rank = r;
      if (!armed || fix_headers_) continue;
      if (!take(reinterpret_cast<uint8_t*>(&all[size_t(r)]), sizeof(sccl::CallRecord)))
        return scclRemoteError;
    }
    return agreement.check(all.data(), nranks_, agreement.context);
  }
  void abort() override {}

 private:
  // The next `bytes` bytes of peer data; false (a peer that closed mid-frame) when the input
  // has fewer left.
  bool take(uint8_t* out, size_t bytes) {
    if (bytes > size_ - offset_) return false;
    if (bytes > 0) std::memcpy(out, data_ + offset_, bytes);
    offset_ += bytes;
    return true;
  }

  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
  int nranks_;
  bool fix_headers_;
};

struct Preset {
  const char* algorithm;
  const char* selection;  // sketch block selection (s2 only)
  scclDataType_t dtype;
};

constexpr Preset kPresets[] = {
    {"topk", nullptr, scclFloat32},           {"cltk", nullptr, scclFloat32},
    {"micro", nullptr, scclFloat32},          {"exdyna", nullptr, scclFloat32},
    {"hard_threshold", nullptr, scclFloat16}, {"s2", "topk", scclFloat32},
    {"s2", "nonzero", scclFloat64},           {"dense", nullptr, scclBfloat16},
    {"topk", nullptr, scclFloat64},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const Preset& preset = kPresets[data[0] % (sizeof(kPresets) / sizeof(kPresets[0]))];
  const int nranks = 2 + (data[1] & 3) % 3;
  const int calls = 1 + (data[1] >> 2) % 3;
  const bool fix_headers = (data[2] & 1) != 0;
  const size_t count = 1 + (size_t(data[3]) | size_t(data[4]) << 8) % 2048;
  auto transport = std::make_unique<PeerInput>(data + 5, size - 5, nranks, fix_headers);
  PeerInput* peers = transport.get();

  auto* comm = new scclComm();
  comm->rank = 0;
  comm->nranks = nranks;
  comm->timeout_ms = 1000;
  comm->transport = std::move(transport);
  sccl::registerHandle(comm, scclComm::kMagic);

  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = preset.algorithm;
  config.density = 0.05;
  if (preset.selection != nullptr) config.sketchBlockSelection = preset.selection;
  scclSparsifier_t sp = nullptr;
  if (scclSparsifierCreate(&sp, comm, count, preset.dtype, &config) != scclSuccess) std::abort();
  peers->armed = true;

  const size_t element = sccl::dataTypeSize(preset.dtype);
  std::vector<uint8_t> grad(count * element), out(count * element);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = uint8_t((i * 37) % 61);  // finite values
  bool broken = false;
  for (int c = 0; c < calls; ++c) {
    scclResult_t result = scclSparseAllreduce(grad.data(), out.data(), count, preset.dtype, scclSum,
                                              sp, comm, nullptr);
    if (broken && result == scclSuccess) std::abort();  // a broken communicator must refuse
    switch (result) {
      case scclSuccess:
      case scclInvalidArgument:  // the non-finite policy, on NaN/Inf from peers
        break;
      case scclInvalidUsage: {
        // A peer's well-formed call record that differs from ours is a refused call agreement:
        // nothing was exchanged and the communicator stays usable. Any other refusal breaks it.
        scclResult_t state = scclSuccess;
        scclCommGetAsyncError(comm, &state);
        const bool refused_agreement =
            std::strncmp(scclGetLastError(comm), "call agreement:", 15) == 0;
        if (state == scclSuccess && !refused_agreement) std::abort();
        if (state != scclSuccess) broken = true;
        break;
      }
      case scclRemoteError: broken = true; break;
      default: std::abort();
    }
  }
  scclResult_t async = scclSuccess;
  scclCommGetAsyncError(comm, &async);
  if (broken && async == scclSuccess) std::abort();
  if (scclSparsifierDestroy(sp) != scclSuccess) std::abort();
  sccl::unregisterHandle(comm);
  delete comm;
  return 0;
}
