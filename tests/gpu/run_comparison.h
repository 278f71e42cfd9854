// The comparison of a device run with the host run of the same ranks (multirank_runs.h), shared
// by the in-process test (test_gpu_multirank.cc) and the multi-process one (multiprocess/).
#pragma once

#include <cstring>
#include <string>

#include "bit_mismatch.h"
#include "multirank_runs.h"

namespace sccl_gpu_test {

// Whether the device call of `preset` runs other collectives than its host call: MiCRO, ExDyna
// and CLT-k on device buffers are resident (src/algorithms/resident_gather.cc) and exchange each
// rank's header and bins in one all-gather where the host all-gathers headers and all-reduces the
// bins; Top-k, the hard threshold and SIDCo run the resident union call
// (src/algorithms/resident_union.cc), whose slots carry a count word beside the header and whose
// threshold presets size their slots speculatively; S2 runs the resident sketch call
// (src/algorithms/sketch_call.cc), which all-gathers header and bitmap where the host
// all-gathers headers and all-reduces the bitmap; so their bytes differ. Everything else is the
// same bit for bit.
inline bool exchangesDifferFromHost(const char* preset) {
  // cltk's resident record: the 32-byte header and the leader's count, 40 bytes per rank.
  for (const char* resident :
       {"micro", "exdyna", "cltk", "topk", "hard_threshold", "sidco", "s2"})
    if (std::strcmp(preset, resident) == 0) return true;
  return false;
}

// One call of one rank: "" when equal bit for bit (result, output, residual, counts, threshold,
// k and, when compare_bytes, bytes), else the first difference, briefly.
inline std::string differenceBetween(const RankCallRecord& want, const RankCallRecord& got,
                                     const std::string& where, bool compare_bytes = true) {
  if (got.result != want.result)
    return where + ": " + scclGetErrorString(got.result) + " (" + got.error + "), host " +
           scclGetErrorString(want.result) + " (" + want.error + ")";
  if (want.result != scclSuccess) return "";
  std::string m = bitMismatch(where + " output", want.output, got.output);
  if (m.empty()) m = bitMismatch(where + " residual", want.residual, got.residual);
  if (m.empty() && got.counts != want.counts) m = where + ": rank counts differ";
  if (!m.empty()) return m;
  const scclSparseStats_t& a = want.stats;
  const scclSparseStats_t& b = got.stats;
  if (std::memcmp(&a.threshold, &b.threshold, sizeof(double)) != 0)
    return where + ": threshold " + bitPattern(b.threshold) + ", host " + bitPattern(a.threshold);
  const bool bytes_differ =
      compare_bytes && (a.bytesSent != b.bytesSent || a.bytesReceived != b.bytesReceived);
  if (a.kLocal != b.kLocal || a.kGlobal != b.kGlobal || bytes_differ)
    return where + ": k " + std::to_string(b.kLocal) + "/" + std::to_string(b.kGlobal) +
           " bytes " + std::to_string(b.bytesSent) + "/" + std::to_string(b.bytesReceived) +
           ", host " + std::to_string(a.kLocal) + "/" + std::to_string(a.kGlobal) + " " +
           std::to_string(a.bytesSent) + "/" + std::to_string(a.bytesReceived);
  return "";
}

// Every call of every rank of two runs.
inline std::string differenceBetween(const MultiRankRun& host, const MultiRankRun& device,
                                     bool compare_bytes = true) {
  for (size_t t = 0; t < host.calls.size(); ++t)
    for (size_t r = 0; r < host.calls[t].size(); ++r) {
      const std::string d = differenceBetween(
          host.calls[t][r], device.calls[t][r],
          "call " + std::to_string(t) + " rank " + std::to_string(r), compare_bytes);
      if (!d.empty()) return d;
    }
  return "";
}

}  // namespace sccl_gpu_test
