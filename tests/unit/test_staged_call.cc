// The gather and sketch reductions as the device path runs them (algorithms/staged_call.h:
// accumulator outside the sparsifier, index, value and count arrays staged through DeviceStaging),
// here with the CPU kernels and a staging whose "device" buffers are separate host copies that are
// poisoned whenever they grow: any copy the reduction forgot, or made too short, shows up as a
// difference from the plain host run. Outputs, residuals and counts must be bitwise the host run's
// for every gather preset, scclAvg, max_density_slack, non-finite steps, and S2's block selections
// and feedback modes. (The CUDA staging itself is cuda/device_staging_cuda.cc; the GPU suite
// compares the device run.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/call_header.h"
#include "algorithms/staged_call.h"
#include "core/divide_by_ranks.h"
#include "sparsifier/sparsifier.h"
#include "support/local_ranks.h"
#include "support/sparse_runs.h"

using namespace sccl_test;

namespace {

// Host memory playing device memory: separate buffers, copies counted, growth poisoned.
class CopyingStaging final : public sccl::DeviceStaging {
 public:
  scclResult_t buffer(Buffer which, size_t bytes, void** out) override {
    std::vector<unsigned char>& b = buffers_[which];
    if (b.size() < bytes) b.assign(bytes, 0xA5);  // growth loses the contents, as on the GPU
    *out = b.data();
    return scclSuccess;
  }
  scclResult_t hostBuffer(HostBuffer which, size_t bytes, void** out) override {
    std::vector<unsigned char>& b = host_[which];
    if (b.size() < bytes) b.assign(bytes, 0x5A);
    *out = b.data();
    return scclSuccess;
  }
  scclResult_t toHost(void* host, const void* device, size_t bytes) override {
    if (bytes > 0) std::memcpy(host, device, bytes);
    ++copies;
    return scclSuccess;
  }
  scclResult_t readBack(void* host, const void* device, size_t bytes) override {
    return toHost(host, device, bytes);
  }
  scclResult_t toDevice(void* device, const void* host, size_t bytes) override {
    if (bytes > 0) std::memcpy(device, host, bytes);
    ++copies;
    return scclSuccess;
  }
  scclResult_t copyOnDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
    return scclSuccess;
  }
  scclResult_t synchronize() override { return scclSuccess; }
  scclResult_t fillNaN(void* recvbuf, size_t count, scclDataType_t dtype) override {
    sccl::fillWithNaN(recvbuf, count, dtype);
    return scclSuccess;
  }
  scclResult_t divideByRanks(void* x, size_t count, scclDataType_t dtype, int nranks) override {
    return sccl::divideByRanks(x, count, dtype, nranks);
  }
  size_t copies = 0;

 private:
  std::vector<unsigned char> buffers_[kBufferCount];
  std::vector<unsigned char> host_[kHostBufferCount];
};

struct StagedRun {
  std::vector<std::vector<RankIteration>> calls;  // [iteration][rank]
  std::vector<std::string> failures;
  size_t copies = 0;
};

StagedRun runStaged(int nranks, size_t count, const scclSparseConfig_t& config, int iterations,
                    const GradientFn& gradient, scclRedOp_t op) {
  StagedRun run;
  run.calls.assign(size_t(iterations), std::vector<RankIteration>(size_t(nranks)));
  std::vector<size_t> copies(size_t(nranks), 0);
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    std::vector<float> residual(count, 0.0f), acc(count), grad(count), out(count);
    uint64_t nonfinite = 0;
    sccl::StagedVectors vectors{residual.data(), acc.data(), &nonfinite};
    CopyingStaging staging;
    for (int t = 0; t < iterations; ++t) {
      for (size_t i = 0; i < count; ++i) grad[i] = gradient(rank, uint64_t(t), i);
      const sccl::ReductionContext ctx = sccl::reductionContext(*sp);
      sccl::SparseCall call;
      call.ctx = &ctx;
      call.sendbuf = grad.data();
      call.recvbuf = out.data();
      call.op = op;
      RankIteration& record = run.calls[size_t(t)][size_t(rank)];
      record.result = sccl::runStagedCall(call, sccl::cpuKernels(), staging, vectors, nullptr);
      if (record.result == scclSuccess && !call.step_discarded) ++sp->iteration;
      record.output = out;
      const float* now = static_cast<const float*>(vectors.residual);
      record.residual.assign(now, now + count);
      record.counts = sp->reduction_memory.rank_counts;
      record.stats.kGlobal = call.k_global;
      record.stats.bytesSent = call.bytes_sent;
    }
    copies[size_t(rank)] = staging.copies;
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  for (size_t c : copies) run.copies += c;
  return run;
}

