// Checkpoints of "hierarchy": "node" sparsifiers on in-process ranks in nodes of two (CTest
// node_hierarchy_local sets SCCL_RANKS_PER_NODE=2; hidden tag, as the setting is read once per
// process): a sparsifier resumed from every rank's blob continues bit for bit as the one that
// wrote them; a corrupted blob on one rank, a blob loaded on the wrong rank, blobs of different
// saves and a flat sparsifier's blob are refused on every rank of every node, and nothing changes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/local_ranks.h"
#include "support/node_hierarchy_inputs.h"

using sccl_test::configOf;
using sccl_test::RankLog;
using sccl_test::requireNodesOfTwo;
using sccl_test::runLocalRanks;

namespace {

using Blob = std::vector<unsigned char>;

bool callOnce(scclSparsifier_t sp, scclComm_t comm, int rank, int t, size_t count,
              std::vector<float>* out, RankLog& log) {
  std::vector<float> send(count);
  for (size_t i = 0; i < count; ++i) send[i] = sccl_test::nodeTestGradient(rank, t, i);
  out->assign(count, -3.0f);
  return log.checkResult(
      scclSparseAllreduce(send.data(), out->data(), count, scclFloat32, scclSum, sp, comm, nullptr),
      scclSuccess, "call " + std::to_string(t));
}

bool exportBlob(scclSparsifier_t sp, Blob* blob, RankLog& log) {
  size_t bytes = 0, written = 0;
  if (!log.checkResult(scclSparsifierGetStateSize(sp, &bytes), scclSuccess, "state size"))
    return false;
  blob->assign(bytes, 0);
  return log.checkResult(scclSparsifierExportState(sp, blob->data(), bytes, &written), scclSuccess,
                         "export") &&
         log.check(written == bytes, "export wrote the size it announced");
}

uint64_t iterationOf(scclSparsifier_t sp) {
  scclSparseStats_t s{};
  s.size = sizeof(s);
  scclSparsifierGetStats(sp, &s);
  return s.iteration;
}

}  // namespace

TEST_CASE("hierarchy node: a checkpoint resumes bit for bit", "[.hierarchy]") {
  requireNodesOfTwo();
  const size_t count = 5001;  // odd: the last local rank's chunk is shorter, the input padded
  for (const char* json : {R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})",
                           R"({"algorithm": "exdyna", "density": 0.02, "hierarchy": "node"})",
                           R"({"algorithm": "topk", "density": 0.01, "hierarchy": "node",
                               "density_warmup": {"start": 0.2, "calls": 6}})"}) {
    DYNAMIC_SECTION(json) {
      const scclSparseConfig_t config = configOf(json);
      auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
        scclSparsifier_t writer = nullptr, resumed = nullptr;
        if (!log.checkResult(scclSparsifierCreate(&writer, comm, count, scclFloat32, &config),
                             scclSuccess, "create writer") ||
            !log.checkResult(scclSparsifierCreate(&resumed, comm, count, scclFloat32, &config),
                             scclSuccess, "create resumed"))
          return;
        std::vector<float> out;
        for (int t = 0; t < 3; ++t)
          if (!callOnce(writer, comm, rank, t, count, &out, log)) return;
        Blob blob;
        if (!exportBlob(writer, &blob, log)) return;
        if (!log.checkResult(scclSparsifierImportState(resumed, blob.data(), blob.size()),
                             scclSuccess, "import"))
          return;
        log.check(iterationOf(resumed) == 3, "the resumed sparsifier is at call 3");
        for (int t = 3; t < 7; ++t) {
          std::vector<float> want, got;
          if (!callOnce(writer, comm, rank, t, count, &want, log) ||
              !callOnce(resumed, comm, rank, t, count, &got, log))
            return;
          log.check(std::memcmp(want.data(), got.data(), count * sizeof(float)) == 0,
                    "call " + std::to_string(t) + ": the resumed output is the writer's, bitwise");
        }
        Blob after_writer, after_resumed;
        if (exportBlob(writer, &after_writer, log) && exportBlob(resumed, &after_resumed, log))
          log.check(after_writer.size() == after_resumed.size(),
                    "both sparsifiers' states have one size after the same calls");
        scclSparsifierDestroy(writer);
        scclSparsifierDestroy(resumed);
      });
      REQUIRE_NO_RANK_FAILURES(failures);
    }
  }
}

