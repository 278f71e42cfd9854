// Hostile peer data fed to the sparse reductions through a fault-injecting transport
// (tests/support/fault_transport.h): counts above what a peer may send, huge declared lengths,
// indices outside the vector or the peer's partition, out of order or repeated, truncated and
// garbage frames, a frame of another sparsifier or call (the fingerprint and sequence act as
// the call's token), a bitmap byte other than 0/1, and a transport that reports a broken frame;
// the same for the sync-free reduction's fixed-size slots (counts, token words, indices).
//
// Each case runs 3 in-process ranks: one good call (so buffers have their working size), then
// the same fault installed on every rank (every rank sees the same bad bytes from the hostile
// peer), then the call under test. It must: return the documented code on every rank; leave
// recvbuf untouched (nothing written before the check); allocate under 1 MiB in total across all
// ranks during the call (operator new bytes) with the heap in use growing under 1 MiB (mallinfo2);
// leave the communicator in an error state (scclCommGetAsyncError, later collectives refused at
// once); and let scclCommAbort (rank 0) and scclCommDestroy (the others) return.
#include <catch2/catch.hpp>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/call_header.h"
#include "sparsifier/sparsifier.h"
#include "support/alloc_counter.h"
#include "support/fault_transport.h"
#include "support/local_ranks.h"

