#include "tuning/auto_choice.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "algorithms/algorithm.h"
#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "comm/node_split.h"
#include "core/patient_wait.h"
#include "sparsifier/sparse_config.h"
#include "tuning/call_shape.h"
#include "tuning/compute_calibration.h"

namespace sccl {
namespace {

// Local work is calibrated on at most this many elements (and scaled linearly): probe and
// calibration then cost 20-31 ms with 4 in-process ranks on this project's 2-vCPU guests
// (docs/results/cost_model.md); 256K elements cost 110-160 ms. 64K float32 arrays fit in L2,
// so memory-bound work is undercharged.
constexpr uint64_t kCalibrationElements = 64 * 1024;
constexpr int kCalibrationCalls = 3;
constexpr uint64_t kCannotRun = std::numeric_limits<uint64_t>::max();
// Marks the agreement record of an "auto" creation, so that it never equals a preset's.
constexpr uint64_t kAutoTag = 0x6175746f63686f73ull;  // "autochos"

// A candidate's config: the caller's settings with this preset, flat (the hierarchical form is
// the same preset across nodes, sparsifier/node_hierarchy.h).
scclSparseConfig_t withAlgorithm(const scclSparseConfig_t& config, const char* algorithm) {
  scclSparseConfig_t copy = config;
  copy.algorithm = algorithm;
  copy.hierarchy = "flat";
  return copy;
}

// Step 1: the same "auto" request (count, dtype, every setting, the hierarchies allowed, the link
// settings) on every rank.
scclResult_t agreeOnAutoCreation(scclComm* comm, size_t count, scclDataType_t dtype,
                                 const AutoCandidateConfigs& configs, const GivenLink& given) {
  const ResolvedSparseConfig& settings = configs.resolved.front();
  CallRecord record = callRecord(CallOperation::SparsifierCreate);
  record.count = count;
  record.dtype = static_cast<int16_t>(dtype);
  // Ranks that were given different links would measure different things (one probing while
  // another skips): the settings are part of the request.
  const uint64_t hierarchies = (configs.flat ? 1u : 0u) | (configs.node ? 2u : 0u);
  record.config = sparseConfigFingerprint(settings, count, dtype) ^ kAutoTag ^
                  givenLinkFingerprint(given) ^ (hierarchies * 0x9e3779b97f4a7c15ull);
  char detail[160];
  std::snprintf(detail, sizeof(detail), "this rank's config: auto, density %g, link %s",
                settings.density, describeGivenLink(given).c_str());
  return agreeOnCall(comm, record, nullptr, detail);
}

// Step 3: each candidate's local work as rank 0 measured it (kCannotRun where it failed),
// broadcast: one machine's calibration at a time (ranks sharing a machine would slow each
// other's), and the same numbers on every rank. Not inlined: GCC 12 inlining it into
// chooseAlgorithm reports a false -Wfree-nonheap-object on its vectors.
[[gnu::noinline]] scclResult_t calibrateCandidates(scclComm* comm, size_t count,
                                                   scclDataType_t dtype,
                                                   const AutoCandidateConfigs& configs,
                                                   AutoChoice* choice) {
  const std::vector<const char*>& names = configs.names;
  std::vector<uint64_t> picoseconds(names.size(), kCannotRun);
  const uint64_t elements = std::min<uint64_t>(count, kCalibrationElements);
  if (elements > 0 && comm->rank == 0) {
    std::vector<double> seconds(names.size(), 0);
    std::vector<scclResult_t> results(names.size(), scclInternalError);
    // No early return: the other ranks wait in the broadcast below (a candidate that could not
    // be measured stays kCannotRun).
    calibrateResolvedBatch(configs.resolved.data(), names.size(), dtype, elements,
                           kCalibrationCalls, seconds.data(), results.data());
    for (size_t i = 0; i < names.size(); ++i) {
      if (results[i] == scclSuccess) picoseconds[i] = uint64_t(std::min(seconds[i] * 1e12, 1e18));
    }
  }
  if (elements == 0) std::fill(picoseconds.begin(), picoseconds.end(), 0);
  if (comm->nranks > 1) {
    // The other ranks wait here for rank 0's 10-40 ms of calibration: sleeping between polls
    // leaves rank 0 the cores they share, whatever the scheduler's groups (core/patient_wait.h).
    const PatientWaitScope patient(comm->rank != 0);
    SCCL_CHECK(commRecordFailure(
        comm,
        comm->transport->broadcast(picoseconds.data(), picoseconds.size() * sizeof(uint64_t), 0)));
  }
  choice->candidates.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    AutoCandidate candidate;
    candidate.algorithm = names[i];
    candidate.local_s_per_element =
        picoseconds[i] == kCannotRun ? -1.0 : double(picoseconds[i]) * 1e-12;
    choice->candidates.push_back(candidate);
  }
  return scclSuccess;
}

// Hierarchical candidates apply where the communicator has at least two nodes, all of the same
// rank count above one (every rank computes it from the same node map).
bool multiRankNodes(const scclComm& comm) {
  int nodes = 0, per_node = 0;
  bool equal = false;
  countNodes(comm, &nodes, &per_node, &equal);
  return equal && nodes >= 2 && per_node > 1;
}

// Femtoseconds per message and per byte: integers an all-reduce of maxima can agree on.
uint64_t femtoseconds(double seconds) {
  return uint64_t(std::clamp(seconds * 1e15, 0.0, 1e18));
}

// Each node probed its own inside link and each local index its own link across: the slowest of
// each over the communicator (the largest latency, the lowest rate), so that every rank prices
// the same links, those the call waits for.
scclResult_t agreeOnNodeLinks(scclComm* comm, AutoChoice* choice) {
  LinkModel& inside = choice->inside_probe.link;
  LinkModel& across = choice->across_probe.link;
  uint64_t words[4] = {femtoseconds(inside.latency_s), femtoseconds(1.0 / inside.bytes_per_s),
                       femtoseconds(across.latency_s), femtoseconds(1.0 / across.bytes_per_s)};
  SCCL_CHECK(commRecordFailure(
      comm, comm->transport->allReduce(words, words, 4, scclUint64, ReduceOp::Max)));
  auto rate = [](uint64_t fs_per_byte) {
    return fs_per_byte == 0 ? 1e18 : 1e15 / double(fs_per_byte);
  };
  inside = {double(words[0]) * 1e-15, rate(words[1])};
  across = {double(words[2]) * 1e-15, rate(words[3])};
  return scclSuccess;
}

// The hierarchical candidates: each preset again as "node", its calibration shared, after the
// node split's two probes (collective; every rank takes the same branch from the same node map).
scclResult_t addHierarchicalCandidates(scclComm* comm, const AutoCandidateConfigs& configs,
                                       const GivenLink& given, AutoChoice* choice) {
  if (!configs.node || (configs.flat && !multiRankNodes(*comm))) return scclSuccess;
  std::shared_ptr<NodeSplit> split;
  SCCL_CHECK(nodeSplitOf(comm, &split));  // unequal nodes: scclInvalidUsage on every rank
  choice->layout.nodes = split->nodes;
  choice->layout.local_ranks = split->local_ranks;
  SCCL_CHECK(probeLink(split->intra, GivenLink{}, &choice->inside_probe));
  SCCL_CHECK(probeLink(split->inter, given, &choice->across_probe));
  SCCL_CHECK(agreeOnNodeLinks(comm, choice));
  std::vector<AutoCandidate> candidates;
  for (size_t i = 0; i < choice->candidates.size(); ++i) {
    AutoCandidate flat = choice->candidates[i];
    flat.config_index = int(i);
    AutoCandidate node = flat;
    node.node_hierarchy = true;
    if (configs.flat) candidates.push_back(flat);
    candidates.push_back(node);
  }
  choice->candidates = std::move(candidates);
  return scclSuccess;
}

}  // namespace

