// Call agreement: before any data moves, the ranks of a communicator agree that they entered the
// same collective call: operation, count, dtype, reduction, root, the sparsifier's or event
// communicator's identity and configuration, and the call's number on the communicator. A
// mismatch returns scclInvalidUsage on every rank, the message naming the field, its values and
// the ranks, and the communicator stays usable (docs/reliability.md, "Call agreement").
//
// The records are 64 bytes (transports/agreement_record.h). The in-process transport folds them into
// the first barrier of the call's own collective (no extra round trip); the others all-gather
// them first (one small exchange; docs/results/call_agreement.md has the cost).
#pragma once

#include <cstdint>

#include "comm/comm.h"
#include "core/error.h"
#include "transports/agreement_record.h"
#include "transports/transport.h"

namespace sccl {

enum class CallOperation : uint32_t {
  AllReduce = 1,
  AllGather,
  Broadcast,
  Barrier,
  SparseAllreduce,
  SparsifierCreate,
  EventCommCreate,
  EventCommStep,
  EventCommAverageModel,
  SparsifierImportState,
  // A rank whose checkpoint failed its own checks still takes part in the agreement under this
  // operation, so that every rank returns an error instead of waiting for it.
  SparsifierImportRefused,
  EventCommImportState,
  EventCommImportRefused,  // as SparsifierImportRefused
  ReduceScatter,
  CommSplit,
};

const char* callOperationName(uint32_t operation);

// A record of `operation` with nothing else set (count 0, no dtype, op, root or object).
CallRecord callRecord(CallOperation operation);

// Agrees on `mine` through comm->transport (an explicit exchange). On a mismatch every rank
// returns scclInvalidUsage, nothing else was exchanged and the communicator stays usable; a
// transport failure is recorded on the communicator as usual. On success, *sequence (if given)
// is the call's agreed number on the communicator (an identity for objects the call creates).
// `detail`, if given, is logged with a mismatch (e.g. this rank's config); the message itself is
// the same text on every rank.
scclResult_t agreeOnCall(scclComm* comm, const CallRecord& mine, uint64_t* sequence = nullptr,
                         const char* detail = nullptr);

// A checkpoint's import (sparsifier, event communicator): every rank takes part in the agreement,
// also one whose blob failed its own checks (`parsed`, with its text as the thread's last error),
// which enters as `refused` so that no rank waits for it. Returns parsed's failure with its text
// on a rank that refused, the agreement's failure on every rank (its text prefixed with `what`
// and why a load fails) when `accepted` differs between the ranks, else scclSuccess.
scclResult_t agreeOnImport(scclComm* comm, scclResult_t parsed, const CallRecord& accepted,
                           CallOperation refused, const char* what);

// Runs `operation(transport)` with the agreement on `mine` folded into its first collective when
// `transport` can carry it (the in-process transport, directly or under the pinned staging
// adapter), or agreed explicitly first otherwise. Failures are recorded on the communicator
// except a refused agreement, which leaves it usable.
template <typename Operation>
scclResult_t runAgreedCall(scclComm* comm, const CallRecord& mine, Transport& transport,
                           Operation&& operation);

// --- implementation details of runAgreedCall ---
namespace detail {

// One call's agreement: the record as sent, and whether the check refused it.
struct AgreementState {
  scclComm* comm = nullptr;
  CallRecord record;
  bool refused = false;
  uint64_t agreed_sequence = 0;
  const char* detail = nullptr;  // logged with a mismatch
};

CallAgreement prepareAgreement(scclComm* comm, const CallRecord& mine, AgreementState* state);
scclResult_t recordOutcome(scclComm* comm, const AgreementState& state, scclResult_t result);

}  // namespace detail

template <typename Operation>
scclResult_t runAgreedCall(scclComm* comm, const CallRecord& mine, Transport& transport,
                           Operation&& operation) {
  detail::AgreementState state;
  const CallAgreement agreement = detail::prepareAgreement(comm, mine, &state);
  if (!transport.carryAgreement(agreement)) {
    SCCL_CHECK(agreeOnCall(comm, mine));
    return commRecordFailure(comm, operation(transport));
  }
  scclResult_t result = operation(transport);
  transport.carryAgreement(CallAgreement{});  // never left behind for a later operation
  return detail::recordOutcome(comm, state, result);
}

}  // namespace sccl
