// Event communicators (EventGraD).
#include <cstddef>

#include "api/api_guard.h"
#include "api/api_validate.h"
#include "event/event_comm.h"
#include "event/event_state.h"

namespace {

scclResult_t requireLiveEventComm(const scclEventComm* ec) {
  SCCL_REQUIRE_ARG(ec != nullptr, "event communicator is NULL");
  SCCL_REQUIRE_ARG(sccl::isLiveHandle(ec, scclEventComm::kMagic),
                   "%p is not a live event communicator (destroyed, or never created)",
                   static_cast<const void*>(ec));
  return scclSuccess;
}

// The communicator an event-communicator call reports its errors on (when both are live).
scclComm* commOf(const scclEventComm* ec) {
  return (ec != nullptr && sccl::isLiveHandle(ec, scclEventComm::kMagic) &&
          sccl::isLiveHandle(ec->comm, scclComm::kMagic))
             ? ec->comm
             : nullptr;
}

// Checks shared by the calls that take the parameter buffer.
scclResult_t requireParams(const scclEventComm* ec, const void* buffer, const char* what,
                           size_t count, const scclDataType_t& dtype, void* stream) {
  SCCL_CHECK(sccl::requireDataType(dtype));
  SCCL_REQUIRE_ARG(count == ec->count, "count %zu differs from the event communicator's %zu", count,
                   ec->count);
  SCCL_REQUIRE_ARG(dtype == ec->dtype, "dtype %s differs from the event communicator's %s",
                   sccl::dataTypeName(dtype), sccl::dataTypeName(ec->dtype));
  return sccl::requireHostBuffer(buffer, count * ec->element_bytes, what, stream);
}

}  // namespace

extern "C" {

SCCL_API scclResult_t scclEventConfigFromJson(const char* json, scclEventConfig_t* config) {
  return sccl::guardedCall(__func__, nullptr,
                           [&] { return sccl::eventConfigFromJson(json, config); });
}

SCCL_API scclResult_t scclEventCommCreate(scclEventComm_t* eventComm, scclComm_t comm, size_t count,
                                          scclDataType_t dtype, const size_t* tensorSizes,
                                          int ntensors, const int* neighbours, int nneighbours,
                                          const double* weights, const scclEventConfig_t* config) {
  return sccl::guardedCall(__func__, comm, [&] {
    SCCL_REQUIRE_ARG(eventComm != nullptr, "event communicator output pointer is NULL");
    SCCL_CHECK(sccl::requireHealthyComm(comm));
    size_t bytes = 0;  // the parameter buffer: at most 2^56 bytes, as every buffer
    SCCL_CHECK(sccl::requireByteSize(count, dtype, &bytes));
    SCCL_REQUIRE_ARG(config != nullptr, "event config is NULL (use SCCL_EVENT_CONFIG_INITIALIZER)");
    sccl::EventLayout layout;
    layout.count = count;
    layout.dtype = dtype;
    layout.tensor_sizes = tensorSizes;
    layout.ntensors = ntensors;
    layout.neighbours = neighbours;
    layout.nneighbours = nneighbours;
    layout.weights = weights;
    scclEventComm* created = nullptr;
    SCCL_CHECK(sccl::eventCommCreate(comm, layout, *config, &created));
    *eventComm = created;
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclEventCommDestroy(scclEventComm_t eventComm) {
  return sccl::guardedCall(__func__, nullptr, [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    sccl::eventCommDestroy(eventComm);
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclEventCommStep(scclEventComm_t eventComm, void* params, size_t count,
                                        scclDataType_t dtype, void* stream) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_CHECK(sccl::requireHealthyComm(eventComm->comm));
    SCCL_CHECK(requireParams(eventComm, params, "params", count, dtype, stream));
    return sccl::eventCommStep(eventComm, params);
  });
}

SCCL_API scclResult_t scclEventCommAverageModel(scclEventComm_t eventComm, const void* params,
                                                void* out, size_t count, scclDataType_t dtype,
                                                void* stream) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_CHECK(sccl::requireHealthyComm(eventComm->comm));
    SCCL_CHECK(requireParams(eventComm, params, "params", count, dtype, stream));
    SCCL_CHECK(requireParams(eventComm, out, "out", count, dtype, stream));
    return sccl::eventCommAverageModel(eventComm, params, out);
  });
}

SCCL_API scclResult_t scclEventCommGetStats(scclEventComm_t eventComm, scclEventStats_t* stats) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_REQUIRE_ARG(stats != nullptr, "stats is NULL");
    // 0.1.0's struct ends at timeAverageUs.
    SCCL_CHECK(sccl::requireStatsSize("scclEventStats_t", stats->size,
                                offsetof(scclEventStats_t, timeAverageUs) + sizeof(double)));
    return sccl::eventCommStats(eventComm, stats);
  });
}

SCCL_API scclResult_t scclEventCommGetTensorStats(scclEventComm_t eventComm, uint64_t* events,
                                                  double* thresholds, int ntensors) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_REQUIRE_ARG(events != nullptr, "events is NULL");
    SCCL_REQUIRE_ARG(ntensors >= 0 && static_cast<size_t>(ntensors) == eventComm->triggers.size(),
                     "ntensors %d differs from the event communicator's %zu", ntensors,
                     eventComm->triggers.size());
    for (size_t t = 0; t < eventComm->triggers.size(); ++t) {
      events[t] = eventComm->triggers[t].events();
      if (thresholds != nullptr) thresholds[t] = eventComm->triggers[t].threshold();
    }
    return scclSuccess;
  });
}

SCCL_API scclResult_t scclEventCommGetStateSize(scclEventComm_t eventComm, size_t* bytes) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_REQUIRE_ARG(bytes != nullptr, "state size output pointer is NULL");
    return sccl::eventCommStateSize(*eventComm, bytes);
  });
}

SCCL_API scclResult_t scclEventCommExportState(scclEventComm_t eventComm, void* buffer,
                                               size_t bytes, size_t* written) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_REQUIRE_ARG(buffer != nullptr, "checkpoint buffer is NULL");
    return sccl::eventCommExportState(*eventComm, buffer, bytes, written);
  });
}

SCCL_API scclResult_t scclEventCommImportState(scclEventComm_t eventComm, const void* buffer,
                                               size_t bytes) {
  return sccl::guardedCall(__func__, commOf(eventComm), [&] {
    SCCL_CHECK(requireLiveEventComm(eventComm));
    SCCL_CHECK(sccl::requireHealthyComm(eventComm->comm));
    SCCL_REQUIRE_ARG(buffer != nullptr || bytes == 0, "checkpoint buffer is NULL");
    // An empty buffer is a blob too short for its header: refused by every rank's checks.
    static const unsigned char kNothing = 0;
    return sccl::eventCommImportState(*eventComm, buffer != nullptr ? buffer : &kNothing, bytes);
  });
}

}  // extern "C"