const std::vector<const char*>& autoCandidates(bool stream_ordered) {
  static const std::vector<const char*> host = {"dense", "micro", "exdyna", "cltk"};
  static const std::vector<const char*> ordered = {"micro_sync_free", "exdyna_sync_free"};
  return stream_ordered ? ordered : host;
}

scclResult_t resolveAutoCandidates(const scclSparseConfig_t& config, AutoCandidateConfigs* out) {
  SCCL_REQUIRE_ARG(
      config.estimator == nullptr && config.searchSpace == nullptr && config.reduction == nullptr,
      "algorithm \"auto\" chooses a whole preset: leave estimator, searchSpace and "
      "reduction unset (they are '%s', '%s', '%s')",
      config.estimator ? config.estimator : "NULL",
      config.searchSpace ? config.searchSpace : "NULL",
      config.reduction ? config.reduction : "NULL");
  AutoCandidateConfigs configs;
  configs.names = autoCandidates(config.streamOrdered == 1);
  configs.resolved.resize(configs.names.size());
  // The first candidate's resolution checks the hierarchy's spelling and its other settings.
  scclSparseConfig_t as_asked = config;
  as_asked.algorithm = configs.names[0];
  ResolvedSparseConfig checked;
  SCCL_CHECK(resolveSparseConfig(as_asked, &checked));
  configs.flat = config.hierarchy == nullptr || checked.hierarchy == "flat";
  configs.node = config.hierarchy == nullptr || checked.hierarchy == "node";
  // The hierarchy has no stream-ordered form (an explicit "node" was refused just above).
  if (config.streamOrdered == 1) configs.node = false;
  for (size_t i = 0; i < configs.names.size(); ++i) {
    // The first candidate's errors are the config's (a knob out of range) and end the request;
    // a later one's mean that this candidate cannot take it, which the choice skips.
    const scclResult_t result =
        resolveSparseConfig(withAlgorithm(config, configs.names[i]), &configs.resolved[i]);
    if (result != scclSuccess && i == 0) return result;
    if (result != scclSuccess) configs.resolved[i] = ResolvedSparseConfig{};
  }
  *out = std::move(configs);
  return scclSuccess;
}

