// EventGraD: event-triggered decentralised averaging over one-sided puts.
//
// Paper: S. Ghosh, V. Gupta, "EventGraD: Event-Triggered Communication in Parallel Stochastic
// Gradient Descent" (Workshop on Machine Learning in HPC Environments, SC20, 2020), on top of
// D-PSGD (Lian et al., NeurIPS 2017). Reference code: soumyadipghosh/eventgrad,
// dmnist/event/event.cpp.
//
// One pass (eventCommStep), for a flat parameter buffer cut into tensors:
//  1. per tensor: L2 norm; the trigger (event_trigger.h) decides the event;
//  2. per neighbour, one window epoch: every fired tensor is put into the neighbour's window
//     (slot protocol, transports/slot_window.h: payload and pass tag, flush, version word);
//  3. synchronous mode: a barrier, so that every copy sent in this pass has landed everywhere;
//  4. per neighbour and tensor: the newest copy sent in a pass <= this one is read from the own
//     window (only when its version changed); a read is never torn;
//  5. per tensor: x = w_self x + sum_j w_j y_j, with j in ascending rank order, accumulated in
//     double and rounded once; a neighbour without any copy yet counts with x. Option
//     (averaging = differences, not in the paper): x = x + sum_j w_j (y_j - s), s the own copy
//     as last sent, which keeps the sum of the models over the ranks unchanged by averaging.
//
// Bytes on the wire per pass and rank: for each event, (tensor bytes + 16) to every neighbour
// (D-PSGD: all tensor bytes to every neighbour); synchronous mode adds one barrier (zero-byte
// messages, O(log n) rounds); reads are local (four round trips per neighbour region over MPI,
// whatever the number of tensors). The window holds 2 copies per (neighbour, tensor) (double
// buffering) plus 24 bytes of words per slot.
//
// Deliberate differences from the reference code: the threshold rule of the paper (see
// event_trigger.h); reads go through the slot protocol instead of reading the window memory with
// no synchronisation (which can return half-written tensors); all tensors are put before any is
// averaged (the reference interleaves per tensor), one lock epoch per neighbour per pass instead
// of per tensor; and the synchronous mode, which the reference lacks (its result depends on
// timing, like our asynchronous mode).
#include "event/event_comm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "core/divide_by_ranks.h"
#include "comm/call_agreement.h"
#include "kernels/shared/canonical_nan.h"
#include "comm/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "transports/slot_window.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

uint64_t mixWord(uint64_t hash, uint64_t word) {
  hash ^= word + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash * 0xc4ceb9fe1a85ec53ull;
}

// ---- creation ---------------------------------------------------------------------------------

scclResult_t validateTensors(const EventLayout& layout) {
  SCCL_REQUIRE_ARG(layout.dtype == scclFloat32 || layout.dtype == scclFloat64,
                   "event communicator dtype %s: parameters must be float32 or float64",
                   dataTypeName(layout.dtype));
  size_t bytes = 0;
  SCCL_REQUIRE_ARG(
      byteSize(layout.count, layout.dtype, &bytes) && layout.count <= (size_t{1} << 60),
      "event communicator count %zu is too large", layout.count);
  SCCL_REQUIRE_ARG(layout.tensor_sizes != nullptr, "tensorSizes is NULL");
  SCCL_REQUIRE_ARG(layout.ntensors >= 1, "ntensors %d: at least one tensor is needed",
                   layout.ntensors);
  size_t total = 0;
  for (int t = 0; t < layout.ntensors; ++t) {
    size_t size = layout.tensor_sizes[t];
    SCCL_REQUIRE_ARG(size >= 1, "tensorSizes[%d] is 0: tensors must not be empty", t);
    SCCL_REQUIRE_ARG(!__builtin_add_overflow(total, size, &total) && total <= layout.count,
                     "tensorSizes sum past count %zu at tensor %d", layout.count, t);
  }
  SCCL_REQUIRE_ARG(total == layout.count, "tensorSizes sum to %zu, not to count %zu", total,
                   layout.count);
  return scclSuccess;
}