namespace {

using sccl::CallHeader;
using sccl_test::Fault;
using sccl_test::FaultOp;

constexpr int kRanks = 3;
constexpr size_t kCount = 4096;
constexpr float kSentinel = 12345.0f;
constexpr uint64_t kMiB = 1 << 20;

struct PeerFaultCase {
  const char* name;
  const char* algorithm;
  // Builds the fault once the sparsifier exists (some faults depend on its partitions).
  std::function<Fault(scclSparsifier_t sp)> make_fault;
  scclResult_t expected;
  // The gather reduction's own steps (a 32-byte call header, then the index lists) run for the
  // configs the resident calls do not cover: max_density_slack set (here on top-k's preset).
  bool gather_steps = false;
};

constexpr bool kGatherSteps = true;

// Mutators of a received slice.
std::function<void(std::byte*, size_t)> onHeader(std::function<void(CallHeader&)> edit) {
  return [edit](std::byte* data, size_t bytes) {
    if (bytes != sizeof(CallHeader)) return;  // not a header: left alone, the case then fails
    CallHeader h;
    std::memcpy(&h, data, sizeof h);
    edit(h);
    std::memcpy(data, &h, sizeof h);
  };
}

std::function<void(std::byte*, size_t)> onIndices(std::function<void(int64_t*, size_t)> edit) {
  return [edit](std::byte* data, size_t bytes) {
    std::vector<int64_t> idx(bytes / sizeof(int64_t));
    std::memcpy(idx.data(), data, idx.size() * sizeof(int64_t));
    edit(idx.data(), idx.size());
    std::memcpy(data, idx.data(), idx.size() * sizeof(int64_t));
  };
}

std::function<void(std::byte*, size_t)> garbage(uint32_t seed) {
  return [seed](std::byte* data, size_t bytes) {
    std::mt19937 random(seed);
    for (size_t i = 0; i < bytes; ++i) data[i] = std::byte(random() & 0xff);
  };
}

Fault fault(FaultOp op, int nth, int hostile, std::function<void(std::byte*, size_t)> mutate) {
  Fault f;
  f.op = op;
  f.nth = nth;
  f.hostile_rank = hostile;
  f.mutate = std::move(mutate);
  return f;
}

// The transport reports the nth collective of kind op broken (every rank sees it).
Fault brokenFrame(FaultOp op, int nth) {
  Fault f;
  f.op = op;
  f.nth = nth;
  f.transport_error = scclRemoteError;
  return f;
}

// Header all-gather is the first all-gather of a gather or sketch call, the index list the second.
Fault headerFault(int hostile, std::function<void(CallHeader&)> edit) {
  return fault(FaultOp::AllGather, 0, hostile, onHeader(std::move(edit)));
}
Fault indexFault(int hostile, std::function<void(int64_t*, size_t)> edit) {
  return fault(FaultOp::AllGather, 1, hostile, onIndices(std::move(edit)));
}

// The sync-free slot is the only all-gather of its call; kSlotHeader words precede the indices.
constexpr size_t kSlotHeader = 4;
Fault slotFault(int hostile, std::function<void(int64_t*, size_t)> edit) {
  return fault(FaultOp::AllGather, 0, hostile, onIndices(std::move(edit)));
}

// The union call's slot (top-k, a threshold over the whole vector): k-th pattern, non-finite
// count, fingerprint, call number, count, then the indices. Top-k all-gathers its slots once; a
// threshold first the slots' headers alone (nth 0), then the slots at the largest count (nth 1).
constexpr size_t kUnionCount = 4;
constexpr size_t kUnionHeader = 5;
Fault unionFault(int nth, int hostile, std::function<void(int64_t*, size_t)> edit) {
  return fault(FaultOp::AllGather, nth, hostile, onIndices(std::move(edit)));
}

std::vector<PeerFaultCase> peerFaultCases() {
  const int64_t count = int64_t(kCount);
  auto always = [](Fault f) { return [f](scclSparsifier_t) { return f; }; };
  return {
      // The 64-byte call record every collective starts with (transports/agreement_record.h).
      {"garbage call record", "topk", always(fault(FaultOp::Agreement, 0, 1, garbage(19))),
       scclRemoteError},
      {"call record claiming to come from another rank", "topk",
       always(fault(FaultOp::Agreement, 0, 2,
                    [](std::byte* data, size_t) {
                      sccl::CallRecord record;
                      std::memcpy(&record, data, sizeof record);
                      record.rank = 0;
                      std::memcpy(data, &record, sizeof record);
                    })),
       scclRemoteError},
      // The 32-byte call header.
      {"count above capacity", "topk",
       always(headerFault(2, [](CallHeader& h) { h.k_local = kCount + 1; })), scclRemoteError,
       kGatherSteps},
      {"huge declared length", "topk",
       always(headerFault(1, [](CallHeader& h) { h.k_local = uint64_t(1) << 62; })),
       scclRemoteError, kGatherSteps},
      {"declared length of 2^64 - 1", "topk",
       always(headerFault(0, [](CallHeader& h) { h.k_local = ~uint64_t(0); })), scclRemoteError,
       kGatherSteps},
      {"garbage header", "topk", always(fault(FaultOp::AllGather, 0, 1, garbage(7))),
       scclInvalidUsage, kGatherSteps},
      {"truncated header (last 16 bytes never arrived)", "topk",
       always(fault(FaultOp::AllGather, 0, 2,
                    [](std::byte* data, size_t bytes) { std::memset(data + 16, 0, bytes - 16); })),
       scclInvalidUsage, kGatherSteps},
      {"wrong token (fingerprint of another sparsifier)", "topk",
       always(headerFault(1, [](CallHeader& h) { h.fingerprint ^= 1; })), scclInvalidUsage,
       kGatherSteps},
      {"replayed frame of an earlier call", "topk",
       always(headerFault(1, [](CallHeader& h) { h.sequence -= 1; })), scclInvalidUsage,
       kGatherSteps},
      // The index list of the gather reduction.
      {"index equal to count", "topk",
       always(indexFault(1, [=](int64_t* i, size_t) { i[0] = count; })), scclRemoteError,
       kGatherSteps},
      {"index far beyond count", "topk",
       always(
           indexFault(2, [](int64_t* i, size_t) { i[1] = std::numeric_limits<int64_t>::max(); })),
       scclRemoteError, kGatherSteps},
      {"negative index", "topk", always(indexFault(0, [](int64_t* i, size_t) { i[0] = -5; })),
       scclRemoteError, kGatherSteps},
      {"indices not ascending", "topk",
       always(indexFault(1, [](int64_t* i, size_t) { std::swap(i[0], i[1]); })), scclRemoteError,
       kGatherSteps},
      {"repeated index", "topk", always(indexFault(1, [](int64_t* i, size_t) { i[1] = i[0]; })),
       scclRemoteError, kGatherSteps},
      {"garbage index list", "topk", always(fault(FaultOp::AllGather, 1, 2, garbage(11))),
       scclRemoteError, kGatherSteps},
      {"truncated index list (padding where indices should be)", "topk",
       always(fault(FaultOp::AllGather, 1, 1,
                    [](std::byte* data, size_t bytes) {
                      std::memset(data + bytes / 2, 0xff, bytes - bytes / 2);
                    })),
       scclRemoteError, kGatherSteps},
      {"transport reports a broken frame", "topk", always(brokenFrame(FaultOp::AllGather, 1)),
       scclRemoteError, kGatherSteps},
      // The union call's slots (top-k and the hard threshold over the whole vector).
      {"union slot count above the range", "topk",
       always(unionFault(0, 2, [](int64_t* w, size_t) { w[kUnionCount] = int64_t(kCount) + 1; })),
       scclRemoteError},
      {"union slot count of 2^64 - 1", "topk",
       always(unionFault(0, 1, [](int64_t* w, size_t) { w[kUnionCount] = -1; })), scclRemoteError},
      {"union slot of another sparsifier", "topk",
       always(unionFault(0, 1, [](int64_t* w, size_t) { w[2] ^= 1; })), scclInvalidUsage},
      {"union slot of an earlier call", "topk",
       always(unionFault(0, 0, [](int64_t* w, size_t) { w[3] -= 1; })), scclInvalidUsage},
      {"union index equal to count", "topk",
       always(unionFault(0, 1, [=](int64_t* w, size_t) { w[kUnionHeader] = count; })),
       scclRemoteError},
      {"union negative index", "topk",
       always(unionFault(0, 2, [](int64_t* w, size_t) { w[kUnionHeader] = -5; })), scclRemoteError},
      {"union indices not ascending", "topk",
       always(unionFault(
           0, 1, [](int64_t* w, size_t) { std::swap(w[kUnionHeader], w[kUnionHeader + 1]); })),
       scclRemoteError},
      {"union repeated index", "topk",
       always(unionFault(0, 0, [](int64_t* w, size_t) { w[kUnionHeader + 1] = w[kUnionHeader]; })),
       scclRemoteError},
      {"union garbage slot", "topk", always(fault(FaultOp::AllGather, 0, 1, garbage(23))),
       scclInvalidUsage},
      {"union slot exchange reports a broken frame", "topk",
       always(brokenFrame(FaultOp::AllGather, 0)), scclRemoteError},
      {"threshold header count above the range", "hard_threshold",
       always(unionFault(0, 1, [](int64_t* w, size_t) { w[kUnionCount] = int64_t(kCount) + 1; })),
       scclRemoteError},
      {"threshold header of an earlier call", "hard_threshold",
       always(unionFault(0, 2, [](int64_t* w, size_t) { w[3] -= 1; })), scclInvalidUsage},
      {"threshold slot count changed after the headers", "hard_threshold",
       always(unionFault(1, 2, [](int64_t* w, size_t n) { w[kUnionCount] = int64_t(n); })),
       scclRemoteError},
      {"threshold slot index beyond count", "hard_threshold",
       always(unionFault(1, 0, [=](int64_t* w, size_t) { w[kUnionHeader] = count + 3; })),
       scclRemoteError},
      // Exclusive partitions (MiCRO): a peer may only send indices of its own range.
      {"index in another rank's partition", "micro",
       [](scclSparsifier_t sp) {
         sccl::IndexRange own = sp->search->rangeFor(1, sp->iteration);
         int64_t outside = own.begin > 0 ? int64_t(own.begin) - 1 : int64_t(own.end);
         return indexFault(1, [outside](int64_t* i, size_t) { i[0] = outside; });
       },
       scclRemoteError},
      {"count above the peer's partition", "micro",
       [](scclSparsifier_t sp) {
         uint64_t size = sp->search->rangeFor(2, sp->iteration).size();
         return headerFault(2, [size](CallHeader& h) { h.k_local = size + 1; });
       },
       scclRemoteError},
      // CLT-k: after one call the leader is rank 1 (iteration mod n); only it may select.
      {"leader broadcasts an index beyond count", "cltk",
       always(fault(FaultOp::Broadcast, 0, 1,
                    onIndices([=](int64_t* i, size_t n) { i[n - 1] = count + 7; }))),
       scclRemoteError},
      {"a rank that is not the leader claims entries", "cltk",
       always(headerFault(2, [](CallHeader& h) { h.k_local = 1; })), scclRemoteError},
      // The sketch reduction (S2): header, then bitmap all-reduce (uint8 max), then table.
      {"sketch bitmap byte other than 0 or 1", "s2",
       always(fault(FaultOp::AllReduce, 0, 0,
                    [](std::byte* data, size_t) { data[3] = std::byte{2}; })),
       scclRemoteError},
      {"sketch header count above the vector", "s2",
       always(headerFault(1, [](CallHeader& h) { h.k_local = kCount + 1; })), scclRemoteError},
      // The sync-free reduction's one fixed-size slot per rank (a single all-gather): k_r,
      // non-finite count, fingerprint, call number, then k_r ascending indices padded with -1.
      {"sync-free count above capacity", "micro_sync_free",
       always(slotFault(1, [](int64_t* w, size_t n) { w[0] = int64_t(n - kSlotHeader + 1); })),
       scclRemoteError},
      {"sync-free count of 2^63 - 1", "micro_sync_free",
       always(slotFault(2, [](int64_t* w, size_t) { w[0] = std::numeric_limits<int64_t>::max(); })),
       scclRemoteError},
      {"sync-free negative count", "exdyna_sync_free",
       always(slotFault(0, [](int64_t* w, size_t) { w[0] = -1; })), scclRemoteError},
      {"sync-free slot of another sparsifier", "micro_sync_free",
       always(slotFault(1, [](int64_t* w, size_t) { w[2] ^= 1; })), scclInvalidUsage},
      {"sync-free slot of an earlier call", "exdyna_sync_free",
       always(slotFault(2, [](int64_t* w, size_t) { w[3] -= 1; })), scclInvalidUsage},
      {"sync-free index equal to count", "micro_sync_free",
       always(slotFault(1, [=](int64_t* w, size_t) { w[kSlotHeader] = count; })), scclRemoteError},
      {"sync-free index in another rank's partition", "exdyna_sync_free",
       [](scclSparsifier_t sp) {
         sccl::IndexRange own = sp->search->rangeFor(2, sp->iteration);
         int64_t outside = own.begin > 0 ? int64_t(own.begin) - 1 : int64_t(own.end);
         return slotFault(2, [outside](int64_t* w, size_t) { w[kSlotHeader] = outside; });
       },
       scclRemoteError},
      {"sync-free indices not ascending", "micro_sync_free",
       always(
           slotFault(0, [](int64_t* w, size_t) { std::swap(w[kSlotHeader], w[kSlotHeader + 1]); })),
       scclRemoteError},
      {"sync-free garbage slot", "exdyna_sync_free",
       always(fault(FaultOp::AllGather, 0, 1, garbage(13))), scclInvalidUsage},
      {"sync-free values all-reduce reports a broken frame", "micro_sync_free",
       always(brokenFrame(FaultOp::AllReduce, 0)), scclRemoteError},
  };
}

float gradientValue(int rank, size_t i) {
  return float(sccl_test::testValue(17, rank, i)) + 0.25f * float((i * 7 + size_t(rank)) % 5);
}

struct RankOutcome {
  std::vector<std::string> failures;
  uint64_t allocated_bytes = 0;
};

// Runs one case on kRanks threads; returns every failure, and the bytes allocated (operator new,
// all ranks) and the heap growth (mallinfo2) during the faulty call.
std::vector<std::string> runCase(const PeerFaultCase& c, uint64_t* allocated,
                                 int64_t* heap_growth) {
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) return {"scclGetUniqueId failed"};
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 10000;
  std::vector<sccl_test::RankLog> logs;
  for (int r = 0; r < kRanks; ++r) logs.emplace_back(r);
  std::barrier gate(kRanks);
  std::atomic<uint64_t> bytes_at_start{0}, bytes_at_end{0};
  std::atomic<uint64_t> heap_at_start{0}, heap_at_end{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      sccl_test::RankLog& log = logs[size_t(r)];
      scclComm_t comm = nullptr;
      bool ok = log.checkResult(scclCommInitRankConfig(&comm, kRanks, id, r, &config), scclSuccess,
                                "init");
      scclSparseConfig_t sparse = SCCL_SPARSE_CONFIG_INITIALIZER;
      sparse.algorithm = c.algorithm;
      if (c.gather_steps) sparse.maxDensitySlack = 0.5;
      scclSparsifier_t sp = nullptr;
      ok = ok && log.checkResult(scclSparsifierCreate(&sp, comm, kCount, scclFloat32, &sparse),
                                 scclSuccess, "create");
      std::vector<float> grad(kCount), out(kCount);
      for (size_t i = 0; i < kCount; ++i) grad[i] = gradientValue(r, i);
      ok = ok && log.checkResult(scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32,
                                                     scclSum, sp, comm, nullptr),
                                 scclSuccess, "good call before the fault");
      sccl_test::FaultTransport* wrapper = nullptr;
      if (ok) wrapper = sccl_test::installFault(comm, c.make_fault(sp));
      std::fill(out.begin(), out.end(), kSentinel);
      gate.arrive_and_wait();
      if (r == 0) {
        bytes_at_start = sccl_test::allocatedBytesTotal();
        heap_at_start = sccl_test::heapInUseBytes();
      }
      gate.arrive_and_wait();
      scclResult_t got = ok ? scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32,
                                                  scclSum, sp, comm, nullptr)
                            : scclInternalError;
      gate.arrive_and_wait();
      if (r == 0) {
        bytes_at_end = sccl_test::allocatedBytesTotal();
        heap_at_end = sccl_test::heapInUseBytes();
      }
      gate.arrive_and_wait();
      if (!ok) return;
      log.checkResult(got, c.expected, "the call with hostile peer data");
      log.check(std::strlen(scclGetLastError(comm)) > 0, "a message explains the failure");
      log.check(wrapper->fired() == 1, "the fault fired exactly once");
      size_t written = 0;
      for (float v : out) written += v != kSentinel;
      log.check(written == 0,
                std::to_string(written) + " recvbuf entries written before the check");
      scclResult_t async = scclSuccess;
      log.checkResult(scclCommGetAsyncError(comm, &async), scclSuccess, "scclCommGetAsyncError");
      log.checkResult(async, c.expected, "the communicator's error state");
      float one = 1, sum = 0;
      log.checkResult(scclAllReduce(&one, &sum, 1, scclFloat32, scclSum, comm, nullptr), c.expected,
                      "a later collective is refused at once");
      log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "sparsifier destroy");
      if (r == 0) {
        log.checkResult(scclCommAbort(comm), scclSuccess, "abort");
      } else {
        log.checkResult(scclCommDestroy(comm), scclSuccess, "destroy");
      }
    });
  }
  for (auto& t : threads) t.join();
  *allocated = bytes_at_end - bytes_at_start;
  *heap_growth = int64_t(heap_at_end.load()) - int64_t(heap_at_start.load());
  std::vector<std::string> failures;
  for (const auto& log : logs)
    failures.insert(failures.end(), log.failures().begin(), log.failures().end());
  return failures;
}

}  // namespace

