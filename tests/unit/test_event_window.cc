// One-sided windows of the in-process transport and the slot protocol on top of them: epochs and
// bounds, reads of the newest copy or of the newest one up to a pass, protocol violations, and a
// stress test in which a reader never accepts a torn tensor while a writer keeps putting.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "support/local_ranks.h"
#include "support/sanitizer_build.h"
#include "transports/slot_window.h"

namespace {

using Clock = std::chrono::steady_clock;

sccl::Transport& transportOf(scclComm_t comm) {
  return *comm->transport;
}

std::vector<uint64_t> pattern(uint64_t version, size_t words) {
  std::vector<uint64_t> out(words);
  for (size_t i = 0; i < words; ++i) out[i] = version * 0x100000001b3ull + i;
  return out;
}

}  // namespace

TEST_CASE("local window put and read respect epochs and bounds", "[event][window]") {
  auto failures = sccl_test::runLocalRanks(2, [](int rank, scclComm_t comm,
                                                 sccl_test::RankLog& log) {
    std::unique_ptr<sccl::Window> window;
    if (!log.checkResult(transportOf(comm).createWindow(64, &window), scclSuccess, "createWindow"))
      return;
    log.check(window->bytes() == 64, "window size");
    int peer = 1 - rank;
    uint64_t word = 0;
    log.checkResult(window->put(peer, 0, &word, 8), scclInvalidUsage, "put outside an epoch");
    log.checkResult(window->readWord(0, &word), scclInvalidUsage, "read outside an epoch");
    log.checkResult(window->lock(peer), scclSuccess, "lock");
    log.checkResult(window->lock(peer), scclInvalidUsage, "second lock");
    char bytes[13] = "hello window";
    log.checkResult(window->put(peer, 60, bytes, 8), scclInvalidArgument, "put past the end");
    log.checkResult(window->putWord(peer, 4, 1), scclInvalidArgument, "unaligned word");
    log.checkResult(window->put(peer, 3, bytes, 13), scclSuccess, "unaligned put");
    log.checkResult(window->putWord(peer, 56, 0x1234u + rank), scclSuccess, "putWord");
    log.checkResult(window->unlock(peer), scclSuccess, "unlock");
    log.checkResult(transportOf(comm).barrier(), scclSuccess, "barrier");
    log.checkResult(window->lock(rank), scclSuccess, "lock self");
    char got[13] = {};
    log.checkResult(window->read(3, got, 13), scclSuccess, "read");
    log.check(std::memcmp(got, bytes, 13) == 0, "bytes arrived");
    log.checkResult(window->readWord(56, &word), scclSuccess, "readWord");
    log.check(word == 0x1234u + uint64_t(peer), "word arrived from the peer");
    log.checkResult(window->readWord(40, &word), scclSuccess, "readWord untouched");
    log.check(word == 0, "untouched memory is zero");
    log.checkResult(window->unlock(rank), scclSuccess, "unlock self");
    log.checkResult(transportOf(comm).barrier(), scclSuccess, "barrier before destruction");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("slot read picks the newest copy up to a pass", "[event][window]") {
  auto failures = sccl_test::runLocalRanks(1, [](int, scclComm_t comm, sccl_test::RankLog& log) {
    const size_t words = 5;  // 36 of the 40 bytes: the padding of odd payloads is exercised
    const sccl::SlotRegion region({36, 16});
    std::unique_ptr<sccl::Window> window;
    if (!log.checkResult(transportOf(comm).createWindow(region.bytes(), &window), scclSuccess,
                         "createWindow"))
      return;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    std::vector<uint64_t> out(words, 0), other(2, 0);
    void* outs[2] = {out.data(), other.data()};
    sccl::SlotCopy held[2];
    sccl::SlotReadStats stats;
    auto readAt = [&](uint64_t max_pass) {
      log.checkResult(window->lock(0), scclSuccess, "lock");
      scclResult_t r = sccl::readSlots(*window, 0, region, max_pass, outs, held, &stats, deadline);
      log.checkResult(window->unlock(0), scclSuccess, "unlock");
      return r;
    };
    log.checkResult(readAt(UINT64_MAX), scclSuccess, "read empty");
    log.check(held[0].version == 0 && held[1].version == 0, "a fresh region is empty");
    auto write = [&](uint64_t version, uint64_t pass) {
      std::vector<uint64_t> payload = pattern(version, words);
      sccl::SlotWrite w{0, payload.data(), version, pass};
      log.checkResult(sccl::writeSlots(*window, 0, 0, region, &w, 1), scclSuccess, "write");
    };
    write(1, 5);
    log.checkResult(readAt(4), scclSuccess, "read before the first pass");
    log.check(held[0].version == 0, "a copy from a later pass is not used");
    write(2, 7);
    log.checkResult(readAt(6), scclSuccess, "read up to pass 6");
    log.check(held[0].version == 1 && held[0].pass == 5, "write 1 chosen");
    log.check(std::memcmp(out.data(), pattern(1, words).data(), 36) == 0, "write 1's payload");
    log.check(held[1].version == 0, "the other slot stays empty");
    uint64_t copies = stats.copies;
    log.checkResult(readAt(UINT64_MAX), scclSuccess, "read newest");
    log.check(held[0].version == 2 && held[0].pass == 7, "write 2 chosen");
    log.check(std::memcmp(out.data(), pattern(2, words).data(), 36) == 0, "write 2's payload");
    log.check(stats.copies == copies + 1, "one more copy");
    log.checkResult(readAt(UINT64_MAX), scclSuccess, "read known");
    log.check(held[0].version == 2 && stats.copies == copies + 1, "a held write is not copied");
    // Two writes tagged above max_pass: the writer broke the one-write-per-pass rule.
    write(3, 8);
    held[0] = sccl::SlotCopy{};
    log.checkResult(readAt(6), scclRemoteError, "protocol violation");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("slot reads never accept a torn tensor while puts continue", "[event][window]") {
  // Rank 0 writes 64 KiB payloads into rank 1's slot as fast as it can; rank 1 reads at the same
  // time and checks that every accepted copy is entirely one write's pattern.
  // Under a sanitizer a tenth of the writes: instrumented 64 KiB copies are ~20x slower. The
  // communicator's timeout exceeds the reader's 60 s deadline, so that the writer, done first,
  // still waits for the reader at the closing barrier.
  constexpr size_t kWords = 8192;
  constexpr uint64_t kWrites = sccl_test::kSanitizerBuild ? 2000 : 20000;
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  config.timeoutMs = 120000;
  std::atomic<uint64_t> accepted{0}, retries{0};
  auto failures = sccl_test::runLocalRanks(
      2,
      [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
        const sccl::SlotRegion region({kWords * 8});
        std::unique_ptr<sccl::Window> window;
        if (!log.checkResult(transportOf(comm).createWindow(region.bytes(), &window), scclSuccess,
                             "createWindow"))
          return;
        auto deadline = Clock::now() + std::chrono::seconds(60);
        if (rank == 0) {
          std::vector<uint64_t> payload;
          for (uint64_t v = 1; v <= kWrites; ++v) {
            payload = pattern(v, kWords);
            sccl::SlotWrite w{0, payload.data(), v, v};
            if (!log.checkResult(sccl::writeSlots(*window, 1, 0, region, &w, 1), scclSuccess,
                                 "write"))
              break;
          }
        } else {
          std::vector<uint64_t> out(kWords);
          void* outs[1] = {out.data()};
          uint64_t last = 0, torn = 0;
          sccl::SlotReadStats stats;
          while (last < kWrites && Clock::now() < deadline) {
            sccl::SlotCopy held;  // forget the copy: every read copies
            window->lock(1);
            scclResult_t r =
                sccl::readSlots(*window, 0, region, UINT64_MAX, outs, &held, &stats, deadline);
            window->unlock(1);
            if (!log.checkResult(r, scclSuccess, "read")) break;
            if (held.version == 0) continue;
            if (!log.check(held.version >= last, "versions never go back")) break;
            last = held.version;
            ++accepted;
            std::vector<uint64_t> want = pattern(held.version, kWords);
            if (std::memcmp(out.data(), want.data(), kWords * 8) != 0) ++torn;
          }
          retries += stats.retries;
          log.check(torn == 0, "accepted copies that were torn: " + std::to_string(torn));
          log.check(last == kWrites, "the reader saw the last write");
        }
        log.checkResult(transportOf(comm).barrier(), scclSuccess, "barrier");
      },
      &config);
  REQUIRE_NO_RANK_FAILURES(failures);
  INFO("accepted " << accepted.load() << " copies, retried " << retries.load());
  CHECK(accepted.load() > 0);
}