// The neighbour list (sorted) with its weights, from the arguments or the ring default.
scclResult_t resolveNeighbours(const EventLayout& layout, int rank, int nranks,
                               std::vector<int>* neighbours, std::vector<double>* weights,
                               double* self_weight) {
  std::vector<std::pair<int, double>> list;
  if (layout.neighbours == nullptr) {
    SCCL_REQUIRE_ARG(layout.nneighbours == 0,
                     "neighbours is NULL (ring) but nneighbours is %d; pass 0", layout.nneighbours);
    SCCL_REQUIRE_ARG(layout.weights == nullptr,
                     "weights need an explicit neighbour list (neighbours is NULL)");
    if (nranks > 1) list.emplace_back((rank + nranks - 1) % nranks, 0.0);
    if (nranks > 2) list.emplace_back((rank + 1) % nranks, 0.0);
  } else {
    SCCL_REQUIRE_ARG(layout.nneighbours >= 0 && layout.nneighbours < nranks,
                     "nneighbours %d out of range [0, %d)", layout.nneighbours, nranks);
    for (int j = 0; j < layout.nneighbours; ++j) {
      int peer = layout.neighbours[j];
      SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks, "neighbours[%d] = %d is not a rank of [0, %d)",
                       j, peer, nranks);
      SCCL_REQUIRE_ARG(peer != rank, "neighbours[%d] is this rank (%d) itself", j, rank);
      list.emplace_back(peer, layout.weights ? layout.weights[1 + j] : 0.0);
    }
  }
  std::sort(list.begin(), list.end());
  for (size_t j = 1; j < list.size(); ++j) {
    SCCL_REQUIRE_ARG(list[j].first != list[j - 1].first, "neighbour %d is listed twice",
                     list[j].first);
  }
  if (layout.weights != nullptr) {
    double sum = 0.0;
    for (int j = 0; j <= layout.nneighbours; ++j) {
      double w = layout.weights[j];
      SCCL_REQUIRE_ARG(std::isfinite(w) && w >= 0, "weights[%d] = %g must be finite and >= 0", j,
                       w);
      sum += w;
    }
    SCCL_REQUIRE_ARG(std::fabs(sum - 1.0) <= 1e-9, "weights sum to %.17g, not 1", sum);
    *self_weight = layout.weights[0];
  } else {
    double uniform = 1.0 / static_cast<double>(list.size() + 1);
    *self_weight = uniform;
    for (auto& entry : list) entry.second = uniform;
  }
  neighbours->clear();
  weights->clear();
  for (const auto& [peer, weight] : list) {
    neighbours->push_back(peer);
    weights->push_back(weight);
  }
  return scclSuccess;
}

// What every rank must agree on, all-gathered at creation.
struct EventDescription {
  uint64_t fingerprint;
  int32_t rank;
  int32_t degree;
};

uint64_t layoutFingerprint(const scclEventComm& ec) {
  uint64_t h = mixWord(0x5cc1e7e7, ec.count);
  h = mixWord(h, static_cast<uint64_t>(ec.dtype));
  h = mixWord(h, ec.tensor_sizes.size());
  for (size_t size : ec.tensor_sizes) h = mixWord(h, size);
  return eventConfigFingerprint(ec.config, h);
}