TEST_CASE("hierarchy node: a refused checkpoint fails every rank and changes nothing",
          "[.hierarchy]") {
  requireNodesOfTwo();
  const size_t count = 4000;
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "micro", "density": 0.01, "hierarchy": "node"})");
  const scclSparseConfig_t flat = configOf(R"({"algorithm": "micro", "density": 0.01})");
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t writer = nullptr, flat_writer = nullptr, target = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&writer, comm, count, scclFloat32, &hier),
                         scclSuccess, "create") ||
        !log.checkResult(scclSparsifierCreate(&flat_writer, comm, count, scclFloat32, &flat),
                         scclSuccess, "create flat") ||
        !log.checkResult(scclSparsifierCreate(&target, comm, count, scclFloat32, &hier),
                         scclSuccess, "create target"))
      return;
    std::vector<float> out;
    for (int t = 0; t < 2; ++t) {
      callOnce(writer, comm, rank, t, count, &out, log);
      callOnce(flat_writer, comm, rank, t, count, &out, log);
    }
    Blob mine, flat_blob, next;
    if (!exportBlob(writer, &mine, log) || !exportBlob(flat_writer, &flat_blob, log)) return;
    callOnce(writer, comm, rank, 2, count, &out, log);
    if (!exportBlob(writer, &next, log)) return;

    auto refused = [&](const Blob& blob, scclResult_t expected, const std::string& what) {
      log.checkResult(scclSparsifierImportState(target, blob.data(), blob.size()), expected, what);
      log.check(iterationOf(target) == 0, what + ": the target is still at call 0");
    };
    // Rank 3 (node 1, local rank 1) holds a corrupted blob: its own error there, every other
    // rank of both nodes refuses too.
    Blob corrupted = mine;
    corrupted[corrupted.size() - 5] ^= 0x40;
    refused(rank == 3 ? corrupted : mine, rank == 3 ? scclInvalidArgument : scclInvalidUsage,
            "one corrupted blob");
    // A flat sparsifier's blob: another configuration.
    refused(flat_blob, scclInvalidArgument, "a flat sparsifier's blob");
    // Blobs of two saves: ranks 0 and 1 (node 0) from call 2, the others from call 3.
    refused(rank < 2 ? mine : next, scclInvalidUsage, "blobs of different saves");
    // The target still works, and then loads the good blobs.
    callOnce(target, comm, rank, 0, count, &out, log);
    scclSparsifierReset(target);
    log.checkResult(scclSparsifierImportState(target, mine.data(), mine.size()), scclSuccess,
                    "the good blobs");
    log.check(iterationOf(target) == 2, "loaded at call 2");
    scclSparsifierDestroy(writer);
    scclSparsifierDestroy(flat_writer);
    scclSparsifierDestroy(target);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}

TEST_CASE("hierarchy node: a blob loaded on another rank is refused everywhere", "[.hierarchy]") {
  requireNodesOfTwo();
  const size_t count = 3000;
  const scclSparseConfig_t hier =
      configOf(R"({"algorithm": "exdyna", "density": 0.01, "hierarchy": "node"})");
  std::vector<Blob> blobs(4);
  auto failures = runLocalRanks(4, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &hier), scclSuccess,
                         "create"))
      return;
    std::vector<float> out;
    callOnce(sp, comm, rank, 0, count, &out, log);
    exportBlob(sp, &blobs[size_t(rank)], log);
    scclBarrier(comm);
    // Ranks 1 and 2 swap blobs (local rank 1 of node 0 and local rank 0 of node 1).
    const int from = rank == 1 ? 2 : rank == 2 ? 1 : rank;
    const Blob& blob = blobs[size_t(from)];
    const scclResult_t result = scclSparsifierImportState(sp, blob.data(), blob.size());
    log.checkResult(result, rank == 1 || rank == 2 ? scclInvalidArgument : scclInvalidUsage,
                    "swapped blobs");
    log.check(iterationOf(sp) == 1, "still at call 1");
    log.checkResult(
        scclSparsifierImportState(sp, blobs[size_t(rank)].data(), blobs[size_t(rank)].size()),
        scclSuccess, "each rank's own blob");
    scclSparsifierDestroy(sp);
  });
  REQUIRE_NO_RANK_FAILURES(failures);
}
