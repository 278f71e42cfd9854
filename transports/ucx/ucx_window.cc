// One-sided windows of the UCX transport (contract: transports/window.h).
//
// Creation (collective): the ranks check that they ask for the same size (one all-gather), each
// maps `bytes` of memory with ucp_mem_map (UCP_MEM_MAP_ALLOCATE, so that UCX picks memory its
// shared-memory transports can reach directly) and zeroes it, packs its remote key, and the ranks
// all-gather [u64 base address][packed key] records (lengths first; each is bounds-checked before
// it is unpacked), then meet in a barrier.
// Writes: put = ucp_put_nbx; putWord = ucp_atomic_op_nbx(UCP_ATOMIC_OP_SWAP) of one 64-bit word
// (atomic at the target, unlike a put); flush(target) = ucp_ep_flush_nbx on the target's
// endpoint, which completes every put and swap issued to it in the target's memory. lock and
// unlock are local bookkeeping (shared locks exclude nothing); unlock flushes.
// Reads of the own window need no UCX call: words are loaded with acquire semantics and ranges
// are copied between acquire fences. Each read first polls the worker once, because over TCP
// (and for atomics UCX emulates) incoming writes land only while the target progresses; a
// writer's flush therefore completes while the target is in any sparsecoll call.
// Destruction is collective: what this rank issued is flushed, a barrier makes sure no peer
// still writes, then the keys are destroyed and the memory unmapped. After a failure (flush or
// barrier failed, or the transport was already broken) operations may still be in flight inside
// UCX: a swap writes its reply word, a put reads through a key. The keys, the mapped memory and
// the swap words are then handed to the transport, which releases them after it has closed its
// endpoints; the same holds for the words of a failed flush. UCX cannot cancel a put, so one
// abandoned after a failure may still read its source until the communicator's endpoints close
// (the event exchange puts from the caller's parameter buffer: docs/transports/ucx.md says to
// keep it until the communicator is destroyed after a failure).
//
// What UCX cannot check: ucp_ep_rkey_unpack takes no length, so a peer's key record is checked
// for its length only, not its contents.
#include <atomic>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "transports/ucx/ucx_transport.h"
#include "transports/window_epochs.h"

namespace sccl {
namespace {

constexpr size_t kMaxKeyRecordBytes = 64 * 1024;

// A swap's operand and the old value UCX writes back: both addresses must stay fixed until the
// swap completes.
struct SwapWord {
  uint64_t value;
  uint64_t previous;
};

// What UCX operations of this window may touch while in flight: released here, or, after a
// failure, by the transport once its endpoints are closed.
struct UcxWindowMemory {
  UcxWindowMemory(ucp_context_h context_in, size_t nranks)
      : context(context_in), rkeys(nranks, nullptr), words(nranks) {}
  ~UcxWindowMemory() {
    for (ucp_rkey_h key : rkeys) {
      if (key != nullptr) ucp_rkey_destroy(key);
    }
    if (memh != nullptr) ucp_mem_unmap(context, memh);
  }
  UcxWindowMemory(const UcxWindowMemory&) = delete;
  UcxWindowMemory& operator=(const UcxWindowMemory&) = delete;

  ucp_context_h context;
  ucp_mem_h memh = nullptr;
  std::vector<ucp_rkey_h> rkeys;
  std::vector<std::deque<SwapWord>> words;  // per target, until its next completed flush
};

class UcxWindow final : public Window {
 public:
  UcxWindow(UcxTransport& transport, size_t bytes)
      : transport_(transport),
        bytes_(bytes),
        nranks_(transport.nranks()),
        rank_(transport.rank()),
        epochs_(static_cast<size_t>(nranks_), bytes),
        remote_bases_(static_cast<size_t>(nranks_), 0),
        memory_(
            std::make_shared<UcxWindowMemory>(transport.context(), static_cast<size_t>(nranks_))) {
    for (int r = 0; r < nranks_; ++r) {
      pending_.push_back(std::make_unique<UcxTransport::Ops>(&transport_));
    }
  }