void rankAutoCandidates(const scclSparseConfig_t& config, size_t count, scclDataType_t dtype,
                        int nranks, AutoChoice* choice) {
  AutoCandidateConfigs configs;
  for (const AutoCandidate& candidate : choice->candidates) {
    ResolvedSparseConfig c;
    if (resolveSparseConfig(withAlgorithm(config, candidate.algorithm), &c) != scclSuccess) c = {};
    configs.names.push_back(candidate.algorithm);
    configs.resolved.push_back(std::move(c));
  }
  rankAutoCandidates(configs, count, dtype, nranks, choice);
}

void rankAutoCandidates(const AutoCandidateConfigs& configs, size_t count, scclDataType_t dtype,
                        int nranks, AutoChoice* choice) {
  choice->algorithm = nullptr;
  choice->chosen = -1;
  choice->node_hierarchy = false;
  double best = 0;
  for (size_t i = 0; i < choice->candidates.size(); ++i) {
    AutoCandidate& candidate = choice->candidates[i];
    if (candidate.local_s_per_element < 0) continue;
    const size_t index = candidate.config_index < 0 ? i : size_t(candidate.config_index);
    if (index >= configs.resolved.size() || configs.resolved[index].algorithm.empty()) {
      candidate.local_s_per_element = -1;
      continue;
    }
    const ResolvedSparseConfig& c = configs.resolved[index];
    const LocalWork local{candidate.local_s_per_element, choice->probe.ranks_per_machine};
    if (candidate.node_hierarchy) {
      const HierarchyLinks links{choice->inside_probe.link, choice->across_probe.link,
                                 choice->probe.link};
      candidate.predicted = predictHierarchicalCall(c, count, dtype, choice->layout, links, local);
    } else {
      const CallShape shape = predictCallShape(c, count, dtype, nranks, ShapeAssumptions{});
      candidate.predicted = predictCall(c, shape, choice->probe.link, local);
    }
    if (choice->algorithm == nullptr || candidate.predicted.seconds < best) {
      choice->algorithm = candidate.algorithm;
      choice->chosen = int(i);
      choice->node_hierarchy = candidate.node_hierarchy;
      best = candidate.predicted.seconds;
    }
  }
}

scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const scclSparseConfig_t& config, AutoChoice* out) {
  return chooseAlgorithm(comm, count, dtype, config, givenLinkSettings(), out);
}

scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const scclSparseConfig_t& config, const GivenLink& given,
                             AutoChoice* out) {
  AutoCandidateConfigs configs;
  SCCL_CHECK(resolveAutoCandidates(config, &configs));
  return chooseAlgorithm(comm, count, dtype, configs, given, out);
}

scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const AutoCandidateConfigs& configs, const GivenLink& given,
                             AutoChoice* out) {
  const auto start = std::chrono::steady_clock::now();
  // Any candidate's config stands for the request: the fingerprint covers every setting, and the
  // agreement's tag tells it from that preset's.
  SCCL_CHECK(agreeOnAutoCreation(comm, count, dtype, configs, given));
  SCCL_CHECK(checkGivenLink(given));  // agreed: every rank returns the same error
  AutoChoice choice;
  choice.agreement_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SCCL_CHECK(probeLink(comm, given, &choice.probe));
  const auto calibration_start = std::chrono::steady_clock::now();
  SCCL_CHECK(calibrateCandidates(comm, count, dtype, configs, &choice));
  choice.calibration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - calibration_start).count();
  SCCL_CHECK(addHierarchicalCandidates(comm, configs, given, &choice));
  rankAutoCandidates(configs, count, dtype, comm->nranks, &choice);
  if (choice.algorithm == nullptr) {
    return fail(scclInvalidArgument,
                "algorithm \"auto\": no candidate preset can run this config (%zu elements of "
                "%s; the sparse presets take floating-point data)",
                count, dataTypeName(dtype));
  }
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  *out = std::move(choice);
  return scclSuccess;
}

std::string describeAutoChoice(const AutoChoice& choice) {
  char text[240];
  std::snprintf(text, sizeof(text),
                "auto chose %s%s (link: %s, %d rank(s) per host; %.1f ms to choose: agreement "
                "%.1f, probe %.1f, calibration %.1f); predicted ms:",
                choice.algorithm ? choice.algorithm : "nothing",
                choice.node_hierarchy ? " with hierarchy node" : "",
                describeLinkProbe(choice.probe).c_str(), choice.probe.ranks_per_machine,
                choice.seconds * 1e3, choice.agreement_seconds * 1e3, choice.probe.seconds * 1e3,
                choice.calibration_seconds * 1e3);
  std::string out = text;
  if (choice.layout.local_ranks > 1 || choice.node_hierarchy) {
    std::snprintf(text, sizeof(text), " nodes %d x %d rank(s), inside %s, across %s;",
                  choice.layout.nodes, choice.layout.local_ranks,
                  describeLinkProbe(choice.inside_probe).c_str(),
                  describeLinkProbe(choice.across_probe).c_str());
    out += text;
  }
  for (const AutoCandidate& c : choice.candidates) {
    if (c.local_s_per_element < 0) {
      out += std::string(" ") + c.algorithm + (c.node_hierarchy ? "/node" : "") + " -";
      continue;
    }
    std::snprintf(text, sizeof(text), " %s%s %.3f", c.algorithm, c.node_hierarchy ? "/node" : "",
                  c.predicted.seconds * 1e3);
    out += text;
  }
  return out;
}

}  // namespace sccl
