#include "sparsifier/sparsifier_state.h"

#include <cstring>
#include <string>
#include <vector>

#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/state_blob.h"
#include "core/state_stream.h"
#include "sparsifier/sparsifier_state_parts.h"

namespace sccl {
namespace {

constexpr size_t kMaxNameBytes = 64;
constexpr const char* kWhat = kSparsifierStateWhat;

struct StateSections {
  StateWriter shared, own;
};

size_t residualBytes(const scclSparsifier& sp) {
  return sp.count * accElementSize(sp);
}

// The shared section, then this rank's: the order loadSections reads them in.
scclResult_t writeSections(scclSparsifier& sp, StateSections* out) {
  // A device sparsifier's statistics and counts of stream-ordered calls are on the device, and
  // the sync_free call's threshold, partitions and call number too.
  uint64_t call_number = sp.iteration;
  if (sp.device != nullptr) {
    SCCL_CHECK(deviceRefreshStats(sp));
    SCCL_CHECK(deviceCheckpointState(sp, &call_number));
  }
  StateWriter& shared = out->shared;
  StateWriter& own = out->own;
  const ResolvedSparseConfig& c = sp.config;
  shared.text(c.algorithm);
  shared.u64(call_number);
  writeDensity(c, shared);
  shared.u8(sp.residual_to_flush ? 1 : 0);
  writeRankCounts(sp.reduction_memory.rank_counts, shared);
  shared.u64(sp.auto_switches);
  shared.u8(sp.auto_settled ? 1 : 0);
  own.u64(sizeof(scclSparseStats_t));
  own.bytes(&sp.stats, sizeof(scclSparseStats_t));
  sp.estimator->saveState(shared, own);
  sp.search->saveState(shared);
  return scclSuccess;
}

StateBlobHeader headerOf(const scclSparsifier& sp, const StateSections& sections) {
  return stateHeaderOf(sp, sections.shared.size(), sections.own.size(), residualBytes(sp));
}

}  // namespace

// --- import ---

// What a blob holds, checked and built aside: applied only once every rank agreed.
struct LoadedState {
  scclSparsifier next;  // config (density fields), estimator, search space: never a handle
  uint64_t iteration = 0;
  bool residual_to_flush = false;
  std::vector<uint64_t> rank_counts;
  uint64_t auto_switches = 0;
  bool auto_settled = true;
  scclSparseStats_t stats{};
  AlignedBuffer residual;
  uint64_t shared_digest = 0;