  ~UcxWindow() override {
    // Complete what this rank issued (a window destroyed inside an epoch), then wait until no
    // peer can write into this memory any more. Both are skipped when the transport is broken.
    bool completed = mapped_ && !transport_.broken();
    for (int target = 0; target < nranks_ && completed; ++target) {
      if (!pending_[static_cast<size_t>(target)]->empty()) {
        completed = complete(target, "window destruction") == scclSuccess;
      }
    }
    if (completed) completed = transport_.barrier() == scclSuccess;
    for (auto& ops : pending_) transport_.abandon(*ops);
    if (!completed || transport_.broken()) transport_.keepUntilClosed(std::move(memory_));
  }

  scclResult_t setUp() {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.length = bytes_;
    params.flags = UCP_MEM_MAP_ALLOCATE;
    ucs_status_t status = ucp_mem_map(transport_.context(), &params, &memory_->memh);
    if (status != UCS_OK) {
      memory_->memh = nullptr;
      return fail(scclSystemError, "%s createWindow: ucp_mem_map of %zu bytes failed: %s",
                  transport_.label().c_str(), bytes_, ucs_status_string(status));
    }
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status = ucp_mem_query(memory_->memh, &attr);
    if (status != UCS_OK || attr.length < bytes_) {
      return fail(scclSystemError, "%s createWindow: ucp_mem_query failed: %s",
                  transport_.label().c_str(), ucs_status_string(status));
    }
    base_ = static_cast<std::byte*>(attr.address);
    std::memset(base_, 0, bytes_);

    void* packed = nullptr;
    size_t packed_bytes = 0;
    status = ucp_rkey_pack(transport_.context(), memory_->memh, &packed, &packed_bytes);
    if (status != UCS_OK) {
      return fail(scclSystemError, "%s createWindow: ucp_rkey_pack failed: %s",
                  transport_.label().c_str(), ucs_status_string(status));
    }
    std::vector<uint8_t> record(8 + packed_bytes);
    uint64_t address = reinterpret_cast<uintptr_t>(base_);
    std::memcpy(record.data(), &address, 8);
    std::memcpy(record.data() + 8, packed, packed_bytes);
    ucp_rkey_buffer_release(packed);
    SCCL_CHECK(exchangeKeys(record));
    mapped_ = true;
    return transport_.barrier();
  }

  size_t bytes() const override { return bytes_; }

  scclResult_t lock(int target) override {
    SCCL_CHECK(epochs_.requireClosed(target));
    SCCL_CHECK(transport_.checkUsable());
    epochs_.setOpen(target, true);
    return scclSuccess;
  }

  scclResult_t unlock(int target) override {
    SCCL_CHECK(epochs_.requireEpoch("unlock", target));
    epochs_.setOpen(target, false);
    return complete(target, "window unlock");
  }

  scclResult_t flush(int target) override {
    SCCL_CHECK(epochs_.requireEpoch("flush", target));
    return complete(target, "window flush");
  }

  scclResult_t put(int target, size_t offset, const void* data, size_t bytes) override {
    SCCL_CHECK(epochs_.requireEpoch("put", target));
    SCCL_CHECK(epochs_.requireRange("put", offset, bytes));
    SCCL_REQUIRE_ARG(data != nullptr || bytes == 0, "window put: data is NULL");
    if (bytes == 0) return scclSuccess;
    UcxTransport::Ops& ops = *pending_[static_cast<size_t>(target)];
    UcxTransport::Op& op = ops.emplace_back();
    ucp_request_param_t param;
    UcxTransport::prepareOther(&param, &op);
    ucs_status_ptr_t status =
        ucp_put_nbx(transport_.endpoint(target), data, bytes, remoteAddress(target, offset),
                    memory_->rkeys[static_cast<size_t>(target)], &param);
    return transport_.recordOutcome(
        transport_.track(ops, status, target, false, bytes, "window put"));
  }

