// Sparsifier checkpoints: everything a sparsifier carries from call to call, in one versioned,
// checksummed blob, so that a training job restarted from its checkpoint continues bit for bit
// (scclSparsifierGetStateSize / ExportState / ImportState; docs/api.md, "Checkpoints").
//
// The blob (core/state_blob.h's framing, version 1):
//   header, 80 bytes: magic "SCCLCKPT", version, CRC-32, total bytes, rank and rank count, count,
//     gradient and residual dtype, the configuration fingerprint without the density schedule,
//     and the sizes of the three sections;
//   shared section: what every rank holds alike: the preset in effect, the call number, the
//     density in effect (target and warm-up, as scclSparsifierSetDensity may have left them),
//     whether the residual is still to be flushed ("auto" on dense), the last call's rank counts,
//     auto's switch count and state, then the estimator's and the search space's shared state;
//   own section: this rank's statistics (scclSparseStats_t) and the estimator's own state;
//   residual: count values of the residual type (float32, or float64 for float64 gradients).
//
// Import is checked as peer data: sizes, checksum, version, rank, rank count, count, dtype and
// configuration first, then every field against its range as it is read; the new state is built
// aside, so a refused blob leaves the sparsifier as it was. Then the ranks agree (a collective
// call): the shared section's digest and the call number must be the same on every rank, and a
// rank whose blob was refused makes every rank return an error.
#pragma once

#include <cstddef>

#include "sparsifier/sparsifier.h"

namespace sccl {

scclResult_t sparsifierStateSize(scclSparsifier& sp, size_t* bytes);
// Writes the blob into buffer[0, bytes); *written = its size. Local (no exchange); on device
// buffers it waits for the device.
scclResult_t sparsifierExportState(scclSparsifier& sp, void* buffer, size_t bytes, size_t* written);
// Collective over the sparsifier's communicator. A malformed blob: scclInvalidArgument on this
// rank (the others: scclInvalidUsage naming it); ranks whose blobs disagree: scclInvalidUsage on
// every rank. On any error nothing changes.
scclResult_t sparsifierImportState(scclSparsifier& sp, const void* buffer, size_t bytes);

}  // namespace sccl