// The host runs the gather reduction's configs as the union call (resident_union.cc) unless the
// resident gather takes them (an exclusive search with a threshold known before the data, or
// CLT-k's leader) or max_density_slack caps: its slot carries a
// 40-byte header where the staged reduction sends a 32-byte call header, so top-k sends 8 bytes
// more from each rank per call, and a threshold, whose headers go first in slots of their own,
// 48; everything else is the same.
uint64_t unionHeaderBytes(const scclSparseConfig_t& config) {
  const std::string preset = config.algorithm;
  std::string estimator = config.estimator != nullptr ? config.estimator : "";
  if (estimator.empty()) {
    estimator = preset == "topk" || preset == "cltk" ? "topk"
                : preset == "hard_threshold"         ? "fixed"
                : preset == "sidco"                  ? "sidco_exp"
                                                     : "scaling";
  }
  const bool gather = preset == "micro" || preset == "exdyna" || preset == "topk" ||
                      preset == "hard_threshold" || preset == "sidco";
  const bool exclusive = preset == "micro" || preset == "exdyna";
  if (!gather || config.maxDensitySlack >= 0) return 0;
  if (exclusive && (estimator == "scaling" || estimator == "fixed")) return 0;
  return estimator == "topk" ? 8 : 48;
}

void requireSameAsHost(const char* what, int nranks, size_t count, const scclSparseConfig_t& config,
                       int iterations, const GradientFn& gradient, scclRedOp_t op) {
  INFO(what);
  SparseRun host = runSparse(nranks, count, config, iterations, gradient, op);
  StagedRun staged = runStaged(nranks, count, config, iterations, gradient, op);
  REQUIRE_NO_RANK_FAILURES(host.failures);
  REQUIRE_NO_RANK_FAILURES(staged.failures);
  CHECK(staged.copies > 0);
  const uint64_t header_difference = unionHeaderBytes(config);
  for (size_t t = 0; t < size_t(iterations); ++t) {
    for (size_t r = 0; r < size_t(nranks); ++r) {
      INFO("call " << t << " rank " << r);
      const RankIteration& want = host.calls[t][r];
      const RankIteration& got = staged.calls[t][r];
      REQUIRE(got.result == want.result);
      CHECK(std::memcmp(got.output.data(), want.output.data(), count * 4) == 0);
      CHECK(std::memcmp(got.residual.data(), want.residual.data(), count * 4) == 0);
      CHECK(got.counts == want.counts);
      if (want.result == scclSuccess && !std::isnan(want.output[0])) {
        CHECK(got.stats.kGlobal == want.stats.kGlobal);
        CHECK(got.stats.bytesSent + header_difference == want.stats.bytesSent);
      }
    }
  }
}

}  // namespace

