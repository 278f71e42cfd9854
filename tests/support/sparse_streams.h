// Long gradient streams through scclSparseAllreduce on in-process ranks, recording per call and
// rank only the statistics and the rank counts (not the outputs: a few hundred calls of 100k-
// element vectors would not fit), for density-control and load-balance tests. Also the real
// gradient traces (tests/data/traces) arranged as one stream per worker.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/gradient_trace.h"
#include "support/local_ranks.h"

namespace sccl_test {

struct StreamCall {
  scclResult_t result = scclSuccess;
  scclSparseStats_t stats{};
  std::vector<uint64_t> counts;  // k_i of every rank
};

struct StreamRun {
  std::vector<std::vector<StreamCall>> calls;  // [call][rank]
  std::vector<std::string> failures;
};

// Fills rank `rank`'s float32 gradient of call t (count elements).
using GradientFill = std::function<void(int rank, uint64_t t, float* grad)>;

inline StreamRun runSparseStream(int nranks, size_t count, const scclSparseConfig_t& config,
                                 int calls, const GradientFill& fill) {
  StreamRun run;
  run.calls.assign(size_t(calls), std::vector<StreamCall>(size_t(nranks)));
  run.failures = runLocalRanks(nranks, [&](int rank, scclComm_t comm, RankLog& log) {
    scclSparsifier_t sp = nullptr;
    if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config), scclSuccess,
                         "scclSparsifierCreate"))
      return;
    std::vector<float> grad(count), out(count);
    for (int t = 0; t < calls; ++t) {
      fill(rank, uint64_t(t), grad.data());
      StreamCall& record = run.calls[size_t(t)][size_t(rank)];
      record.result = scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32, scclSum, sp,
                                          comm, nullptr);
      if (!log.checkResult(record.result, scclSuccess,
                           "scclSparseAllreduce call " + std::to_string(t)))
        break;
      record.counts.resize(size_t(nranks));
      log.checkResult(scclSparsifierGetRankCounts(sp, record.counts.data(), nranks), scclSuccess,
                      "scclSparsifierGetRankCounts");
      record.stats.size = sizeof(scclSparseStats_t);
      log.checkResult(scclSparsifierGetStats(sp, &record.stats), scclSuccess,
                      "scclSparsifierGetStats");
    }
    log.checkResult(scclSparsifierDestroy(sp), scclSuccess, "scclSparsifierDestroy");
  });
  return run;
}

// Mean over calls [from, to) of |k'/k - 1| (k' = kGlobal, k = kTarget), seen by rank 0.
inline double meanAbsDensityError(const StreamRun& run, size_t from, size_t to) {
  double sum = 0;
  for (size_t t = from; t < to; ++t) {
    const scclSparseStats_t& s = run.calls[t][0].stats;
    sum += std::fabs(double(s.kGlobal) / double(s.kTarget) - 1.0);
  }
  return sum / double(to - from);
}

// Mean over calls [from, to) of k'/k, seen by rank 0.
inline double meanDensityRatio(const StreamRun& run, size_t from, size_t to) {
  double sum = 0;
  for (size_t t = from; t < to; ++t) {
    const scclSparseStats_t& s = run.calls[t][0].stats;
    sum += double(s.kGlobal) / double(s.kTarget);
  }
  return sum / double(to - from);
}

// Mean over calls [from, to) of the gather inflation f(t) = n max k_i / k', seen by rank 0.
inline double meanGatherInflation(const StreamRun& run, size_t from, size_t to) {
  double sum = 0;
  for (size_t t = from; t < to; ++t) sum += run.calls[t][0].stats.gatherInflation;
  return sum / double(to - from);
}

// The committed traces as streams: traces[w] = worker w's gradients in iteration order, and
// *iterations (if given) those iterations. Empty on failure, with *error naming the problem.
inline std::vector<std::vector<std::vector<float>>> loadTraceStreams(
    const std::string& dir, std::string* error, std::vector<uint32_t>* iterations = nullptr) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  std::map<uint32_t, std::map<uint32_t, std::vector<float>>> by_worker;  // worker -> iteration
  uint32_t workers = 0;
  for (const std::string& path : listGradientTraces(dir)) {
    GradientTrace trace;
    if (!loadGradientTrace(path, &trace, error)) return {};
    workers = trace.workers;
    by_worker[trace.worker][trace.iteration] = std::move(trace.values);
  }
  if (workers == 0 || by_worker.size() != workers) {
    *error = "no complete worker set of traces in " + dir;
    return {};
  }
  std::vector<std::vector<std::vector<float>>> streams(workers);
  for (auto& [worker, by_iteration] : by_worker) {
    std::vector<uint32_t> order;
    for (auto& [iteration, values] : by_iteration) {
      order.push_back(iteration);
      streams[worker].push_back(std::move(values));
    }
    if (worker == 0 && iterations != nullptr) *iterations = order;
    if (iterations != nullptr && order != *iterations) {
      *error = "workers have traces of different iterations in " + dir;
      return {};
    }
    if (streams[worker].size() != streams[0].size()) {
      *error = "workers have different numbers of traces in " + dir;
      return {};
    }
  }
  return streams;
}

}  // namespace sccl_test