// Checks agreement on layout and config, gathers every rank's neighbour list, checks the graph is
// symmetric and finds this rank's position in each neighbour's list. Every rank reaches the same
// verdict from the same gathered data.
scclResult_t exchangeGraph(scclEventComm& ec) {
  scclComm* comm = ec.comm;
  size_t n = static_cast<size_t>(comm->nranks);
  EventDescription mine{layoutFingerprint(ec), comm->rank,
                        static_cast<int32_t>(ec.neighbours.size())};
  std::vector<EventDescription> all(n);
  SCCL_CHECK(commRecordFailure(comm, comm->transport->allGather(&mine, all.data(), sizeof(mine))));
  for (size_t r = 0; r < n; ++r) {
    if (all[r].fingerprint != mine.fingerprint) {
      return fail(scclInvalidUsage,
                  "event communicator: rank %zu's count, dtype, tensor sizes or config differ "
                  "from rank %d's (%zu elements of %s in %zu tensors, %s)",
                  r, comm->rank, ec.count, dataTypeName(ec.dtype), ec.tensor_sizes.size(),
                  describeEventConfig(ec.config).c_str());
    }
  }
  std::vector<size_t> sizes(n), offsets(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    if (all[r].degree < 0 || static_cast<size_t>(all[r].degree) >= n) {
      return fail(scclRemoteError, "event communicator: rank %zu reports %d neighbours", r,
                  all[r].degree);
    }
    sizes[r] = static_cast<size_t>(all[r].degree) * sizeof(int32_t);
    offsets[r] = total;
    total += sizes[r];
  }
  std::vector<int32_t> mine_list(ec.neighbours.begin(), ec.neighbours.end());
  std::vector<int32_t> lists(total / sizeof(int32_t) + 1);
  SCCL_CHECK(commRecordFailure(
      comm, comm->transport->allGatherV(mine_list.data(), mine_list.size() * sizeof(int32_t),
                                        lists.data(), sizes.data(), offsets.data())));
  auto listOf = [&](size_t r) {
    const int32_t* begin = lists.data() + offsets[r] / sizeof(int32_t);
    return std::vector<int32_t>(begin, begin + all[r].degree);
  };
  for (size_t i = 0; i < n; ++i) {
    for (int32_t j : listOf(i)) {
      if (j < 0 || static_cast<size_t>(j) >= n) {
        return fail(scclRemoteError, "event communicator: rank %zu lists rank %d", i, j);
      }
      std::vector<int32_t> back = listOf(static_cast<size_t>(j));
      if (std::find(back.begin(), back.end(), static_cast<int32_t>(i)) == back.end()) {
        return fail(scclInvalidUsage,
                    "event communicator: the neighbour graph is not symmetric: rank %zu lists "
                    "rank %d, but rank %d does not list rank %zu",
                    i, j, j, i);
      }
    }
  }
  ec.position_at_neighbour.clear();
  for (int peer : ec.neighbours) {
    std::vector<int32_t> theirs = listOf(static_cast<size_t>(peer));
    ec.position_at_neighbour.push_back(
        static_cast<size_t>(std::find(theirs.begin(), theirs.end(), comm->rank) - theirs.begin()));
  }
  return scclSuccess;
}

void clearStats(scclEventComm& ec) {
  ec.stats = scclEventStats_t{};
  ec.stats.size = sizeof(scclEventStats_t);
}

// ---- one pass ---------------------------------------------------------------------------------

// L2 norm with 8 interleaved partial sums of squares (lane i % 8), added pairwise at the end:
// a fixed order (so the trigger is bitwise reproducible and a test model can mirror it) that the
// compiler can keep in vector registers.
template <typename T>
double tensorNorm(const T* x, size_t n) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t l = 0; l < 8; ++l) lanes[l] += double(x[i + l]) * double(x[i + l]);
  }
  for (size_t l = 0; i < n; ++i, ++l) lanes[l] += double(x[i]) * double(x[i]);
  double sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  return std::sqrt(sum);
}

// x = w_self x + sum_j w_j y_j in double, j in order, rounded once. DEGREE > 0 fixes the number
// of neighbours at compile time so the loop vectorises; the arithmetic is the same either way.
// A NaN result is the canonical NaN (kernels/shared/canonical_nan.h, the rule of every computed
// value; the canonical double NaN narrows to the canonical float one).
template <size_t DEGREE, typename T>
void averageFixed(T* x, size_t n, double self_weight, const double* weights, const T* const* y,
                  size_t degree) {
  const size_t d = DEGREE > 0 ? DEGREE : degree;
  for (size_t i = 0; i < n; ++i) {
    double acc = self_weight * double(x[i]);
    for (size_t j = 0; j < d; ++j) acc += weights[j] * double(y[j][i]);
    x[i] = static_cast<T>(canonicalizeNaN(acc));
  }
}

// x = x + sum_j w_j (y_j - s), s the own copy as last sent; in double, j in order, rounded once.
template <size_t DEGREE, typename T>
void averageDifferencesFixed(T* x, size_t n, const double* weights, const T* const* y, const T* s,
                             size_t degree) {
  const size_t d = DEGREE > 0 ? DEGREE : degree;
  for (size_t i = 0; i < n; ++i) {
    double sent = double(s[i]);
    double acc = double(x[i]);
    for (size_t j = 0; j < d; ++j) acc += weights[j] * (double(y[j][i]) - sent);
    x[i] = static_cast<T>(canonicalizeNaN(acc));
  }
}

template <typename T>
void averageDifferences(scclEventComm& ec, T* x, size_t n, const std::vector<const T*>& copies,
                        const T* sent) {
  const double* w = ec.neighbour_weights.data();
  const T* const* y = copies.data();
  switch (copies.size()) {
    case 0: break;
    case 1: averageDifferencesFixed<1>(x, n, w, y, sent, 1); break;
    case 2: averageDifferencesFixed<2>(x, n, w, y, sent, 2); break;
    default: averageDifferencesFixed<0>(x, n, w, y, sent, copies.size()); break;
  }
}