  scclResult_t putWord(int target, size_t offset, uint64_t value) override {
    SCCL_CHECK(epochs_.requireEpoch("putWord", target));
    SCCL_CHECK(epochs_.requireRange("putWord", offset, 8));
    SCCL_REQUIRE_ARG(offset % 8 == 0, "window putWord at offset %zu: not 8-byte aligned", offset);
    // UCX reads the value and writes the old one until the swap completes (next flush): a deque
    // keeps both addresses stable.
    SwapWord& word = memory_->words[static_cast<size_t>(target)].emplace_back(SwapWord{value, 0});
    UcxTransport::Ops& ops = *pending_[static_cast<size_t>(target)];
    UcxTransport::Op& op = ops.emplace_back();
    ucp_request_param_t param;
    UcxTransport::prepareOther(&param, &op);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(8);
    param.reply_buffer = &word.previous;
    ucs_status_ptr_t status = ucp_atomic_op_nbx(
        transport_.endpoint(target), UCP_ATOMIC_OP_SWAP, &word.value, 1,
        remoteAddress(target, offset), memory_->rkeys[static_cast<size_t>(target)], &param);
    return transport_.recordOutcome(
        transport_.track(ops, status, target, false, 8, "window putWord"));
  }

  scclResult_t readWords(size_t offset, size_t count, uint64_t* values) override {
    SCCL_CHECK(epochs_.requireEpoch("readWords", rank_));
    SCCL_REQUIRE_ARG(count <= bytes_ / 8, "window readWords: %zu words", count);
    SCCL_CHECK(epochs_.requireRange("readWords", offset, count * 8));
    SCCL_REQUIRE_ARG(offset % 8 == 0, "window readWords at offset %zu: not 8-byte aligned", offset);
    SCCL_REQUIRE_ARG(values != nullptr || count == 0, "window readWords: values is NULL");
    transport_.progressOnce();
    const auto* words = reinterpret_cast<const uint64_t*>(base_ + offset);
    for (size_t i = 0; i < count; ++i) values[i] = __atomic_load_n(&words[i], __ATOMIC_ACQUIRE);
    return scclSuccess;
  }

