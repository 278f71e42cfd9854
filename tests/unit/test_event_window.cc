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

#include "core/comm.h"
#include "support/local_ranks.h"
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
    const size_t words = 5;  // 40 bytes: the padding of odd payloads is exercised below
    std::unique_ptr<sccl::Window> window;
    if (!log.checkResult(transportOf(comm).createWindow(sccl::slotBytes(36), &window), scclSuccess,
                         "createWindow"))
      return;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    std::vector<uint64_t> out(words, 0);
    sccl::SlotRead read;
    auto readAt = [&](uint64_t max_pass, uint64_t known) {
      log.checkResult(window->lock(0), scclSuccess, "lock");
      scclResult_t r = sccl::readSlot(*window, 0, 36, max_pass, known, out.data(), &read, deadline);
      log.checkResult(window->unlock(0), scclSuccess, "unlock");
      return r;
    };
    log.checkResult(readAt(UINT64_MAX, 0), scclSuccess, "read empty");
    log.check(read.empty, "a fresh slot is empty");
    auto write = [&](uint64_t version, uint64_t pass) {
      std::vector<uint64_t> payload = pattern(version, words);
      sccl::SlotWrite w{0, payload.data(), 36, version, pass};
      log.checkResult(sccl::writeSlots(*window, 0, &w, 1), scclSuccess, "write");
    };
    write(1, 5);
    log.checkResult(readAt(4, 0), scclSuccess, "read before the first pass");
    log.check(read.empty, "a copy from a later pass is not used");
    write(2, 7);
    log.checkResult(readAt(6, 0), scclSuccess, "read up to pass 6");
    log.check(!read.empty && read.version == 1 && read.pass == 5 && read.copied, "write 1 chosen");
    log.check(std::memcmp(out.data(), pattern(1, words).data(), 36) == 0, "write 1's payload");
    log.checkResult(readAt(UINT64_MAX, 1), scclSuccess, "read newest");
    log.check(read.version == 2 && read.pass == 7 && read.copied, "write 2 chosen");
    log.check(std::memcmp(out.data(), pattern(2, words).data(), 36) == 0, "write 2's payload");
    log.checkResult(readAt(UINT64_MAX, 2), scclSuccess, "read known");
    log.check(read.version == 2 && !read.copied, "a known version is not copied again");
    // Two writes tagged above max_pass: the writer broke the one-write-per-pass rule.
    write(3, 8);
    log.checkResult(readAt(6, 0), scclRemoteError, "protocol violation");
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("slot reads never accept a torn tensor while puts continue", "[event][window]") {
  // Rank 0 writes 64 KiB payloads into rank 1's slot as fast as it can; rank 1 reads at the same
  // time and checks that every accepted copy is entirely one write's pattern.
  constexpr size_t kWords = 8192;
  constexpr uint64_t kWrites = 20000;
  std::atomic<uint64_t> accepted{0}, retries{0};
  auto failures =
      sccl_test::runLocalRanks(2, [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
        std::unique_ptr<sccl::Window> window;
        if (!log.checkResult(transportOf(comm).createWindow(sccl::slotBytes(kWords * 8), &window),
                             scclSuccess, "createWindow"))
          return;
        auto deadline = Clock::now() + std::chrono::seconds(60);
        if (rank == 0) {
          std::vector<uint64_t> payload;
          for (uint64_t v = 1; v <= kWrites; ++v) {
            payload = pattern(v, kWords);
            sccl::SlotWrite w{0, payload.data(), kWords * 8, v, v};
            if (!log.checkResult(sccl::writeSlots(*window, 1, &w, 1), scclSuccess, "write")) break;
          }
        } else {
          std::vector<uint64_t> out(kWords);
          uint64_t last = 0, torn = 0;
          while (last < kWrites && Clock::now() < deadline) {
            sccl::SlotRead read;
            window->lock(1);
            scclResult_t r =
                sccl::readSlot(*window, 0, kWords * 8, UINT64_MAX, 0, out.data(), &read, deadline);
            window->unlock(1);
            if (!log.checkResult(r, scclSuccess, "read")) break;
            retries += read.retries;
            if (read.empty) continue;
            if (!log.check(read.version >= last, "versions never go back")) break;
            last = read.version;
            ++accepted;
            std::vector<uint64_t> want = pattern(read.version, kWords);
            if (std::memcmp(out.data(), want.data(), kWords * 8) != 0) ++torn;
          }
          log.check(torn == 0, "accepted copies that were torn: " + std::to_string(torn));
          log.check(last == kWrites, "the reader saw the last write");
        }
        log.checkResult(transportOf(comm).barrier(), scclSuccess, "barrier");
      });
  REQUIRE_NO_RANK_FAILURES(failures);
  INFO("accepted " << accepted.load() << " copies, retried " << retries.load());
  CHECK(accepted.load() > 0);
}