template <typename T>
void averageTensor(scclEventComm& ec, T* x, size_t n, const std::vector<const T*>& copies) {
  const double* w = ec.neighbour_weights.data();
  const T* const* y = copies.data();
  switch (copies.size()) {
    case 0: averageFixed<0>(x, n, ec.self_weight, w, y, 0); break;
    case 1: averageFixed<1>(x, n, ec.self_weight, w, y, 1); break;
    case 2: averageFixed<2>(x, n, ec.self_weight, w, y, 2); break;
    default: averageFixed<0>(x, n, ec.self_weight, w, y, copies.size()); break;
  }
}

template <typename T>
void averageAll(scclEventComm& ec, T* params) {
  const size_t ntensors = ec.tensor_sizes.size();
  std::vector<const T*>& copies = [&]() -> std::vector<const T*>& {
    if constexpr (std::is_same_v<T, float>) {
      return ec.copies_float;
    } else {
      return ec.copies_double;
    }
  }();
  copies.resize(ec.neighbours.size());
  for (size_t t = 0; t < ntensors; ++t) {
    T* x = params + ec.tensor_offsets[t];
    // By differences, s is the own copy as last sent (x itself before the first send).
    const T* sent = x;
    if (ec.config.average_differences && ec.triggers[t].events() > 0)
      sent = static_cast<const T*>(ec.sent_copy.data()) + ec.tensor_offsets[t];
    // A neighbour without a copy yet counts with the own tensor (copies) or adds nothing
    // (differences). Every copy is read before x is written at the same index, so aliasing x is
    // safe.
    for (size_t j = 0; j < copies.size(); ++j) {
      bool have = ec.received_copy[j * ntensors + t].version != 0;
      const T* missing = ec.config.average_differences ? sent : x;
      copies[j] =
          have ? static_cast<const T*>(ec.received[j].data()) + ec.tensor_offsets[t] : missing;
    }
    if (ec.config.average_differences) {
      averageDifferences(ec, x, ec.tensor_sizes[t], copies, sent);
    } else {
      averageTensor(ec, x, ec.tensor_sizes[t], copies);
    }
  }
}

template <typename T>
void decideEvents(scclEventComm& ec, const T* params, std::vector<uint8_t>* fired) {
  for (size_t t = 0; t < ec.tensor_sizes.size(); ++t) {
    double norm = tensorNorm(params + ec.tensor_offsets[t], ec.tensor_sizes[t]);
    (*fired)[t] = ec.triggers[t].decide(ec.pass, norm) ? 1 : 0;
  }
}

scclResult_t putEvents(scclEventComm& ec, const void* params, const std::vector<uint8_t>& fired) {
  std::vector<SlotWrite>& writes = ec.writes;
  writes.clear();
  const auto* base = static_cast<const std::byte*>(params);
  for (size_t t = 0; t < fired.size(); ++t) {
    if (!fired[t]) continue;
    SlotWrite w;
    w.slot = t;
    w.payload = base + ec.tensor_offsets[t] * ec.element_bytes;
    w.version = ec.triggers[t].events();
    w.pass = ec.pass;
    writes.push_back(w);
  }
  for (size_t j = 0; j < ec.neighbours.size(); ++j) {
    SCCL_CHECK(commRecordFailure(
        ec.comm,
        writeSlots(*ec.window, ec.neighbours[j], ec.position_at_neighbour[j] * ec.region.bytes(),
                   ec.region, writes.data(), writes.size())));
  }
  return scclSuccess;
}

scclResult_t readCopies(scclEventComm& ec) {
  if (ec.neighbours.empty()) return scclSuccess;
  const size_t ntensors = ec.tensor_sizes.size();
  const uint64_t max_pass = ec.config.synchronous ? ec.pass : UINT64_MAX;
  auto deadline = Clock::now() + std::chrono::milliseconds(ec.comm->timeout_ms);
  scclComm* comm = ec.comm;
  std::vector<void*>& outs = ec.read_outs;
  outs.resize(ntensors);
  SlotReadStats read_stats;
  SCCL_CHECK(commRecordFailure(comm, ec.window->lock(comm->rank)));
  scclResult_t result = scclSuccess;
  for (size_t j = 0; j < ec.neighbours.size() && result == scclSuccess; ++j) {
    auto* copy = static_cast<std::byte*>(ec.received[j].data());
    for (size_t t = 0; t < ntensors; ++t) outs[t] = copy + ec.tensor_offsets[t] * ec.element_bytes;
    result = readSlots(*ec.window, j * ec.region.bytes(), ec.region, max_pass, outs.data(),
                       &ec.received_copy[j * ntensors], &read_stats, deadline, &ec.read_scratch);
  }
  ec.stats.readRetries += read_stats.retries;
  scclResult_t unlocked = ec.window->unlock(comm->rank);
  if (result == scclSuccess) result = unlocked;
  return commRecordFailure(comm, result);
}

