// One-sided windows of the MPI transport (contract: transports/window.h) with MPI-3 passive
// target RMA: MPI_Win_allocate over the transport's private communicator; lock = MPI_Win_lock
// (MPI_LOCK_SHARED), put = MPI_Put of bytes, putWord = MPI_Accumulate(MPI_REPLACE) of one
// MPI_UINT64_T, flush = MPI_Win_flush, unlock = MPI_Win_unlock. The owner reads its own window
// through MPI as well, inside a shared lock on itself: readWords = MPI_Get_accumulate(MPI_NO_OP)
// of consecutive words, readBatch = one MPI_Get per range; each call ends with one
// MPI_Win_flush. Accumulate-family operations are atomic
// per element and ordered by the flushes, which is what the slot protocol needs from the version
// words; a read racing a put gets undefined bytes, which the protocol discards.
//
// What MPI cannot give: MPI_Win_lock/flush/unlock are blocking calls without a deadline. With
// the osc components that reach the target's memory directly (sm, rdma over vader) they complete
// without the target's help; with osc pt2pt (needed for singleton runs, see docs/transports/
// mpi.md) they need the target to enter MPI now and then, which every EventGraD pass does.
#include <mpi.h>

#include <cstring>
#include <deque>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "transports/mpi/mpi_transport.h"
#include "transports/window_epochs.h"

namespace sccl {
namespace {

class MpiWindow final : public Window {
 public:
  MpiWindow(MPI_Win win, size_t bytes, int rank, int nranks, size_t max_piece)
      : win_(win),
        bytes_(bytes),
        rank_(rank),
        max_piece_(max_piece),
        epochs_(static_cast<size_t>(nranks), bytes),
        pending_words_(static_cast<size_t>(nranks)) {}

  ~MpiWindow() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (size_t target = 0; target < epochs_.ranks(); ++target) {
      if (epochs_.isOpen(target)) MPI_Win_unlock(static_cast<int>(target), win_);
    }
    // Collective: every rank destroys its window (the caller guarantees it).
    MPI_Win_free(&win_);
  }

  size_t bytes() const override { return bytes_; }

  scclResult_t lock(int target) override {
    SCCL_CHECK(epochs_.requireClosed(target));
    SCCL_CHECK(mpi::checkMpi(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_), "MPI_Win_lock"));
    epochs_.setOpen(target, true);
    return scclSuccess;
  }

  scclResult_t unlock(int target) override {
    SCCL_CHECK(epochs_.requireEpoch("unlock", target));
    epochs_.setOpen(target, false);
    scclResult_t result = mpi::checkMpi(MPI_Win_unlock(target, win_), "MPI_Win_unlock");
    pending_words_[static_cast<size_t>(target)].clear();
    return result;
  }

  scclResult_t flush(int target) override {
    SCCL_CHECK(epochs_.requireEpoch("flush", target));
    SCCL_CHECK(mpi::checkMpi(MPI_Win_flush(target, win_), "MPI_Win_flush"));
    pending_words_[static_cast<size_t>(target)].clear();
    return scclSuccess;
  }

  scclResult_t put(int target, size_t offset, const void* data, size_t bytes) override {
    SCCL_CHECK(epochs_.requireEpoch("put", target));
    SCCL_CHECK(epochs_.requireRange("put", offset, bytes));
    SCCL_REQUIRE_ARG(data != nullptr || bytes == 0, "window put: data is NULL");
    if (bytes == 0) return scclSuccess;
    const auto* source = static_cast<const std::byte*>(data);
    for (size_t i = 0; i < mpi::pieceCount(bytes, max_piece_); ++i) {
      size_t at = mpi::pieceOffset(i, max_piece_);
      int piece = static_cast<int>(mpi::pieceBytes(bytes, max_piece_, i));
      SCCL_CHECK(mpi::checkMpi(MPI_Put(source + at, piece, MPI_BYTE, target,
                                       static_cast<MPI_Aint>(offset + at), piece, MPI_BYTE, win_),
                               "MPI_Put"));
    }
    return scclSuccess;
  }

  scclResult_t putWord(int target, size_t offset, uint64_t value) override {
    SCCL_CHECK(epochs_.requireEpoch("putWord", target));
    SCCL_CHECK(epochs_.requireRange("putWord", offset, 8));
    SCCL_REQUIRE_ARG(offset % 8 == 0, "window putWord at offset %zu: not 8-byte aligned", offset);
    // MPI reads the origin until the operation completes (next flush or unlock of target); a
    // deque keeps the address of every queued word stable.
    std::deque<uint64_t>& pending = pending_words_[static_cast<size_t>(target)];
    pending.push_back(value);
    return mpi::checkMpi(
        MPI_Accumulate(&pending.back(), 1, MPI_UINT64_T, target, static_cast<MPI_Aint>(offset), 1,
                       MPI_UINT64_T, MPI_REPLACE, win_),
        "MPI_Accumulate (window word)");
  }