  scclResult_t readBatch(const Range* ranges, size_t count) override {
    SCCL_CHECK(epochs_.requireEpoch("read", rank_));
    SCCL_REQUIRE_ARG(ranges != nullptr || count == 0, "window read: ranges is NULL");
    for (size_t r = 0; r < count; ++r) {
      SCCL_CHECK(epochs_.requireRange("read", ranges[r].offset, ranges[r].bytes));
      SCCL_REQUIRE_ARG(ranges[r].out != nullptr || ranges[r].bytes == 0,
                       "window read: out is NULL");
    }
    transport_.progressOnce();
    std::atomic_thread_fence(std::memory_order_acquire);
    for (size_t r = 0; r < count; ++r) {
      if (ranges[r].bytes > 0)
        std::memcpy(ranges[r].out, base_ + ranges[r].offset, ranges[r].bytes);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    return scclSuccess;
  }

 private:
  uint64_t remoteAddress(int target, size_t offset) const {
    return remote_bases_[static_cast<size_t>(target)] + offset;
  }

  scclResult_t exchangeKeys(const std::vector<uint8_t>& record) {
    const size_t n = static_cast<size_t>(nranks_);
    uint64_t mine = record.size();
    std::vector<uint64_t> lengths(n);
    SCCL_CHECK(transport_.allGather(&mine, lengths.data(), sizeof(mine)));
    std::vector<size_t> sizes(n), offsets(n);
    size_t total = 0;
    for (size_t r = 0; r < n; ++r) {
      if (lengths[r] <= 8 || lengths[r] > 8 + kMaxKeyRecordBytes) {
        return transport_.recordOutcome(
            fail(scclRemoteError,
                 "%s createWindow: rank %zu sent a key record of %llu bytes "
                 "(allowed 9..%zu)",
                 transport_.label().c_str(), r, static_cast<unsigned long long>(lengths[r]),
                 8 + kMaxKeyRecordBytes));
      }
      sizes[r] = lengths[r];
      offsets[r] = total;
      total += sizes[r];
    }
    std::vector<uint8_t> all(total);
    SCCL_CHECK(transport_.allGatherV(record.data(), record.size(), all.data(), sizes.data(),
                                     offsets.data()));
    for (size_t r = 0; r < n; ++r) {
      std::memcpy(&remote_bases_[r], all.data() + offsets[r], 8);
      ucs_status_t status = ucp_ep_rkey_unpack(transport_.endpoint(static_cast<int>(r)),
                                               all.data() + offsets[r] + 8, &memory_->rkeys[r]);
      if (status != UCS_OK) {
        memory_->rkeys[r] = nullptr;
        return transport_.recordOutcome(
            fail(scclRemoteError, "%s createWindow: the key of rank %zu cannot be unpacked: %s",
                 transport_.label().c_str(), r, ucs_status_string(status)));
      }
    }
    return scclSuccess;
  }

  // Completes every put and swap issued to target, in target's memory.
  scclResult_t complete(int target, const char* what) {
    UcxTransport::Ops& ops = *pending_[static_cast<size_t>(target)];
    SCCL_CHECK(transport_.checkUsable());
    UcxTransport::Op& op = ops.emplace_back();
    ucp_request_param_t param;
    UcxTransport::prepareOther(&param, &op);
    ucs_status_ptr_t status = ucp_ep_flush_nbx(transport_.endpoint(target), &param);
    scclResult_t result = transport_.track(ops, status, target, false, 0, what);
    if (result == scclSuccess) result = transport_.waitOps(ops, what);
    ops.clear();
    // After a failure a swap may still be in flight: its word stays (with the window's memory,
    // handed to the transport at destruction).
    if (result == scclSuccess) memory_->words[static_cast<size_t>(target)].clear();
    return transport_.recordOutcome(result);
  }

  UcxTransport& transport_;
  size_t bytes_;
  int nranks_;
  int rank_;
  std::byte* base_ = nullptr;
  bool mapped_ = false;
  WindowEpochs epochs_;
  std::vector<uint64_t> remote_bases_;
  std::shared_ptr<UcxWindowMemory> memory_;
  std::vector<std::unique_ptr<UcxTransport::Ops>> pending_;
};

}  // namespace

scclResult_t UcxTransport::createWindow(size_t bytes, std::unique_ptr<Window>* out) {
  return guarded([&] { return runCreateWindow(bytes, out); });
}

scclResult_t UcxTransport::runCreateWindow(size_t bytes, std::unique_ptr<Window>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "createWindow: output pointer is NULL");
  SCCL_REQUIRE_ARG(bytes > 0, "createWindow: a window of 0 bytes");
  SCCL_REQUIRE_ARG(bytes <= static_cast<size_t>(PTRDIFF_MAX),
                   "createWindow: %zu bytes is too large", bytes);
  // Every rank must ask for the same size: checked first, so that no rank maps alone.
  uint64_t mine = bytes;
  std::vector<uint64_t> all(static_cast<size_t>(nranks_));
  SCCL_CHECK(allGather(&mine, all.data(), sizeof(mine)));
  for (int r = 0; r < nranks_; ++r) {
    if (all[static_cast<size_t>(r)] != mine) {
      return fail(scclInvalidUsage, "%s createWindow: rank %d asked for %llu bytes, this rank %zu",
                  label_.c_str(), r, static_cast<unsigned long long>(all[static_cast<size_t>(r)]),
                  bytes);
    }
  }
  auto window = std::make_unique<UcxWindow>(*this, bytes);
  SCCL_CHECK(window->setUp());
  SCCL_INFO(LogSubsys::Transport, "%s: one-sided window of %zu bytes", label_.c_str(), bytes);
  *out = std::move(window);
  return scclSuccess;
}

}  // namespace sccl
