// "algorithm": "auto" on device buffers: the sparsifier's first call on GPU memory
// narrows the creation's choice to the presets that have a device path.
//
// The creation (tuning/auto_choice.h) does not know where the calls' buffers will live. With
// streamOrdered 0 it ranks dense, micro, exdyna and CLT-k, and dense, often the fastest on fast
// links, has no device path in scclSparseAllreduce (GPU memory goes to scclAllReduce for it).
// Steps, on every rank, inside the first scclSparseAllreduce on device buffers (the residual
// still in host memory, no call completed since creation or scclSparsifierReset):
//  1. if the preset running has a device path (ReductionEntry::has_device_path; the sync_free
//     reduction with the scaling or fixed estimator), nothing changes;
//  2. else the preset becomes the candidate with a device path and the smallest predicted time
//     (the first of equals in candidate order): micro, exdyna or CLT-k. With streamOrdered 1
//     every candidate (micro_sync_free, exdyna_sync_free) has one, so step 1 holds.
//     No exchange: the predictions are the same on every rank (they come from agreed
//     measurements), so every rank picks the same preset;
//  3. if the call then fails before the device state exists (another rank called with host
//     buffers, a transport that cannot carry device memory), the preset switches back: the
//     failed call changed nothing.
// Where it is wrong: the predictions' local work was calibrated on rank 0's CPU, not on the GPU
// (docs/cost_model.md, "Device buffers"), and the measured calls do not re-decide on device
// buffers (tuning/auto_retune.h).
#pragma once

#include "sparsecoll/sparsecoll.h"
#include "tuning/auto_choice.h"

struct scclSparsifier;

namespace sccl {

// Whether scclSparseAllreduce runs preset `algorithm` on device buffers (false for an unknown
// name).
bool presetHasDevicePath(const char* algorithm);

// Step 1-2 alone, deterministic in its inputs: the candidate of `choice` to run on device
// buffers while `current` runs (a registry name). `current` itself (returned as null, nothing to
// change) where it has a device path; null too where no usable candidate has one.
const AutoCandidate* deviceCandidate(const AutoChoice& choice, const char* current);

// Before a call on device buffers (api_sparse.cc): steps 1-2 for an "auto" sparsifier whose
// residual is still in host memory and that completed no call. *previous: the preset it ran
// before a switch, null where nothing changed (a named preset, a later call, step 1).
scclResult_t autoPrepareDeviceCall(scclSparsifier* sp, const char** previous);

// Step 3: after that call failed, back to `previous` where the device state was not created
// (nothing if previous is null).
void autoUndoDeviceCall(scclSparsifier* sp, const char* previous);

}  // namespace sccl
