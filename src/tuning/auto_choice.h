// "algorithm": "auto": at sparsifier creation the cost model (tuning/cost_model.h)
// predicts every candidate preset for this count, dtype, density, rank count and the measured link,
// and the sparsifier is created with the fastest.
//
// Steps, on every rank (scclSparsifierCreate with algorithm "auto"):
//  1. agree that every rank asks for "auto" with the same count, dtype, density and link settings
//     (a rank that named a preset, or another size, gets scclInvalidUsage with the others);
//  2. probe the link (tuning/link_probe.h), once per communicator, unless the settings give it
//     (tuning/link_settings.h: SCCL_LINK_LATENCY_NS, SCCL_LINK_RATE_MBITS);
//  3. rank 0 calibrates each candidate's local work on one in-process rank
//     (tuning/compute_calibration.h, min(count, 64K) elements, cached per process) and
//     broadcasts it, so every rank holds the same measurements (those of rank 0's machine); the
//     others wait for it patiently (core/patient_wait.h), leaving rank 0 the cores they share;
//  4. predict each candidate (its wire plan at the expected shape, the probed link, the local work
//     times the ranks per host) and pick the fastest, the first of equals in candidate order.
// The same measurements give the same choice on every rank; the sparsifier's own creation then
// agrees on the chosen config as for any other. The measured calls may change the choice later
// (tuning/auto_retune.h). Candidates (host buffers): the presets that
// aggregate the requested density whatever the rank count: dense, micro, exdyna, cltk. Not topk,
// sidco, s2: each rank selects its own k (or blocks), so they aggregate up to n k entries, and the
// model's one-rank calibration misses the work that grows with that union (on the emulated
// cluster at 8 ranks auto chose sidco and s2 where they ran 2-7x slower than micro or cltk:
// docs/results/cost_model.md); hard_threshold needs a threshold the user picks. With
// streamOrdered 1 (device buffers, calls that may be captured in a CUDA graph) the candidates are
// the two presets that can run so, micro_sync_free and exdyna_sync_free; the calibration still
// runs on rank 0's CPU (host buffers ignore streamOrdered).
//
// Hierarchies: where the communicator's nodes hold several ranks each (comm.h node_of_rank, the
// same count on every node, at least two nodes) and the config leaves hierarchy unset (NULL),
// every candidate is also priced as "hierarchy": "node" (tuning/hierarchy_cost.h), with two more
// probes, once per communicator: the link inside the node (over the node split's intra
// communicator, always measured) and the link across nodes (over its inter communicator; the
// link settings, when given, describe this one), each the slowest over the communicator so that
// every rank prices the same. The flat and hierarchical forms of a preset share
// its calibration. hierarchy "flat" keeps auto to the flat forms, "node" to the hierarchical
// ones. A hierarchical choice is final: measured calls do not retune it (tuning/auto_retune.h),
// and it runs on host buffers only, as every hierarchical sparsifier.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "sparsifier/sparse_config.h"
#include "tuning/cost_model.h"
#include "tuning/hierarchy_cost.h"
#include "tuning/link_probe.h"
#include "tuning/link_settings.h"

struct scclComm;

namespace sccl {

struct AutoCandidate {
  const char* algorithm = nullptr;
  double local_s_per_element = 0;  // agreed over ranks; < 0: the candidate could not run here
  CallPrediction predicted;
  bool node_hierarchy = false;  // priced and created as "hierarchy": "node"
  int config_index = -1;        // its AutoCandidateConfigs entry; -1: its own position
};

struct AutoChoice {
  const char* algorithm = nullptr;  // the chosen preset (a registry name)
  int chosen = -1;                  // its index in candidates
  bool node_hierarchy = false;      // the chosen candidate's hierarchy
  LinkProbe probe;
  // Hierarchical candidates only: the node layout and the links inside and across nodes.
  NodeLayout layout;
  LinkProbe inside_probe, across_probe;
  std::vector<AutoCandidate> candidates;
  double seconds = 0;              // agreement, probe and calibration on this rank
  double agreement_seconds = 0;    // step 1 on this rank: mostly waiting for the last rank to call
  double calibration_seconds = 0;  // step 3 on this rank (rank 0 measures, the others wait)
};

// The candidates of a config: streamOrdered 0 the host ones above (on device buffers the first
// call narrows them to those with a device path: tuning/auto_device.h); streamOrdered 1 the
// presets that can run stream-ordered, micro_sync_free and exdyna_sync_free.
const std::vector<const char*>& autoCandidates(bool stream_ordered = false);

// The candidates' configs, each resolved once: the caller's settings with each candidate preset
// (a candidate that cannot take them has an empty ResolvedSparseConfig::algorithm). The first
// candidate's resolves, or the request is refused with its error.
struct AutoCandidateConfigs {
  std::vector<const char*> names;
  std::vector<ResolvedSparseConfig> resolved;  // each with hierarchy "flat"
  bool flat = true;   // the hierarchies the request allows (hierarchy NULL: both, where the
  bool node = false;  // communicator has nodes of several ranks)
};
// config.algorithm is "auto"; its estimator, search space and reduction must be unset (auto
// chooses whole presets).
scclResult_t resolveAutoCandidates(const scclSparseConfig_t& config, AutoCandidateConfigs* out);

// Step 4 alone: deterministic in its inputs. choice->candidates holds each candidate's name and
// agreed local work; fills their predictions and choice->algorithm (null if none can run).
void rankAutoCandidates(const scclSparseConfig_t& config, size_t count, scclDataType_t dtype,
                        int nranks, AutoChoice* choice);
// The same on resolved configs, configs.resolved[i] for choice->candidates[i].
void rankAutoCandidates(const AutoCandidateConfigs& configs, size_t count, scclDataType_t dtype,
                        int nranks, AutoChoice* choice);

// Steps 1-4 (collective). config.algorithm must be "auto"; its estimator, search space and
// reduction must be unset (auto chooses whole presets).
scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const scclSparseConfig_t& config, AutoChoice* out);
// The same with the link settings given (tests: ranks given different ones), checked after the
// agreement; the one above reads them from SCCL_LINK_LATENCY_NS and SCCL_LINK_RATE_MBITS
// (tuning/link_settings.h).
scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const scclSparseConfig_t& config, const GivenLink& given,
                             AutoChoice* out);
// Steps 1-4 on the candidates resolved already (tuning/sparsifier_factory.h).
scclResult_t chooseAlgorithm(scclComm* comm, size_t count, scclDataType_t dtype,
                             const AutoCandidateConfigs& configs, const GivenLink& given,
                             AutoChoice* out);

// One line for logs: the choice, the probed link and each candidate's predicted time.
std::string describeAutoChoice(const AutoChoice& choice);

}  // namespace sccl