TEST_CASE("sparse reductions reject hostile peer data before writing or allocating",
          "[peerfault]") {
  uint64_t most_allocated = 0;
  int64_t most_growth = 0;
  const std::vector<PeerFaultCase> cases = peerFaultCases();
  for (const PeerFaultCase& c : cases) {
    uint64_t allocated = 0;
    int64_t heap_growth = 0;
    std::vector<std::string> failures = runCase(c, &allocated, &heap_growth);
    most_allocated = std::max(most_allocated, allocated);
    most_growth = std::max(most_growth, heap_growth);
    if (sccl_test::countingAvailable())
      std::printf("  %-52s %-16s %-5s allocated %7llu bytes, heap %+8lld bytes\n", c.name,
                  c.algorithm, c.gather_steps ? "slack" : "",
                  static_cast<unsigned long long>(allocated), static_cast<long long>(heap_growth));
    INFO("case: " << c.name << " (" << c.algorithm << (c.gather_steps ? ", slack" : "")
                  << "); allocated " << allocated << " bytes, heap grew " << heap_growth
                  << " bytes");
    REQUIRE_NO_RANK_FAILURES(failures);
    if (sccl_test::countingAvailable()) {
      CHECK(allocated < kMiB);
      CHECK(heap_growth < int64_t(kMiB));
    }
  }
  std::printf(
      "peerfault: %zu cases rejected with the documented code on all %d ranks; at most "
      "%llu bytes allocated and %lld bytes of heap growth during a rejected call%s\n",
      cases.size(), kRanks, static_cast<unsigned long long>(most_allocated),
      static_cast<long long>(most_growth),
      sccl_test::countingAvailable() ? "" : " (not counted under a sanitizer)");
}

TEST_CASE("the allocation counter sees a large allocation", "[peerfault]") {
  if (!sccl_test::countingAvailable()) return;
  uint64_t before = sccl_test::allocatedBytesTotal();
  std::vector<char> big(2 * kMiB, 1);
  CHECK(sccl_test::allocatedBytesTotal() - before >= 2 * kMiB);
  CHECK(sccl_test::heapInUseBytes() >= 2 * kMiB);
  CHECK(big[kMiB] == 1);
}