TEST_CASE("staged gather reduction equals the host run bit for bit", "[staged_call]") {
  const size_t count = 20011;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    return gradientValue(37, r, t, i) * (i < 4000 ? 6.0f : 1.0f);
  };
  for (const char* preset : {"micro", "exdyna", "topk", "cltk", "hard_threshold", "sidco"}) {
    scclSparseConfig_t config = sparseConfig(preset, 0.01);
    requireSameAsHost(preset, 3, count, config, 6, gradient, scclSum);
  }
  for (const char* estimator : {"redsync", "gaussiank", "dgc"}) {
    scclSparseConfig_t config = sparseConfig("topk", 0.01);
    config.estimator = estimator;
    requireSameAsHost(estimator, 3, count, config, 4, gradient, scclSum);
  }
  // Exclusive searches with an estimator fitted to the call's data: the union call on the host
  // (disjoint slices, merged), the staged reduction's appended lists here.
  for (const char* preset : {"micro", "exdyna"}) {
    for (const char* estimator : {"topk", "sidco_exp", "gaussiank", "redsync"}) {
      scclSparseConfig_t config = sparseConfig(preset, 0.01);
      config.estimator = estimator;
      INFO("search " << preset);
      requireSameAsHost(estimator, 3, count, config, 5, gradient, scclSum);
    }
  }
  // DGC's other branches: a sample of the whole range, whose threshold is kept as it is, and a
  // trim among the selected entries (more than 4k/3 but at most n/4 pass the sampled threshold).
  scclSparseConfig_t dgc_kept = sparseConfig("topk", 0.01);
  dgc_kept.estimator = "dgc";
  dgc_kept.dgcSampleRatio = 1.0;
  requireSameAsHost("dgc sample ratio 1", 3, count, dgc_kept, 4, gradient, scclSum);
  scclSparseConfig_t dgc_trim = sparseConfig("topk", 0.05);
  dgc_trim.estimator = "dgc";
  dgc_trim.dgcSampleRatio = 0.02;
  requireSameAsHost("dgc density 0.05 sample ratio 0.02", 3, count, dgc_trim, 4, gradient,
                    scclSum);
  scclSparseConfig_t capped = sparseConfig("exdyna", 0.01);
  capped.maxDensitySlack = 0.0;
  requireSameAsHost("exdyna max_density_slack 0 scclAvg", 3, count, capped, 6, gradient, scclAvg);
  scclSparseConfig_t adam_cap = sparseConfig("micro", 0.01);
  adam_cap.maxDensitySlack = 1.0;
  requireSameAsHost("micro max_density_slack 1", 4, count, adam_cap, 6, gradient, scclSum);
  adam_cap.maxDensitySlack = 0.0;
  requireSameAsHost("micro max_density_slack 0", 4, count, adam_cap, 6, gradient, scclSum);
  scclSparseConfig_t topk_avg = sparseConfig("topk", 0.001);
  requireSameAsHost("topk density 0.001 scclAvg", 2, count, topk_avg, 4, gradient, scclAvg);
}

TEST_CASE("staged sketch reduction equals the host run bit for bit", "[staged_call]") {
  const size_t count = 12007;
  GradientFn dense = [](int r, uint64_t t, size_t i) {
    return gradientValue(43, r, t, i) * (i % 1000 < 64 ? 5.0f : 1.0f);
  };
  requireSameAsHost("s2 topk blocks", 3, count, sparseConfig("s2", 0.01), 5, dense, scclSum);
  scclSparseConfig_t decode_error = sparseConfig("s2", 0.02);
  decode_error.sketchFeedback = "decode_error";
  requireSameAsHost("s2 decode_error feedback scclAvg", 3, count, decode_error, 5, dense, scclAvg);
  // Embedding-like gradients: a few rows of 32 touched per call, the rest exactly zero.
  GradientFn rows = [](int r, uint64_t t, size_t i) {
    const size_t row = i / 32;
    return (row * 7 + size_t(r) * 3 + size_t(t)) % 41 == 0 ? gradientValue(47, r, t, i) : 0.0f;
  };
  scclSparseConfig_t nonzero = sparseConfig("s2", 0.05);
  nonzero.sketchBlockSelection = "nonzero";
  requireSameAsHost("s2 nonzero blocks", 3, count, nonzero, 5, rows, scclSum);
}

TEST_CASE("staged gather reduction discards a non finite step as the host run", "[staged_call]") {
  const size_t count = 5003;
  GradientFn gradient = [](int r, uint64_t t, size_t i) {
    if (r == 1 && t == 2 && i == 17) return std::numeric_limits<float>::infinity();
    return gradientValue(41, r, t, i);
  };
  requireSameAsHost("micro with an inf on rank 1 at call 2", 3, count, sparseConfig("micro", 0.01),
                    5, gradient, scclSum);
  scclSparseConfig_t strict = sparseConfig("topk", 0.01);
  strict.nonFinite = scclNonFiniteError;
  requireSameAsHost("topk with the error policy", 3, count, strict, 4, gradient, scclSum);
  requireSameAsHost("s2 with an inf on rank 1 at call 2", 3, count, sparseConfig("s2", 0.01), 5,
                    gradient, scclSum);
}
