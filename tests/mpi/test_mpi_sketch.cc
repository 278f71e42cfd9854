// The sketch reduction (preset s2) over MPI on every rank of the job (mpiexec -n 1..4): each rank
// computes every rank's gradient from (seed, rank, call, index), runs the model of
// support/sketch_reference.h itself and checks its output, residual and rank counts bitwise;
// the outputs of all ranks are all-gathered and compared.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "sparsifier/sparsifier.h"
#include "mpi_test_support.h"
#include "sparsecoll/sparsecoll.h"
#include "support/sketch_reference.h"
#include "support/sparse_runs.h"

using namespace sccl_mpi_test;

namespace {

// Rows of 16 elements, each rank touching about half of them.
float rowGradient(int rank, uint64_t t, size_t i) {
  if (sccl::sketchMix(uint64_t(rank) << 48 ^ t << 40 ^ uint64_t(i / 16)) % 2 != 0) return 0.0f;
  return sccl_test::gradientValue(67, rank, t, i);
}

void checkSketch(scclComm_t comm, size_t count, const char* selection, const char* feedback,
                 scclRedOp_t op) {
  const int rank = worldRank(), nranks = worldSize();
  scclSparseConfig_t config = sccl_test::sparseConfig("s2", 0.05);
  config.sketchBlockSize = 16;
  config.sketchBlockSelection = selection;
  config.sketchFeedback = feedback;
  scclSparsifier_t sp = nullptr;
  REQUIRE(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config) == scclSuccess);
  sccl_test::SketchModelConfig m;
  m.count = count;
  m.block = 16;
  m.k = std::max<uint64_t>(1, uint64_t(std::floor(0.05 * double(count))));
  m.nonzero = std::strcmp(selection, "nonzero") == 0;
  m.decode_error = std::strcmp(feedback, "decode_error") == 0;
  sccl_test::SketchReference<float> model(m, nranks);
  std::vector<float> grad(count), out(count), all(count * size_t(nranks));
  std::vector<uint64_t> counts(static_cast<size_t>(nranks));
  for (int t = 0; t < 4; ++t) {
    INFO(selection << " " << feedback << " count " << count << " call " << t << " rank " << rank
                   << " of " << nranks);
    for (size_t i = 0; i < count; ++i) grad[i] = rowGradient(rank, uint64_t(t), i);
    REQUIRE(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, op, sp, comm,
                                nullptr) == scclSuccess);
    REQUIRE(scclSparsifierGetRankCounts(sp, counts.data(), nranks) == scclSuccess);
    REQUIRE(scclAllGather(out.data(), all.data(), count, scclFloat32, comm, nullptr) ==
            scclSuccess);
    for (int r = 0; r < nranks; ++r)
      CHECK(std::memcmp(&all[size_t(r) * count], out.data(), count * sizeof(float)) == 0);
    std::vector<std::vector<float>> grads(static_cast<size_t>(nranks), std::vector<float>(count));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) grads[size_t(r)][i] = rowGradient(r, uint64_t(t), i);
    sccl_test::SketchModelCall<float> want = model.step(grads, op == scclAvg);
    CHECK(std::memcmp(out.data(), want.output.data(), count * sizeof(float)) == 0);
    CHECK(counts == want.counts);
    const float* residual = static_cast<const float*>(sp->residual.data());
    CHECK(std::memcmp(residual, model.residual(rank).data(), count * sizeof(float)) == 0);
  }
  CHECK(scclSparsifierDestroy(sp) == scclSuccess);
}

}  // namespace

TEST_CASE("mpi sketch: s2 is bitwise the model and the same on every rank", "[mpi][sketch]") {
  scclComm_t comm = nullptr;
  REQUIRE(scclCommInitMpi(&comm, nullptr, nullptr) == scclSuccess);
  for (size_t count : {size_t(1), size_t(1000), size_t(4099)}) {
    checkSketch(comm, count, "topk", "unselected", scclSum);
    checkSketch(comm, count, "nonzero", "decode_error", scclAvg);
  }
  CHECK(scclCommDestroy(comm) == scclSuccess);
}