void recordStaleness(scclEventComm& ec) {
  for (const SlotCopy& copy : ec.received_copy) {
    if (copy.version == 0) {
      ++ec.stats.missingCopies;
      continue;
    }
    uint64_t stale = ec.pass >= copy.pass ? ec.pass - copy.pass : 0;
    ec.staleness_sum += static_cast<double>(stale);
    ++ec.staleness_samples;
    ec.stats.maxStaleness = std::max(ec.stats.maxStaleness, stale);
  }
}

// The record of a collective call on `ec` (its identity is 0 until its creation was agreed).
CallRecord eventRecord(const scclEventComm& ec, CallOperation operation) {
  CallRecord record = callRecord(operation);
  record.count = ec.count;
  record.dtype = static_cast<int16_t>(ec.dtype);
  record.object = ec.identity;
  record.config = ec.fingerprint;
  record.object_call = operation == CallOperation::EventCommStep ? ec.pass : 0;
  return record;
}

}  // namespace

scclResult_t eventCommCreate(scclComm* comm, const EventLayout& layout,
                             const scclEventConfig_t& config, scclEventComm** out) {
  SCCL_CHECK(validateTensors(layout));
  auto ec = std::make_unique<scclEventComm>();
  ec->comm = comm;
  SCCL_CHECK(resolveEventConfig(config, &ec->config));
  SCCL_CHECK(resolveNeighbours(layout, comm->rank, comm->nranks, &ec->neighbours,
                               &ec->neighbour_weights, &ec->self_weight));
  if (!comm->transport->capabilities().one_sided) {
    return fail(scclInvalidUsage, "event communicator: transport '%s' has no one-sided windows",
                comm->transport->name());
  }
  ec->count = layout.count;
  ec->dtype = layout.dtype;
  ec->element_bytes = dataTypeSize(layout.dtype);
  ec->tensor_sizes.assign(layout.tensor_sizes, layout.tensor_sizes + layout.ntensors);
  size_t offset = 0;
  std::vector<size_t> payload_bytes;
  for (size_t size : ec->tensor_sizes) {
    ec->tensor_offsets.push_back(offset);
    payload_bytes.push_back(size * ec->element_bytes);
    offset += size;
  }
  ec->region = SlotRegion(payload_bytes);
  ec->fingerprint = layoutFingerprint(*ec);
  CallRecord record = eventRecord(*ec, CallOperation::EventCommCreate);
  uint64_t sequence = 0;
  SCCL_CHECK(agreeOnCall(comm, record, &sequence,
                         ("this rank's config: " + describeEventConfig(ec->config)).c_str()));
  ec->identity = sequence + 1;
  SCCL_CHECK(exchangeGraph(*ec));
  size_t window_bytes = std::max<size_t>(1, ec->neighbours.size()) * ec->region.bytes();
  SCCL_CHECK(commRecordFailure(comm, comm->transport->createWindow(window_bytes, &ec->window)));
  ec->received.resize(ec->neighbours.size());
  for (auto& copy : ec->received) copy.resize(ec->count * ec->element_bytes);
  ec->received_copy.assign(ec->neighbours.size() * ec->tensor_sizes.size(), SlotCopy{});
  ec->triggers.assign(ec->tensor_sizes.size(), TensorTrigger(ec->config.trigger));
  if (ec->config.average_differences) ec->sent_copy.resize(ec->count * ec->element_bytes);
  clearStats(*ec);
  SCCL_INFO(LogSubsys::Coll,
            "event communicator %p rank %d: %zu x %s in %zu tensors, %zu neighbours, %s, window "
            "%zu bytes",
            static_cast<void*>(ec.get()), comm->rank, ec->count, dataTypeName(ec->dtype),
            ec->tensor_sizes.size(), ec->neighbours.size(), describeEventConfig(ec->config).c_str(),
            window_bytes);
  registerHandle(ec.get(), scclEventComm::kMagic);
  *out = ec.release();
  return scclSuccess;
}

