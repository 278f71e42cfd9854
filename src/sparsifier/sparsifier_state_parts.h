// The pieces of sparsifier checkpoints (sparsifier_state.h) that the flat blob and the
// hierarchical one (hierarchy_state.h) share: the header's identity fields, the density in
// effect, the statistics, and a flat blob parsed aside and applied later, so that a caller can
// agree over more than one communicator before anything changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/state_blob.h"
#include "core/state_stream.h"
#include "sparsifier/sparsifier.h"
#include "transports/agreement_record.h"

namespace sccl {

inline constexpr uint64_t kSparsifierStateMagic = 0x54504b434c434353ull;  // "SCCLCKPT"
inline constexpr const char* kSparsifierStateWhat = "sparsifier checkpoint";

// The header of sp's blob with sections and bulk data of these sizes.
StateBlobHeader stateHeaderOf(const scclSparsifier& sp, size_t shared_bytes, size_t own_bytes,
                              size_t bulk_bytes);
// The framing (core/state_blob.h), then every header field that says which sparsifier wrote the
// blob (rank, rank count, count, dtypes, configuration fingerprint) against sp. The bulk size is
// the caller's to check.
scclResult_t readStateHeader(const scclSparsifier& sp, const unsigned char* blob, size_t bytes,
                             StateBlobHeader* out);

// The density in effect (target and warm-up): written as the config holds it, read back under
// the rules of scclSparsifierSetDensity into *c.
void writeDensity(const ResolvedSparseConfig& c, StateWriter& shared);
scclResult_t readDensity(const scclSparsifier& sp, StateReader& r, ResolvedSparseConfig* c);

// The last call's rank counts: one per rank of the communicator, each at most the count (none
// where may_be_empty and the sparsifier has not run a call).
void writeRankCounts(const std::vector<uint64_t>& counts, StateWriter& shared);
scclResult_t readRankCounts(const scclSparsifier& sp, StateReader& r, bool may_be_empty,
                            std::vector<uint64_t>* out);

// This rank's scclSparseStats_t, size-checked.
scclResult_t readStats(StateReader& r, scclSparseStats_t* stats);

// A flat sparsifier's blob, parsed and built aside (sp does not change), and the record its
// ranks agree on; applyFlatState installs it once they have.
struct LoadedState;
struct LoadedStateDeleter {
  void operator()(LoadedState* state) const;
};
using LoadedStatePtr = std::unique_ptr<LoadedState, LoadedStateDeleter>;
scclResult_t parseFlatState(const scclSparsifier& sp, const void* buffer, size_t bytes,
                            LoadedStatePtr* out, CallRecord* record);
void applyFlatState(scclSparsifier& sp, LoadedState& loaded);

// "hierarchy": "node" (hierarchy_state.cc): the node's fields around the inner sparsifier's blob.
scclResult_t hierarchicalStateSize(scclSparsifier& sp, size_t* bytes);
scclResult_t hierarchicalExportState(scclSparsifier& sp, void* buffer, size_t bytes,
                                     size_t* written);
scclResult_t hierarchicalImportState(scclSparsifier& sp, const void* buffer, size_t bytes);

}  // namespace sccl
