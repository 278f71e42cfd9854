// Checkpoints of a "hierarchy": "node" sparsifier (sparsifier/node_hierarchy.h). Its state is
// the inner sparsifier's, over this rank's chunk on the communicator across nodes, plus what the
// outer call keeps: the call number, the density in effect, the last call's rank counts and this
// rank's statistics. The blob uses the sparsifier checkpoint's framing (sparsifier_state.h) and
// the hierarchical configuration's fingerprint, so a flat blob is refused by name:
//   shared section: "node", nodes, ranks per node, chunk, call number, density in effect, the
//     last call's rank counts (every rank holds them alike);
//   own section: this rank's statistics, local rank, its chunk's start and length;
//   bulk data: the inner sparsifier's own blob (none where the chunk is empty).
// Import is two-phase: every rank parses its blob and the inner blob aside, the ranks that share
// an inner sparsifier agree on the inner blobs (across nodes), then the whole communicator agrees
// on the outer blob and on every rank's verdict; only then does anything change. A chunk whose
// blob was refused on one rank therefore leaves every rank of every node as it was.
#include <cstring>
#include <string>
#include <vector>

#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "core/error.h"
#include "core/state_blob.h"
#include "core/state_stream.h"
#include "sparsifier/node_hierarchy.h"
#include "sparsifier/sparsifier_state.h"
#include "sparsifier/sparsifier_state_parts.h"

