#include "comm/call_agreement.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "core/dtype.h"
#include "core/log.h"

namespace sccl {
namespace {

// One compared field: its name in messages, how to read it, how to print a value of it.
struct RecordField {
  const char* name;
  uint64_t (*read)(const CallRecord&);
  std::string (*show)(uint64_t);
};

std::string showNumber(uint64_t value) {
  return std::to_string(value);
}

std::string showHex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

std::string showOperation(uint64_t value) {
  return callOperationName(static_cast<uint32_t>(value));
}

std::string showDataType(uint64_t value) {
  const auto dtype = static_cast<int32_t>(value);
  if (dtype < 0) return "none";
  if (dtype >= scclNumTypes) return "invalid (" + std::to_string(dtype) + ")";
  return dataTypeName(static_cast<scclDataType_t>(dtype));
}

std::string showRedOp(uint64_t value) {
  switch (static_cast<int32_t>(value)) {
    case scclSum: return "scclSum";
    case scclAvg: return "scclAvg";
    case scclMax: return "scclMax";
    case scclMin: return "scclMin";
    case -1: return "none";
    default: return "invalid (" + std::to_string(static_cast<int32_t>(value)) + ")";
  }
}

std::string showSigned(uint64_t value) {
  return std::to_string(static_cast<int32_t>(value));
}

std::string showObject(uint64_t value) {
  return value == 0 ? "none" : "the one created by call " + std::to_string(value - 1);
}

// In the order a mismatch is reported: the first differing field names the problem best.
const RecordField kFields[] = {
    {"operation", [](const CallRecord& r) -> uint64_t { return r.operation; }, showOperation},
    {"object (sparsifier or event communicator)",
     [](const CallRecord& r) -> uint64_t { return r.object; }, showObject},
    {"count", [](const CallRecord& r) -> uint64_t { return r.count; }, showNumber},
    {"dtype", [](const CallRecord& r) -> uint64_t { return static_cast<uint32_t>(r.dtype); },
     showDataType},
    {"reduction", [](const CallRecord& r) -> uint64_t { return static_cast<uint32_t>(r.redop); },
     showRedOp},
    {"root", [](const CallRecord& r) -> uint64_t { return static_cast<uint32_t>(r.root); },
     showSigned},
    {"configuration fingerprint", [](const CallRecord& r) -> uint64_t { return r.config; },
     showHex},
    {"the object's call number", [](const CallRecord& r) -> uint64_t { return r.object_call; },
     showNumber},
    {"call number on the communicator", [](const CallRecord& r) -> uint64_t { return r.sequence; },
     showNumber},
};

// "1, 3" (at most eight ranks listed).
std::string rankList(const CallRecord* all, int nranks, const RecordField& field, uint64_t value) {
  std::string list;
  int listed = 0, more = 0;
  for (int r = 0; r < nranks; ++r) {
    if (field.read(all[r]) != value) continue;
    if (listed == 8) {
      ++more;
      continue;
    }
    if (!list.empty()) list += ", ";
    list += std::to_string(r);
    ++listed;
  }
  if (more > 0) list += " and " + std::to_string(more) + " more";
  return list;
}

scclResult_t checkRecords(const CallRecord* all, int nranks, void* context) {
  auto* state = static_cast<detail::AgreementState*>(context);
  // Bounds first: a record is a peer's data.
  uint64_t next = 0;
  for (int r = 0; r < nranks; ++r) {
    if (all[r].magic != CallRecord::kMagic || all[r].rank != r) {
      return fail(scclRemoteError, "%s: rank %d sent a malformed call record (magic %08x, rank %d)",
                  callOperationName(state->record.operation), r, all[r].magic, all[r].rank);
    }
    next = std::max(next, all[r].sequence);
  }
  // Every rank moves to the same next number, so a communicator whose ranks once disagreed about
  // the count of calls is in step again after this refusal.
  state->comm->call_sequence = next + 1;
  state->agreed_sequence = next;
  for (const RecordField& field : kFields) {
    const uint64_t first = field.read(all[0]);
    int other = -1;
    for (int r = 1; r < nranks && other < 0; ++r) {
      if (field.read(all[r]) != first) other = r;
    }
    if (other < 0) continue;
    const uint64_t second = field.read(all[other]);
    state->refused = true;
    // The same text on every rank: it is built from the gathered records alone; what only this
    // rank knows (its configuration) goes to the log.
    if (state->detail != nullptr) {
      SCCL_WARN(LogSubsys::Coll, "rank %d: call agreement refused; %s", state->comm->rank,
                state->detail);
    }
    const bool same_operation = all[other].operation == all[0].operation;
    const std::string what = same_operation
                                 ? std::string("called ") + callOperationName(all[0].operation) +
                                       " with different arguments"
                                 : std::string("called different collectives");
    return fail(scclInvalidUsage,
                "call agreement: the ranks %s (call %" PRIu64
                " on this communicator): %s is %s on rank(s) %s but %s on rank(s) %s; nothing "
                "was exchanged and the communicator stays usable%s",
                what.c_str(), all[0].sequence, field.name, field.show(first).c_str(),
                rankList(all, nranks, field, first).c_str(), field.show(second).c_str(),
                rankList(all, nranks, field, second).c_str(),
                same_operation && state->detail != nullptr
                    ? " (SCCL_DEBUG=WARN logs each rank's configuration)"
                    : "");
  }
  return scclSuccess;
}

}  // namespace

const char* callOperationName(uint32_t operation) {
  switch (static_cast<CallOperation>(operation)) {
    case CallOperation::AllReduce: return "scclAllReduce";
    case CallOperation::AllGather: return "scclAllGather";
    case CallOperation::Broadcast: return "scclBroadcast";
    case CallOperation::Barrier: return "scclBarrier";
    case CallOperation::SparseAllreduce: return "scclSparseAllreduce";
    case CallOperation::SparsifierCreate: return "scclSparsifierCreate";
    case CallOperation::EventCommCreate: return "scclEventCommCreate";
    case CallOperation::EventCommStep: return "scclEventCommStep";
    case CallOperation::EventCommAverageModel: return "scclEventCommAverageModel";
    case CallOperation::SparsifierImportState: return "scclSparsifierImportState";
    case CallOperation::SparsifierImportRefused:
      return "scclSparsifierImportState with a checkpoint its own checks refused";
    case CallOperation::EventCommImportState: return "scclEventCommImportState";
    case CallOperation::EventCommImportRefused:
      return "scclEventCommImportState with a checkpoint its own checks refused";
    case CallOperation::ReduceScatter: return "scclReduceScatter";
    case CallOperation::CommSplit: return "scclCommSplit";
  }
  return "an unknown call";
}

CallRecord callRecord(CallOperation operation) {
  CallRecord record;
  record.operation = static_cast<uint32_t>(operation);
  return record;
}

namespace detail {

CallAgreement prepareAgreement(scclComm* comm, const CallRecord& mine, AgreementState* state) {
  state->comm = comm;
  state->record = mine;
  state->record.magic = CallRecord::kMagic;
  state->record.sequence = comm->call_sequence;
  state->record.rank = comm->rank;
  CallAgreement agreement;
  agreement.mine = &state->record;
  agreement.check = checkRecords;
  agreement.context = state;
  return agreement;
}

scclResult_t recordOutcome(scclComm* comm, const AgreementState& state, scclResult_t result) {
  if (state.refused) return result;  // every rank refused together: nothing is out of step
  return commRecordFailure(comm, result);
}

}  // namespace detail

scclResult_t agreeOnCall(scclComm* comm, const CallRecord& mine, uint64_t* sequence,
                         const char* detail) {
  detail::AgreementState state;
  const CallAgreement agreement = detail::prepareAgreement(comm, mine, &state);
  state.detail = detail;
  SCCL_CHECK(detail::recordOutcome(comm, state, comm->transport->agree(agreement)));
  if (sequence != nullptr) *sequence = state.agreed_sequence;
  return scclSuccess;
}

scclResult_t agreeOnImport(scclComm* comm, scclResult_t parsed, const CallRecord& accepted,
                           CallOperation refused, const char* what) {
  const std::string refusal = parsed == scclSuccess ? std::string() : threadLastError();
  CallRecord record = accepted;
  if (parsed != scclSuccess) {
    record.operation = static_cast<uint32_t>(refused);
    record.config = 0;
    record.object_call = 0;
  }
  const scclResult_t agreed = agreeOnCall(comm, record);
  if (parsed != scclSuccess) return fail(parsed, "%s", refusal.c_str());
  if (agreed == scclSuccess) return scclSuccess;
  // The agreement's text names the first field that differs: the operation when a peer's blob
  // was refused, the shared state's digest or the call number when the blobs are of different
  // saves.
  const std::string why = threadLastError();
  return fail(agreed,
              "%s not loaded on any rank (a peer refused its blob, or the ranks' blobs are not of "
              "one save: what every rank shares differs): %s",
              what, why.c_str());
}

}  // namespace sccl
