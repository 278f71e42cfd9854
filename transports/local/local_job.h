// State shared by the ranks of one in-process communicator (the "job"): a barrier with deadline,
// the buffers each rank has posted for the current collective, a reduction scratch buffer, and
// mailboxes for point-to-point messages. Ranks find the job through the process-wide rendezvous
// (local_rendezvous.h), keyed by the unique id's token.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "sparsecoll/sparsecoll.h"
#include "transports/agreement_record.h"

namespace sccl {

class LocalJob {
 public:
  explicit LocalJob(int nranks);

  int nranks() const { return nranks_; }

  // Waits until all ranks arrived. On deadline: the job is marked broken and scclTimeout
  // returned; if it was broken by another rank (abort or timeout): scclRemoteError.
  scclResult_t barrier(int rank, std::chrono::steady_clock::time_point deadline, const char* what);

  // Posted buffers for the collective in progress; written by their owner before the first
  // barrier of a collective and read by everyone after it.
  struct PostedBuffers {
    const void* send = nullptr;
    void* recv = nullptr;
  };
  PostedBuffers& posted(int rank) { return posted_[static_cast<size_t>(rank)]; }

  // What a rank entered, posted before an operation's first barrier and checked by every rank
  // after it before any data is read (LocalTransport::arrive): the operation with its sizes, and
  // the call record when a public collective carried one (transports/agreement_record.h).
  struct Operation {
    uint32_t kind = 0;   // LocalTransport's operation kinds
    uint64_t bytes = 0;  // allReduce: count; others: bytes this rank sends
    int32_t dtype = -1;
    int32_t op = -1;
    int32_t root = -1;
  };
  struct Arrival {
    Operation operation;
    bool has_record = false;
    CallRecord record;
  };
  // Two slots per rank, by the parity of the operation's number on its rank (every rank numbers
  // its operations alike): a rank that leaves a refused operation early and enters the next one
  // cannot overwrite what a slower rank is still reading.
  Arrival& arrival(uint64_t number, int rank) {
    return arrivals_[number & 1][static_cast<size_t>(rank)];
  }

  // Reduction scratch; resized only by rank 0 between collectives (see LocalTransport).
  std::vector<std::byte>& scratch() { return scratch_; }

  // Buffered point-to-point: push copies the message; pop waits until one is there.
  scclResult_t pushMessage(int src, int dst, int tag, const void* buf, size_t bytes);
  scclResult_t popMessage(int src, int dst, int tag, void* buf, size_t bytes,
                          std::chrono::steady_clock::time_point deadline);

  // Releases every waiting rank with scclRemoteError (abort by one rank).
  void markBroken(const char* reason);

  // Without waiting: scclRemoteError (with the reason) once the job is broken by an abort or a
  // rank's timeout, else scclSuccess (Transport::pollHealth of the in-process transport).
  scclResult_t health();

 private:
  scclResult_t brokenError(const char* what) const;

  const int nranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool broken_ = false;
  const char* broken_reason_ = "";
  std::vector<PostedBuffers> posted_;
  std::vector<Arrival> arrivals_[2];
  std::vector<std::byte> scratch_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> mailboxes_;
};

}  // namespace sccl