void eventCommDestroy(scclEventComm* ec) {
  unregisterHandle(ec);
  ec->magic = 0;
  // A broken communicator cannot free an MPI window collectively: its memory is left to the
  // process (peers may still be writing into it).
  bool healthy =
      isLiveHandle(ec->comm, scclComm::kMagic) && ec->comm->async_error.load() == scclSuccess;
  if (!healthy) (void)ec->window.release();
  delete ec;
}

scclResult_t eventCommStep(scclEventComm* ec, void* params) {
  // A synchronous pass is a collective call (it ends with a barrier): the ranks agree on it
  // before anything is put. An asynchronous pass is not: each rank runs its own passes.
  if (ec->config.synchronous)
    SCCL_CHECK(agreeOnCall(ec->comm, eventRecord(*ec, CallOperation::EventCommStep)));
  scclEventStats_t& s = ec->stats;
  Clock::time_point start = Clock::now();
  std::vector<uint8_t>& fired = ec->fired;
  fired.assign(ec->tensor_sizes.size(), 0);
  if (ec->dtype == scclFloat32) {
    decideEvents(*ec, static_cast<const float*>(params), &fired);
  } else {
    decideEvents(*ec, static_cast<const double*>(params), &fired);
  }
  uint64_t events = 0, event_bytes = 0;
  for (size_t t = 0; t < fired.size(); ++t) {
    if (!fired[t]) continue;
    if (ec->config.average_differences) {
      size_t offset = ec->tensor_offsets[t] * ec->element_bytes;
      std::memcpy(static_cast<std::byte*>(ec->sent_copy.data()) + offset,
                  static_cast<const std::byte*>(params) + offset,
                  ec->tensor_sizes[t] * ec->element_bytes);
    }
    ++events;
    event_bytes += ec->tensor_sizes[t] * ec->element_bytes + 16;
  }
  s.timeTriggerUs += microsecondsSince(start);

  start = Clock::now();
  SCCL_CHECK(putEvents(*ec, params, fired));
  s.timePutUs += microsecondsSince(start);

  if (ec->config.synchronous) {
    start = Clock::now();
    SCCL_CHECK(commRecordFailure(ec->comm, ec->comm->transport->barrier()));
    s.timeSyncUs += microsecondsSince(start);
  }

  start = Clock::now();
  SCCL_CHECK(readCopies(*ec));
  s.timeReadUs += microsecondsSince(start);

  start = Clock::now();
  if (ec->dtype == scclFloat32) {
    averageAll(*ec, static_cast<float*>(params));
  } else {
    averageAll(*ec, static_cast<double*>(params));
  }
  s.timeAverageUs += microsecondsSince(start);

  recordStaleness(*ec);
  const uint64_t degree = ec->neighbours.size();
  s.events += events;
  s.lastPassEvents = events;
  s.messagesSent += events * degree;
  s.messagesDense += ec->tensor_sizes.size() * degree;
  s.bytesSent += event_bytes * degree;
  s.bytesDense += ec->count * ec->element_bytes * degree;
  ++ec->pass;
  s.passes = ec->pass;
  return scclSuccess;
}

scclResult_t eventCommAverageModel(scclEventComm* ec, const void* params, void* out) {
  scclComm* comm = ec->comm;
  SCCL_CHECK(runAgreedCall(comm, eventRecord(*ec, CallOperation::EventCommAverageModel),
                           *comm->transport, [&](Transport& transport) {
                             return transport.allReduce(params, out, ec->count, ec->dtype,
                                                        ReduceOp::Sum);
                           }));
  return divideByRanks(out, ec->count, ec->dtype, comm->nranks);
}

scclResult_t eventCommStats(const scclEventComm* ec, scclEventStats_t* stats) {
  scclEventStats_t copy = ec->stats;
  copy.messageFraction =
      copy.messagesDense == 0 ? 0.0 : double(copy.messagesSent) / double(copy.messagesDense);
  copy.byteFraction = copy.bytesDense == 0 ? 0.0 : double(copy.bytesSent) / double(copy.bytesDense);
  copy.meanStaleness =
      ec->staleness_samples == 0 ? 0.0 : ec->staleness_sum / double(ec->staleness_samples);
  size_t bytes = std::min(stats->size, sizeof(scclEventStats_t));
  copy.size = bytes;
  std::memcpy(stats, &copy, bytes);
  return scclSuccess;
}

}  // namespace sccl
