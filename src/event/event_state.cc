#include "event/event_state.h"

#include <cstring>
#include <string>
#include <vector>

#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/state_blob.h"
#include "core/state_stream.h"
#include "transports/slot_window.h"

namespace sccl {
namespace {

constexpr uint64_t kEventStateMagic = 0x4b43564543434353ull;  // "SCCLEVCK" in memory order
constexpr const char* kWhat = "event communicator checkpoint";

// The layout and config fingerprint with the neighbours and weights, which a checkpoint's copies
// depend on.
uint64_t checkpointFingerprint(const scclEventComm& ec) {
  uint64_t h = ec.fingerprint;
  auto mix = [&h](uint64_t word) { h = (h ^ word) * 0x100000001b3ull; };
  mix(ec.neighbours.size());
  for (int j : ec.neighbours) mix(static_cast<uint64_t>(j));
  for (double w : ec.neighbour_weights) {
    uint64_t bits = 0;
    std::memcpy(&bits, &w, sizeof(bits));
    mix(bits);
  }
  uint64_t self = 0;
  std::memcpy(&self, &ec.self_weight, sizeof(self));
  mix(self);
  return h;
}

size_t copyBytes(const scclEventComm& ec) {
  return ec.count * ec.element_bytes;
}

size_t bulkBytes(const scclEventComm& ec) {
  return ec.sent_copy.size() + ec.received.size() * copyBytes(ec);
}

struct EventSections {
  StateWriter shared, own;
};

void writeSections(const scclEventComm& ec, EventSections* out) {
  out->shared.u64(ec.pass);
  StateWriter& own = out->own;
  own.u64(ec.triggers.size());
  for (const TensorTrigger& trigger : ec.triggers) trigger.saveState(own);
  own.u64(ec.received_copy.size());
  for (const SlotCopy& copy : ec.received_copy) {
    own.u64(copy.version);
    own.u64(copy.pass);
  }
  own.u64(sizeof(scclEventStats_t));
  own.bytes(&ec.stats, sizeof(scclEventStats_t));
  own.f64(ec.staleness_sum);
  own.u64(ec.staleness_samples);
}

StateBlobHeader headerOf(const scclEventComm& ec, const EventSections& sections) {
  StateBlobHeader h;
  h.magic = kEventStateMagic;
  h.rank = static_cast<uint32_t>(ec.comm->rank);
  h.nranks = static_cast<uint32_t>(ec.comm->nranks);
  h.count = ec.count;
  h.dtype = h.second_dtype = static_cast<uint32_t>(ec.dtype);
  h.fingerprint = checkpointFingerprint(ec);
  h.setSizes(sections.shared.size(), sections.own.size(), bulkBytes(ec));
  return h;
}

// What a blob holds, checked, built aside; applied once every rank agreed.
struct LoadedEventState {
  uint64_t pass = 0;
  std::vector<TensorTrigger> triggers;
  std::vector<SlotCopy> received_copy;
  scclEventStats_t stats{};
  double staleness_sum = 0;
  uint64_t staleness_samples = 0;
  const unsigned char* bulk = nullptr;  // into the caller's blob, valid during the import
  uint64_t digest = 0;
};

scclResult_t readHeader(const scclEventComm& ec, const void* blob, size_t bytes,
                        StateBlobHeader* h) {
  SCCL_CHECK(openStateBlob(blob, bytes, kEventStateMagic, kWhat, h));
  SCCL_REQUIRE_ARG(h->nranks == uint32_t(ec.comm->nranks) && h->rank == uint32_t(ec.comm->rank),
                   "event communicator checkpoint: written by rank %u of %u, loaded on rank %d "
                   "of %d",
                   h->rank, h->nranks, ec.comm->rank, ec.comm->nranks);
  SCCL_REQUIRE_ARG(h->count == ec.count && h->dtype == uint32_t(ec.dtype) &&
                       h->second_dtype == uint32_t(ec.dtype),
                   "event communicator checkpoint: of %llu elements of dtype %u, this one has %zu "
                   "of %s",
                   static_cast<unsigned long long>(h->count), h->dtype, ec.count,
                   dataTypeName(ec.dtype));
  SCCL_REQUIRE_ARG(h->fingerprint == checkpointFingerprint(ec),
                   "event communicator checkpoint: written by one of another layout, config, "
                   "neighbours or weights (fingerprint %016llx, this one's %016llx)",
                   static_cast<unsigned long long>(h->fingerprint),
                   static_cast<unsigned long long>(checkpointFingerprint(ec)));
  SCCL_REQUIRE_ARG(h->bulk_bytes == bulkBytes(ec),
                   "event communicator checkpoint: %llu bytes of copies, this one holds %zu",
                   static_cast<unsigned long long>(h->bulk_bytes), bulkBytes(ec));
  return scclSuccess;
}

scclResult_t readOwn(const scclEventComm& ec, StateReader& r, LoadedEventState* out) {
  uint64_t ntensors = 0, ncopies = 0, stats_size = 0;
  SCCL_CHECK(r.u64("tensor count", &ntensors));
  SCCL_REQUIRE_ARG(ntensors == ec.triggers.size(),
                   "event communicator checkpoint: %llu triggers for %zu tensors",
                   static_cast<unsigned long long>(ntensors), ec.triggers.size());
  out->triggers.assign(ec.triggers.size(), TensorTrigger(ec.config.trigger));
  for (TensorTrigger& trigger : out->triggers) SCCL_CHECK(trigger.loadState(r, out->pass));
  SCCL_CHECK(r.u64("held copy count", &ncopies));
  SCCL_REQUIRE_ARG(ncopies == ec.received_copy.size(),
                   "event communicator checkpoint: %llu held copies for %zu (neighbour, tensor) "
                   "pairs",
                   static_cast<unsigned long long>(ncopies), ec.received_copy.size());
  out->received_copy.resize(ncopies);
  for (SlotCopy& copy : out->received_copy) {
    SCCL_CHECK(r.u64("held copy's version", &copy.version));
    SCCL_CHECK(r.u64("held copy's pass", &copy.pass));
    // A neighbour sends at most once per pass; synchronous reads take no copy from a later pass.
    SCCL_REQUIRE_ARG(copy.version <= (uint64_t{1} << 62) && (copy.version != 0 || copy.pass == 0) &&
                         (!ec.config.synchronous || copy.pass < out->pass || copy.version == 0),
                     "event communicator checkpoint: a held copy of version %llu from pass %llu "
                     "at pass %llu",
                     static_cast<unsigned long long>(copy.version),
                     static_cast<unsigned long long>(copy.pass),
                     static_cast<unsigned long long>(out->pass));
  }
  SCCL_CHECK(r.u64("statistics size", &stats_size));
  SCCL_REQUIRE_ARG(
      stats_size == sizeof(scclEventStats_t),
      "event communicator checkpoint: statistics of %llu bytes, this library's are %zu",
      static_cast<unsigned long long>(stats_size), sizeof(scclEventStats_t));
  SCCL_CHECK(r.bytes("statistics", &out->stats, sizeof(scclEventStats_t)));
  SCCL_REQUIRE_ARG(out->stats.size == sizeof(scclEventStats_t),
                   "event communicator checkpoint: the statistics' size field is %zu",
                   out->stats.size);
  SCCL_CHECK(r.f64("staleness sum", &out->staleness_sum));
  SCCL_CHECK(r.u64("staleness samples", &out->staleness_samples));
  return r.finish();
}

scclResult_t parseState(const scclEventComm& ec, const unsigned char* blob, size_t bytes,
                        LoadedEventState* out) {
  StateBlobHeader h;
  SCCL_CHECK(readHeader(ec, blob, bytes, &h));
  StateReader shared(blob + kStateHeaderBytes, h.shared_bytes, "shared section");
  StateReader own(blob + kStateHeaderBytes + h.shared_bytes, h.own_bytes, "own section");
  SCCL_CHECK(shared.u64("pass", &out->pass));
  SCCL_REQUIRE_ARG(out->pass < (uint64_t{1} << 62), "event communicator checkpoint: pass %llu",
                   static_cast<unsigned long long>(out->pass));
  SCCL_CHECK(shared.finish());
  SCCL_CHECK(readOwn(ec, own, out));
  out->bulk = blob + h.bulkOffset();
  // What every rank shares: the layout and config (the neighbours are each rank's own), and in
  // synchronous mode the pass.
  out->digest =
      ec.config.synchronous ? ec.fingerprint ^ (out->pass * 0x9e3779b97f4a7c15ull) : ec.fingerprint;
  return scclSuccess;
}

void applyState(scclEventComm& ec, LoadedEventState& loaded) {
  ec.pass = loaded.pass;
  ec.triggers = std::move(loaded.triggers);
  ec.received_copy = std::move(loaded.received_copy);
  ec.stats = loaded.stats;
  ec.staleness_sum = loaded.staleness_sum;
  ec.staleness_samples = loaded.staleness_samples;
  const unsigned char* bulk = loaded.bulk;
  if (ec.sent_copy.size() > 0) {
    std::memcpy(ec.sent_copy.data(), bulk, ec.sent_copy.size());
    bulk += ec.sent_copy.size();
  }
  for (AlignedBuffer& copy : ec.received) {
    std::memcpy(copy.data(), bulk, copyBytes(ec));
    bulk += copyBytes(ec);
  }
}

// The held copies back into this rank's own window, each with its version and pass, as the
// neighbours' puts left them in the saved run; then a barrier, before any neighbour's next put.
scclResult_t republishCopies(scclEventComm& ec) {
  const size_t ntensors = ec.tensor_sizes.size();
  std::vector<SlotWrite> writes;
  for (size_t j = 0; j < ec.neighbours.size(); ++j) {
    writes.clear();
    const auto* copy = static_cast<const std::byte*>(ec.received[j].data());
    for (size_t t = 0; t < ntensors; ++t) {
      const SlotCopy& held = ec.received_copy[j * ntensors + t];
      if (held.version == 0) continue;
      SlotWrite w;
      w.slot = t;
      w.payload = copy + ec.tensor_offsets[t] * ec.element_bytes;
      w.version = held.version;
      w.pass = held.pass;
      writes.push_back(w);
    }
    SCCL_CHECK(
        commRecordFailure(ec.comm, writeSlots(*ec.window, ec.comm->rank, j * ec.region.bytes(),
                                              ec.region, writes.data(), writes.size())));
  }
  return commRecordFailure(ec.comm, ec.comm->transport->barrier());
}

}  // namespace

scclResult_t eventCommStateSize(const scclEventComm& ec, size_t* bytes) {
  EventSections sections;
  writeSections(ec, &sections);
  *bytes = headerOf(ec, sections).total_bytes;
  return scclSuccess;
}

scclResult_t eventCommExportState(const scclEventComm& ec, void* buffer, size_t bytes,
                                  size_t* written) {
  EventSections sections;
  writeSections(ec, &sections);
  const StateBlobHeader h = headerOf(ec, sections);
  SCCL_REQUIRE_ARG(bytes >= h.total_bytes,
                   "checkpoint buffer of %zu bytes; this event communicator's state needs %llu "
                   "(scclEventCommGetStateSize)",
                   bytes, static_cast<unsigned long long>(h.total_bytes));
  auto* out = static_cast<unsigned char*>(buffer);
  unsigned char* bulk = out + h.bulkOffset();
  if (ec.sent_copy.size() > 0) {
    std::memcpy(bulk, ec.sent_copy.data(), ec.sent_copy.size());
    bulk += ec.sent_copy.size();
  }
  for (const AlignedBuffer& copy : ec.received) {
    std::memcpy(bulk, copy.data(), copyBytes(ec));
    bulk += copyBytes(ec);
  }
  sealStateBlob(h, sections.shared, sections.own, out);
  if (written != nullptr) *written = h.total_bytes;
  return scclSuccess;
}

scclResult_t eventCommImportState(scclEventComm& ec, const void* buffer, size_t bytes) {
  LoadedEventState loaded;
  const scclResult_t parsed =
      parseState(ec, static_cast<const unsigned char*>(buffer), bytes, &loaded);
  CallRecord record = callRecord(CallOperation::EventCommImportState);
  record.count = ec.count;
  record.dtype = static_cast<int16_t>(ec.dtype);
  record.object = ec.identity;
  record.config = loaded.digest;
  record.object_call = ec.config.synchronous ? loaded.pass : 0;
  SCCL_CHECK(agreeOnImport(ec.comm, parsed, record, CallOperation::EventCommImportRefused, kWhat));
  applyState(ec, loaded);
  SCCL_CHECK(republishCopies(ec));
  SCCL_INFO(LogSubsys::Coll, "event communicator %p rank %d: checkpoint of pass %llu loaded",
            static_cast<void*>(&ec), ec.comm->rank, static_cast<unsigned long long>(ec.pass));
  return scclSuccess;
}

}  // namespace sccl