  scclResult_t readWords(size_t offset, size_t count, uint64_t* values) override {
    SCCL_CHECK(epochs_.requireEpoch("readWords", rank_));
    SCCL_REQUIRE_ARG(count <= bytes_ / 8, "window readWords: %zu words", count);
    SCCL_CHECK(epochs_.requireRange("readWords", offset, count * 8));
    SCCL_REQUIRE_ARG(offset % 8 == 0, "window readWords at offset %zu: not 8-byte aligned", offset);
    if (count == 0) return scclSuccess;
    // Accumulate-family: atomic per element against the writers' MPI_Accumulate.
    for (size_t i = 0; i < mpi::pieceCount(count * 8, max_piece_); ++i) {
      size_t at = mpi::pieceOffset(i, max_piece_) / 8;
      int words = static_cast<int>(mpi::pieceBytes(count * 8, max_piece_, i) / 8);
      SCCL_CHECK(mpi::checkMpi(
          MPI_Get_accumulate(nullptr, 0, MPI_UINT64_T, values + at, words, MPI_UINT64_T, rank_,
                             static_cast<MPI_Aint>(offset + at * 8), words, MPI_UINT64_T, MPI_NO_OP,
                             win_),
          "MPI_Get_accumulate (window words)"));
    }
    return mpi::checkMpi(MPI_Win_flush(rank_, win_), "MPI_Win_flush");
  }

  scclResult_t readBatch(const Range* ranges, size_t count) override {
    SCCL_CHECK(epochs_.requireEpoch("read", rank_));
    for (size_t r = 0; r < count; ++r) {
      SCCL_CHECK(epochs_.requireRange("read", ranges[r].offset, ranges[r].bytes));
      SCCL_REQUIRE_ARG(ranges[r].out != nullptr || ranges[r].bytes == 0,
                       "window read: out is NULL");
    }
    for (size_t r = 0; r < count; ++r) {
      auto* target = static_cast<std::byte*>(ranges[r].out);
      size_t bytes = ranges[r].bytes;
      if (bytes == 0) continue;
      for (size_t i = 0; i < mpi::pieceCount(bytes, max_piece_); ++i) {
        size_t at = mpi::pieceOffset(i, max_piece_);
        int piece = static_cast<int>(mpi::pieceBytes(bytes, max_piece_, i));
        SCCL_CHECK(mpi::checkMpi(
            MPI_Get(target + at, piece, MPI_BYTE, rank_,
                    static_cast<MPI_Aint>(ranges[r].offset + at), piece, MPI_BYTE, win_),
            "MPI_Get"));
      }
    }
    // One flush completes the whole batch.
    return mpi::checkMpi(MPI_Win_flush(rank_, win_), "MPI_Win_flush");
  }

 private:
  MPI_Win win_;
  size_t bytes_;
  int rank_;
  size_t max_piece_;
  WindowEpochs epochs_;
  std::vector<std::deque<uint64_t>> pending_words_;
};

}  // namespace

scclResult_t MpiTransport::createWindow(size_t bytes, std::unique_ptr<Window>* out) {
  return guarded([&] { return runCreateWindow(bytes, out); });
}

scclResult_t MpiTransport::runCreateWindow(size_t bytes, std::unique_ptr<Window>* out) {
  SCCL_REQUIRE_ARG(bytes > 0, "createWindow: a window of 0 bytes");
  SCCL_REQUIRE_ARG(bytes <= static_cast<size_t>(PTRDIFF_MAX),
                   "createWindow: %zu bytes is too large", bytes);
  // Every rank must ask for the same size: checked first, so that no rank is left alone in
  // MPI_Win_allocate.
  uint64_t mine = bytes;
  std::vector<uint64_t> all(static_cast<size_t>(nranks_));
  SCCL_CHECK(runAllGather(&mine, all.data(), sizeof(mine)));
  for (int r = 0; r < nranks_; ++r) {
    if (all[static_cast<size_t>(r)] != mine) {
      return fail(scclInvalidUsage, "%s createWindow: rank %d asked for %llu bytes, this rank %zu",
                  label_.c_str(), r, static_cast<unsigned long long>(all[static_cast<size_t>(r)]),
                  bytes);
    }
  }
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  SCCL_CHECK(mpi::checkMpi(
      MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm_, &base, &win),
      "MPI_Win_allocate"));
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  auto window = std::make_unique<MpiWindow>(win, bytes, rank_, nranks_, max_message_bytes_);
  // Zero the own memory in an exclusive epoch, then wait for everyone before the first put.
  SCCL_CHECK(mpi::checkMpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win), "MPI_Win_lock"));
  std::memset(base, 0, bytes);
  SCCL_CHECK(mpi::checkMpi(MPI_Win_unlock(rank_, win), "MPI_Win_unlock"));
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  SCCL_CHECK(mpi::checkMpi(MPI_Ibarrier(comm_, &requests[0]), "createWindow (MPI_Ibarrier)"));
  SCCL_CHECK(waitAll(requests, nullptr, "createWindow"));
  SCCL_INFO(LogSubsys::Transport, "%s: one-sided window of %zu bytes", label_.c_str(), bytes);
  *out = std::move(window);
  return scclSuccess;
}

}  // namespace sccl
