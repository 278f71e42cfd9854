// The sparse configuration as the library uses it: the public scclSparseConfig_t checked, with
// the preset's axes filled in, and a fingerprint so that ranks can verify they agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/resolved_config.h"
#include "core/knob_table.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Every axis' numeric knobs (core/knob_table.h), in the order sccl_info prints them.
const std::vector<KnobGroup>& sparseConfigKnobs();

// Checks every field (scclInvalidArgument naming the field) and resolves the preset's axes.
scclResult_t resolveSparseConfig(const scclSparseConfig_t& config, ResolvedSparseConfig* out);

// FNV-1a of `bytes` bytes continuing from `hash` (the fingerprints' digest).
uint64_t mixHash(uint64_t hash, const void* data, size_t bytes);

// A 64-bit digest of everything that must be equal on every rank.
uint64_t sparseConfigFingerprint(const ResolvedSparseConfig& config, size_t count,
                                 scclDataType_t dtype);

// sparseConfigFingerprint of the config without its density schedule (density and warm-up), which
// a sparsifier checkpoint carries itself.
uint64_t checkpointFingerprint(const ResolvedSparseConfig& config, size_t count,
                               scclDataType_t dtype);

// The density of the call numbered `call` (0 = the first since creation or reset): the warm-up's
// s * (d/s)^(t/N) ("exponential") or s + (d - s) t/N ("linear") for t < N, else d = density.
double densityForCall(const ResolvedSparseConfig& config, uint64_t call);

// Text for logs and error messages, e.g. "exdyna(scaling, exdyna, gather) density 0.01".
std::string describeSparseConfig(const ResolvedSparseConfig& config);

}  // namespace sccl