namespace sccl {
namespace {

constexpr const char* kLayout = "node";
constexpr size_t kMaxLayoutBytes = 16;

struct HierarchySections {
  StateWriter shared, own;
  std::vector<unsigned char> inner;  // the inner sparsifier's blob
};

scclResult_t writeHierarchySections(scclSparsifier& sp, HierarchySections* out) {
  const NodeHierarchy& h = *sp.hierarchy;
  StateWriter& shared = out->shared;
  shared.text(kLayout);
  shared.u64(static_cast<uint64_t>(h.nodes));
  shared.u64(static_cast<uint64_t>(h.local_ranks));
  shared.u64(h.chunk);
  shared.u64(sp.iteration);
  writeDensity(sp.config, shared);
  writeRankCounts(sp.reduction_memory.rank_counts, shared);
  StateWriter& own = out->own;
  own.u64(sizeof(scclSparseStats_t));
  own.bytes(&sp.stats, sizeof(scclSparseStats_t));
  own.u64(static_cast<uint64_t>(h.local_rank));
  own.u64(h.chunk_begin);
  own.u64(h.chunk_length);
  if (h.inner != nullptr) {
    size_t bytes = 0, written = 0;
    SCCL_CHECK(sparsifierStateSize(*h.inner, &bytes));
    out->inner.resize(bytes);
    SCCL_CHECK(sparsifierExportState(*h.inner, out->inner.data(), bytes, &written));
    out->inner.resize(written);
  }
  return scclSuccess;
}

// The outer fields, parsed aside.
struct LoadedHierarchy {
  uint64_t iteration = 0;
  ResolvedSparseConfig config;
  std::vector<uint64_t> rank_counts;
  scclSparseStats_t stats{};
  uint64_t shared_digest = 0;
  const unsigned char* inner = nullptr;  // the inner blob inside the caller's buffer
  size_t inner_bytes = 0;
};

scclResult_t expectWord(StateReader& r, const char* field, uint64_t mine) {
  uint64_t value = 0;
  SCCL_CHECK(r.u64(field, &value));
  SCCL_REQUIRE_ARG(value == mine,
                   "sparsifier checkpoint (hierarchy node): %s %llu, this sparsifier's is %llu "
                   "(the same node layout is needed to resume)",
                   field, static_cast<unsigned long long>(value),
                   static_cast<unsigned long long>(mine));
  return scclSuccess;
}

scclResult_t parseOuter(const scclSparsifier& sp, const unsigned char* blob, size_t bytes,
                        LoadedHierarchy* out) {
  const NodeHierarchy& h = *sp.hierarchy;
  StateBlobHeader header;
  SCCL_CHECK(readStateHeader(sp, blob, bytes, &header));
  const unsigned char* shared_bytes = blob + kStateHeaderBytes;
  StateReader shared(shared_bytes, header.shared_bytes, "shared section");
  StateReader own(shared_bytes + header.shared_bytes, header.own_bytes, "own section");
  std::string layout;
  SCCL_CHECK(shared.text("hierarchy", kMaxLayoutBytes, &layout));
  SCCL_REQUIRE_ARG(layout == kLayout, "sparsifier checkpoint: hierarchy '%s', this one's is '%s'",
                   layout.c_str(), kLayout);
  SCCL_CHECK(expectWord(shared, "node count", uint64_t(h.nodes)));
  SCCL_CHECK(expectWord(shared, "ranks per node", uint64_t(h.local_ranks)));
  SCCL_CHECK(expectWord(shared, "chunk", h.chunk));
  SCCL_CHECK(shared.u64("call number", &out->iteration));
  SCCL_REQUIRE_ARG(out->iteration < (uint64_t{1} << 62), "sparsifier checkpoint: call number %llu",
                   static_cast<unsigned long long>(out->iteration));
  out->config = sp.config;
  SCCL_CHECK(readDensity(sp, shared, &out->config));
  // Empty before the first call: the counts come from the calls across nodes.
  SCCL_CHECK(readRankCounts(sp, shared, true, &out->rank_counts));
  SCCL_CHECK(readStats(own, &out->stats));
  SCCL_CHECK(expectWord(own, "local rank", uint64_t(h.local_rank)));
  SCCL_CHECK(expectWord(own, "chunk start", h.chunk_begin));
  SCCL_CHECK(expectWord(own, "chunk length", h.chunk_length));
  SCCL_CHECK(shared.finish());
  SCCL_CHECK(own.finish());
  SCCL_REQUIRE_ARG(h.inner != nullptr || header.bulk_bytes == 0,
                   "sparsifier checkpoint: %llu bytes of a chunk's state for an empty chunk",
                   static_cast<unsigned long long>(header.bulk_bytes));
  out->inner = blob + header.bulkOffset();
  out->inner_bytes = header.bulk_bytes;
  out->shared_digest = mixHash(sp.checkpoint_fingerprint, shared_bytes, header.shared_bytes);
  return scclSuccess;
}

}  // namespace

scclResult_t hierarchicalStateSize(scclSparsifier& sp, size_t* bytes) {
  HierarchySections sections;
  SCCL_CHECK(writeHierarchySections(sp, &sections));
  *bytes = stateHeaderOf(sp, sections.shared.size(), sections.own.size(), sections.inner.size())
               .total_bytes;
  return scclSuccess;
}

scclResult_t hierarchicalExportState(scclSparsifier& sp, void* buffer, size_t bytes,
                                     size_t* written) {
  HierarchySections sections;
  SCCL_CHECK(writeHierarchySections(sp, &sections));
  const StateBlobHeader h =
      stateHeaderOf(sp, sections.shared.size(), sections.own.size(), sections.inner.size());
  SCCL_REQUIRE_ARG(bytes >= h.total_bytes,
                   "checkpoint buffer of %zu bytes; this sparsifier's state needs %llu "
                   "(scclSparsifierGetStateSize)",
                   bytes, static_cast<unsigned long long>(h.total_bytes));
  auto* out = static_cast<unsigned char*>(buffer);
  if (!sections.inner.empty())
    std::memcpy(out + h.bulkOffset(), sections.inner.data(), sections.inner.size());
  sealStateBlob(h, sections.shared, sections.own, out);
  if (written != nullptr) *written = h.total_bytes;
  return scclSuccess;
}

scclResult_t hierarchicalImportState(scclSparsifier& sp, const void* buffer, size_t bytes) {
  NodeHierarchy& h = *sp.hierarchy;
  LoadedHierarchy outer;
  scclResult_t parsed = parseOuter(sp, static_cast<const unsigned char*>(buffer), bytes, &outer);
  // Phase 1, across nodes: the ranks of this chunk agree on the inner blobs (every rank of
  // `inter` has the same chunk length, so all of them take part or none).
  LoadedStatePtr inner;
  if (h.inner != nullptr) {
    CallRecord inner_record = callRecord(CallOperation::SparsifierImportState);
    if (parsed == scclSuccess)
      parsed = parseFlatState(*h.inner, outer.inner, outer.inner_bytes, &inner, &inner_record);
    parsed = agreeOnImport(h.inner->comm, parsed, inner_record,
                           CallOperation::SparsifierImportRefused, kSparsifierStateWhat);
  }
  // Phase 2, the whole communicator: the outer blob and every rank's verdict of phase 1.
  CallRecord record = callRecord(CallOperation::SparsifierImportState);
  record.count = sp.count;
  record.dtype = static_cast<int16_t>(sp.dtype);
  record.object = sp.identity;
  record.config = outer.shared_digest;
  record.object_call = outer.iteration;
  SCCL_CHECK(agreeOnImport(sp.comm, parsed, record, CallOperation::SparsifierImportRefused,
                           kSparsifierStateWhat));
  if (h.inner != nullptr) applyFlatState(*h.inner, *inner);
  ResolvedSparseConfig& c = sp.config;
  c.density = outer.config.density;
  c.warmup_calls = outer.config.warmup_calls;
  c.warmup_start = outer.config.warmup_start;
  c.warmup_form = outer.config.warmup_form;
  sp.config_fingerprint = sparseConfigFingerprint(c, sp.count, sp.dtype);
  sp.density = 0;
  sp.iteration = outer.iteration;
  sp.reduction_memory.rank_counts = std::move(outer.rank_counts);
  sp.stats = outer.stats;
  SCCL_INFO(LogSubsys::Coll,
            "sparsifier %p rank %d: hierarchical checkpoint of call %llu loaded (%zu bytes)",
            static_cast<void*>(&sp), sp.comm->rank, static_cast<unsigned long long>(sp.iteration),
            bytes);
  return scclSuccess;
}

}  // namespace sccl