  LoadedState() { next.magic = 0; }
};

void LoadedStateDeleter::operator()(LoadedState* state) const {
  delete state;
}

StateBlobHeader stateHeaderOf(const scclSparsifier& sp, size_t shared_bytes, size_t own_bytes,
                              size_t bulk_bytes) {
  StateBlobHeader h;
  h.magic = kSparsifierStateMagic;
  h.rank = static_cast<uint32_t>(sp.comm->rank);
  h.nranks = static_cast<uint32_t>(sp.comm->nranks);
  h.count = sp.count;
  h.dtype = static_cast<uint32_t>(sp.dtype);
  h.second_dtype = static_cast<uint32_t>(sp.acc_dtype);
  h.fingerprint = sp.checkpoint_fingerprint;
  h.setSizes(shared_bytes, own_bytes, bulk_bytes);
  return h;
}

void writeDensity(const ResolvedSparseConfig& c, StateWriter& shared) {
  shared.f64(c.density);
  shared.u64(static_cast<uint64_t>(c.warmup_calls));
  shared.f64(c.warmup_start);
  shared.text(c.warmup_form);
}

scclResult_t readStateHeader(const scclSparsifier& sp, const unsigned char* blob, size_t bytes,
                             StateBlobHeader* out) {
  StateBlobHeader& h = *out;
  SCCL_CHECK(openStateBlob(blob, bytes, kSparsifierStateMagic, kSparsifierStateWhat, &h));
  SCCL_REQUIRE_ARG(h.nranks == uint32_t(sp.comm->nranks) && h.rank == uint32_t(sp.comm->rank),
                   "sparsifier checkpoint: written by rank %u of %u, loaded on rank %d of %d "
                   "(each rank loads its own checkpoint, on a communicator of the same size)",
                   h.rank, h.nranks, sp.comm->rank, sp.comm->nranks);
  SCCL_REQUIRE_ARG(h.count == sp.count && h.dtype == uint32_t(sp.dtype) &&
                       h.second_dtype == uint32_t(sp.acc_dtype),
                   "sparsifier checkpoint: of %llu elements of dtype %u, this sparsifier has %zu "
                   "of %s",
                   static_cast<unsigned long long>(h.count), h.dtype, sp.count,
                   dataTypeName(sp.dtype));
  SCCL_REQUIRE_ARG(h.fingerprint == sp.checkpoint_fingerprint,
                   "sparsifier checkpoint: written by a sparsifier of another configuration "
                   "(fingerprint %016llx, this one's %016llx); create it with the same config (its "
                   "density and warm-up may differ: the checkpoint's density in effect is loaded)",
                   static_cast<unsigned long long>(h.fingerprint),
                   static_cast<unsigned long long>(sp.checkpoint_fingerprint));
  return scclSuccess;
}

// The density in effect: the config's own, or one scclSparsifierSetDensity set (which ends the
// warm-up), under the same rules as that call.
scclResult_t readDensity(const scclSparsifier& sp, StateReader& r, ResolvedSparseConfig* c) {
  double density = 0, warmup_start = 0;
  uint64_t warmup_calls = 0;
  std::string warmup_form;
  SCCL_CHECK(r.finite("density", &density));
  SCCL_CHECK(r.u64("warm-up calls", &warmup_calls));
  SCCL_CHECK(r.finite("warm-up start", &warmup_start));
  SCCL_CHECK(r.text("warm-up form", kMaxNameBytes, &warmup_form));
  const bool as_configured = density == c->density && warmup_calls == uint64_t(c->warmup_calls) &&
                             warmup_start == c->warmup_start && warmup_form == c->warmup_form;
  if (as_configured) return scclSuccess;
  SCCL_REQUIRE_ARG(warmup_calls == 0 && warmup_start == 0 && warmup_form == "exponential",
                   "sparsifier checkpoint: a density warm-up (%llu calls from %g, %s) other than "
                   "this sparsifier's config (%d calls from %g, %s)",
                   static_cast<unsigned long long>(warmup_calls), warmup_start, warmup_form.c_str(),
                   c->warmup_calls, c->warmup_start, c->warmup_form.c_str());
  SCCL_REQUIRE_ARG(density > 0 && density <= 1, "sparsifier checkpoint: density %g", density);
  SCCL_REQUIRE_ARG(c->reduction != "sketch" || density == c->density,
                   "sparsifier checkpoint: density %g, but the sketch reduction keeps its "
                   "creation's %g",
                   density, c->density);
  SCCL_REQUIRE_ARG(c->reduction != "sync_free" || density <= sp.density_ceiling,
                   "sparsifier checkpoint: density %g is above the %g this sync_free "
                   "sparsifier's capacity was sized for",
                   density, sp.density_ceiling);
  c->density = density;
  c->warmup_calls = 0;
  c->warmup_start = 0;
  c->warmup_form = "exponential";
  return scclSuccess;
}

void writeRankCounts(const std::vector<uint64_t>& counts, StateWriter& shared) {
  shared.u64(counts.size());
  for (uint64_t k : counts) shared.u64(k);
}

scclResult_t readRankCounts(const scclSparsifier& sp, StateReader& r, bool may_be_empty,
                            std::vector<uint64_t>* out) {
  uint64_t ranks = 0;
  SCCL_CHECK(r.u64("rank count of the counts", &ranks));
  SCCL_REQUIRE_ARG(ranks == uint64_t(sp.comm->nranks) || (may_be_empty && ranks == 0),
                   "sparsifier checkpoint: %llu rank counts for %d ranks",
                   static_cast<unsigned long long>(ranks), sp.comm->nranks);
  out->resize(ranks);
  for (uint64_t& k : *out) {
    SCCL_CHECK(r.u64("a rank's count", &k));
    SCCL_REQUIRE_ARG(k <= sp.count, "sparsifier checkpoint: a rank count %llu above the count %zu",
                     static_cast<unsigned long long>(k), sp.count);
  }
  return scclSuccess;
}

namespace {

scclResult_t readShared(const scclSparsifier& sp, StateReader& r, LoadedState* out) {
  std::string algorithm;
  SCCL_CHECK(r.text("preset", kMaxNameBytes, &algorithm));
  SCCL_REQUIRE_ARG(algorithm == sp.config.algorithm,
                   "sparsifier checkpoint: written while the sparsifier ran preset '%s', this "
                   "one runs '%s' (an \"auto\" sparsifier resumes where its choice is the same)",
                   algorithm.c_str(), sp.config.algorithm.c_str());
  SCCL_CHECK(r.u64("call number", &out->iteration));
  SCCL_REQUIRE_ARG(out->iteration < (uint64_t{1} << 62), "sparsifier checkpoint: call number %llu",
                   static_cast<unsigned long long>(out->iteration));
  out->next.config = sp.config;
  SCCL_CHECK(readDensity(sp, r, &out->next.config));
  SCCL_CHECK(r.flag("residual to flush", &out->residual_to_flush));
  SCCL_CHECK(readRankCounts(sp, r, false, &out->rank_counts));
  SCCL_CHECK(r.u64("auto switches", &out->auto_switches));
  SCCL_CHECK(r.flag("auto settled", &out->auto_settled));
  return scclSuccess;
}

}  // namespace

scclResult_t readStats(StateReader& r, scclSparseStats_t* stats) {
  uint64_t size = 0;
  SCCL_CHECK(r.u64("statistics size", &size));
  SCCL_REQUIRE_ARG(size == sizeof(scclSparseStats_t),
                   "sparsifier checkpoint: statistics of %llu bytes, this library's are %zu",
                   static_cast<unsigned long long>(size), sizeof(scclSparseStats_t));
  SCCL_CHECK(r.bytes("statistics", stats, sizeof(scclSparseStats_t)));
  SCCL_REQUIRE_ARG(stats->size == sizeof(scclSparseStats_t),
                   "sparsifier checkpoint: the statistics' size field is %zu", stats->size);
  return scclSuccess;
}

namespace {

// Everything a blob holds, checked field by field, into *out; this sparsifier is not touched.
scclResult_t parseState(const scclSparsifier& sp, const unsigned char* blob, size_t bytes,
                        LoadedState* out) {
  StateBlobHeader h;
  SCCL_CHECK(readStateHeader(sp, blob, bytes, &h));
  SCCL_REQUIRE_ARG(h.bulk_bytes == residualBytes(sp),
                   "sparsifier checkpoint: a residual of %llu bytes, this sparsifier's has %zu",
                   static_cast<unsigned long long>(h.bulk_bytes), residualBytes(sp));
  const unsigned char* shared_bytes = blob + kStateHeaderBytes;
  const unsigned char* own_bytes = shared_bytes + h.shared_bytes;
  StateReader shared(shared_bytes, h.shared_bytes, "shared section");
  StateReader own(own_bytes, h.own_bytes, "own section");
  SCCL_CHECK(readShared(sp, shared, out));
  SCCL_CHECK(readStats(own, &out->stats));
  // The axes as this sparsifier's config builds them, at the checkpoint's density.
  scclSparsifier& next = out->next;
  next.comm = sp.comm;
  next.count = sp.count;
  next.dtype = sp.dtype;
  next.acc_dtype = sp.acc_dtype;
  SCCL_CHECK(buildSparsifierAxes(next));
  next.estimator->setDensity(densityForCall(next.config, out->iteration), sp.count);
  SCCL_CHECK(next.estimator->loadState(shared, own));
  SCCL_CHECK(next.search->loadState(shared));
  SCCL_CHECK(shared.finish());
  SCCL_CHECK(own.finish());
  out->residual.resize(h.bulk_bytes);
  if (h.bulk_bytes > 0) std::memcpy(out->residual.data(), blob + h.bulkOffset(), h.bulk_bytes);
  out->shared_digest = mixHash(sp.checkpoint_fingerprint, shared_bytes, h.shared_bytes);
  return scclSuccess;
}

void applyState(scclSparsifier& sp, LoadedState& loaded) {
  ResolvedSparseConfig& c = sp.config;
  const ResolvedSparseConfig& n = loaded.next.config;
  c.density = n.density;
  c.warmup_calls = n.warmup_calls;
  c.warmup_start = n.warmup_start;
  c.warmup_form = n.warmup_form;
  sp.config_fingerprint = sparseConfigFingerprint(c, sp.count, sp.dtype);
  sp.density = 0;  // the next call applies the density in effect and the call fingerprint
  sp.estimator = std::move(loaded.next.estimator);
  sp.search = std::move(loaded.next.search);
  sp.iteration = loaded.iteration;
  sp.residual_to_flush = loaded.residual_to_flush;
  sp.last_call_mask = nullptr;  // the loaded state has no last call here
  sp.reduction_memory.rank_counts = std::move(loaded.rank_counts);
  sp.reduction_memory.union_slot_hint = 0;  // as after a reset: every rank that loads starts from k
  sp.reduction_memory.settled_plan = nullptr;  // the device's totals start again
  sp.auto_switches = loaded.auto_switches;
  sp.auto_settled = loaded.auto_settled;
  sp.stats = loaded.stats;
  sp.residual.swap(loaded.residual);
  // The residual is on the host now; the next call on device buffers uploads it.
  sp.device.reset();
}

}  // namespace

scclResult_t parseFlatState(const scclSparsifier& sp, const void* buffer, size_t bytes,
                            LoadedStatePtr* out, CallRecord* record) {
  out->reset(new LoadedState);
  const scclResult_t parsed =
      parseState(sp, static_cast<const unsigned char*>(buffer), bytes, out->get());
  *record = callRecord(CallOperation::SparsifierImportState);
  record->count = sp.count;
  record->dtype = static_cast<int16_t>(sp.dtype);
  record->object = sp.identity;
  record->config = (*out)->shared_digest;  // preset, call number, density, threshold, partitions
  record->object_call = (*out)->iteration;
  return parsed;
}

void applyFlatState(scclSparsifier& sp, LoadedState& loaded) {
  applyState(sp, loaded);
}

scclResult_t sparsifierStateSize(scclSparsifier& sp, size_t* bytes) {
  if (sp.hierarchy != nullptr) return hierarchicalStateSize(sp, bytes);
  StateSections sections;
  SCCL_CHECK(writeSections(sp, &sections));
  *bytes = headerOf(sp, sections).total_bytes;
  return scclSuccess;
}

scclResult_t sparsifierExportState(scclSparsifier& sp, void* buffer, size_t bytes,
                                   size_t* written) {
  if (sp.hierarchy != nullptr) return hierarchicalExportState(sp, buffer, bytes, written);
  StateSections sections;
  SCCL_CHECK(writeSections(sp, &sections));
  const StateBlobHeader h = headerOf(sp, sections);
  SCCL_REQUIRE_ARG(bytes >= h.total_bytes,
                   "checkpoint buffer of %zu bytes; this sparsifier's state needs %llu "
                   "(scclSparsifierGetStateSize)",
                   bytes, static_cast<unsigned long long>(h.total_bytes));
  auto* out = static_cast<unsigned char*>(buffer);
  unsigned char* residual = out + h.bulkOffset();
  if (sp.device != nullptr) {
    SCCL_CHECK(deviceExportResidual(sp, residual));
  } else if (h.bulk_bytes > 0) {
    std::memcpy(residual, sp.residual.data(), h.bulk_bytes);
  }
  sealStateBlob(h, sections.shared, sections.own, out);
  if (written != nullptr) *written = h.total_bytes;
  return scclSuccess;
}

scclResult_t sparsifierImportState(scclSparsifier& sp, const void* buffer, size_t bytes) {
  if (sp.hierarchy != nullptr) return hierarchicalImportState(sp, buffer, bytes);
  LoadedStatePtr loaded;
  CallRecord record;
  const scclResult_t parsed = parseFlatState(sp, buffer, bytes, &loaded, &record);
  SCCL_CHECK(agreeOnImport(sp.comm, parsed, record, CallOperation::SparsifierImportRefused, kWhat));
  applyState(sp, *loaded);
  SCCL_INFO(LogSubsys::Coll, "sparsifier %p rank %d: checkpoint of call %llu loaded (%zu bytes)",
            static_cast<void*>(&sp), sp.comm->rank, static_cast<unsigned long long>(sp.iteration),
            bytes);
  return scclSuccess;
}

}  // namespace sccl
