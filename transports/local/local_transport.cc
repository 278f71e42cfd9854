// Each collective is a few phases separated by job barriers: every rank posts its buffers, then
// reads what it needs straight from the others' buffers, then waits until all have finished
// reading before anyone may reuse a buffer. Bytes are copied once (gather, broadcast) or read
// once by the owner of each chunk (reduction), as a shared-memory collective should.
//
// Before reading anything, every rank checks what the others entered (arrive): the call record a
// public collective carried (call agreement, folded into the first barrier at no extra cost), then
// the operation and its sizes, so that ranks in mismatched operations all return an error instead
// of reading past a peer's buffer.
#include "transports/local/local_transport.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "transports/bootstrap/bootstrap.h"
#include "transports/collective_arguments.h"
#include "transports/local/local_rendezvous.h"
#include "transports/local/local_window.h"
#include "transports/reduce_ops.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

enum OperationKind : uint32_t {
  kAllGatherV = 1,
  kAllReduce,
  kBroadcast,
  kBarrier,
  kWindow,
  kAgree,
  kReduceScatter
};

const char* kindName(uint32_t kind) {
  switch (kind) {
    case kAllGatherV: return "allGather";
    case kAllReduce: return "allReduce";
    case kBroadcast: return "broadcast";
    case kBarrier: return "barrier";
    case kWindow: return "createWindow";
    case kAgree: return "call agreement";
    case kReduceScatter: return "reduceScatter";
    default: return "an unknown operation";
  }
}

LocalJob::Operation operation(uint32_t kind, uint64_t bytes, int32_t dtype = -1, int32_t op = -1,
                              int32_t root = -1) {
  LocalJob::Operation o;
  o.kind = kind;
  o.bytes = bytes;
  o.dtype = dtype;
  o.op = op;
  o.root = root;
  return o;
}

// The share of `count` elements that rank `rank` reduces: near-equal contiguous chunks.
void chunkOf(size_t count, int nranks, int rank, size_t* begin, size_t* end) {
  size_t base = count / static_cast<size_t>(nranks);
  size_t extra = count % static_cast<size_t>(nranks);
  size_t r = static_cast<size_t>(rank);
  *begin = r * base + (r < extra ? r : extra);
  *end = *begin + base + (r < extra ? 1 : 0);
}

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalJob> job, int rank, int64_t timeout_ms)
      : job_(std::move(job)),
        rank_(rank),
        timeout_(std::chrono::milliseconds(timeout_ms)),
        records_(static_cast<size_t>(job_->nranks())) {}

  ~LocalTransport() override = default;

  const char* name() const override { return "local"; }
  int rank() const override { return rank_; }
  int nranks() const override { return job_->nranks(); }
  TransportCapabilities capabilities() const override {
    TransportCapabilities caps;
    caps.one_sided = true;
    return caps;
  }

  scclResult_t allGather(const void* send, void* recv, size_t bytes_per_rank) override {
    SCCL_CHECK(checkAllGatherArguments(send, recv, bytes_per_rank, nranks()));
    std::vector<size_t> sizes(static_cast<size_t>(nranks()), bytes_per_rank);
    std::vector<size_t> offsets(sizes.size());
    for (size_t r = 0; r < offsets.size(); ++r) offsets[r] = r * bytes_per_rank;
    return allGatherV(send, bytes_per_rank, recv, sizes.data(), offsets.data());
  }

  scclResult_t allGatherV(const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                          const size_t* recv_offsets) override {
    bool any_bytes = false;  // every rank passes the same arrays: all reach the barriers
    SCCL_CHECK(checkAllGatherVArguments(send, send_bytes, recv, recv_bytes, recv_offsets, rank_,
                                        nranks(), "allGatherV", &any_bytes));
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = send;
    SCCL_CHECK(arrive(operation(kAllGatherV, send_bytes), deadline));
    for (int r = 0; r < nranks(); ++r) {
      const uint64_t sent = job_->arrival(number_ - 1, r).operation.bytes;
      if (sent != recv_bytes[r]) {
        return fail(scclInvalidUsage,
                    "in-process allGather: rank %d sends %llu bytes, rank %d expects %zu from it",
                    r, static_cast<unsigned long long>(sent), rank_, recv_bytes[r]);
      }
    }
    auto* out = static_cast<std::byte*>(recv);
    for (int r = 0; r < nranks(); ++r) {
      const void* source = job_->posted(r).send;
      void* target = out + recv_offsets[r];
      if (recv_bytes[r] > 0 && source != target) std::memcpy(target, source, recv_bytes[r]);
    }
    return job_->barrier(rank_, deadline, "allGather");
  }

  scclResult_t allReduce(const void* send, void* recv, size_t count, scclDataType_t dtype,
                         ReduceOp op) override {
    size_t total_bytes = 0;
    SCCL_CHECK(checkAllReduceArguments(send, recv, count, dtype, op, &total_bytes));
    auto deadline = Clock::now() + timeout_;
    size_t element = dataTypeSize(dtype);
    // Rank 0 sizes the scratch before the first barrier; no one touches it until after.
    if (rank_ == 0 && job_->scratch().size() < count * element)
      job_->scratch().resize(count * element);
    job_->posted(rank_).send = send;
    SCCL_CHECK(arrive(operation(kAllReduce, count, dtype, static_cast<int32_t>(op)), deadline));
    size_t begin = 0, end = 0;
    chunkOf(count, nranks(), rank_, &begin, &end);
    if (end > begin) {
      std::vector<const void*> inputs(static_cast<size_t>(nranks()));
      for (int r = 0; r < nranks(); ++r) {
        inputs[r] = static_cast<const std::byte*>(job_->posted(r).send) + begin * element;
      }
      reduceInRankOrder(inputs.data(), nranks(), job_->scratch().data() + begin * element,
                        end - begin, dtype, op);
    }
    SCCL_CHECK(job_->barrier(rank_, deadline, "allReduce"));
    if (count > 0) std::memcpy(recv, job_->scratch().data(), count * element);
    return job_->barrier(rank_, deadline, "allReduce");
  }

  // Each rank reduces its own block straight from every rank's posted input.
  scclResult_t reduceScatter(const void* send, void* recv, size_t recvcount, scclDataType_t dtype,
                             ReduceOp op) override {
    size_t block = 0;
    SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks(), &block));
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = send;
    SCCL_CHECK(
        arrive(operation(kReduceScatter, recvcount, dtype, static_cast<int32_t>(op)), deadline));
    // In place, recv is the own block of send, which the others are reading: the result waits in
    // this rank's scratch until they are done.
    reduced_.resize(block);
    if (block > 0) {
      std::vector<const void*> inputs(static_cast<size_t>(nranks()));
      for (int r = 0; r < nranks(); ++r) {
        inputs[r] = static_cast<const std::byte*>(job_->posted(r).send) +
                    static_cast<size_t>(rank_) * block;
      }
      reduceInRankOrder(inputs.data(), nranks(), reduced_.data(), recvcount, dtype, op);
    }
    SCCL_CHECK(job_->barrier(rank_, deadline, "reduceScatter"));
    if (block > 0) std::memcpy(recv, reduced_.data(), block);
    return scclSuccess;
  }

  scclResult_t broadcast(void* buf, size_t bytes, int root) override {
    SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks()));
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = buf;
    SCCL_CHECK(arrive(operation(kBroadcast, bytes, -1, -1, root), deadline));
    if (rank_ != root && bytes > 0) std::memcpy(buf, job_->posted(root).send, bytes);
    return job_->barrier(rank_, deadline, "broadcast");
  }

  scclResult_t send(const void* buf, size_t bytes, int peer, int tag) override {
    SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks(), "send peer %d out of range [0, %d)", peer,
                     nranks());
    return job_->pushMessage(rank_, peer, tag, buf, bytes);
  }

  scclResult_t recv(void* buf, size_t bytes, int peer, int tag) override {
    SCCL_REQUIRE_ARG(peer >= 0 && peer < nranks(), "recv peer %d out of range [0, %d)", peer,
                     nranks());
    return job_->popMessage(peer, rank_, tag, buf, bytes, Clock::now() + timeout_);
  }

  scclResult_t barrier() override {
    return arrive(operation(kBarrier, 0), Clock::now() + timeout_);
  }

  // One barrier: the records travel in the arrivals.
  scclResult_t agree(const CallAgreement& agreement) override {
    carried_ = agreement;
    return arrive(operation(kAgree, 0), Clock::now() + timeout_);
  }

  bool carryAgreement(const CallAgreement& agreement) override {
    carried_ = agreement;
    return true;
  }

  // Every rank posts its memory (a shared_ptr) and takes a reference to everyone's.
  scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out) override {
    SCCL_REQUIRE_ARG(bytes > 0, "createWindow: a window of 0 bytes");
    auto mine = std::make_shared<LocalWindowMemory>(bytes);
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = &mine;
    SCCL_CHECK(arrive(operation(kWindow, bytes), deadline));
    std::vector<std::shared_ptr<LocalWindowMemory>> memories(static_cast<size_t>(nranks()));
    for (int r = 0; r < nranks(); ++r) {
      memories[static_cast<size_t>(r)] =
          *static_cast<const std::shared_ptr<LocalWindowMemory>*>(job_->posted(r).send);
    }
    SCCL_CHECK(job_->barrier(rank_, deadline, "createWindow"));
    for (int r = 0; r < nranks(); ++r) {
      if (memories[static_cast<size_t>(r)]->bytes != bytes) {
        return fail(scclInvalidUsage, "createWindow: rank %d asked for %zu bytes, rank %d for %zu",
                    r, memories[static_cast<size_t>(r)]->bytes, rank_, bytes);
      }
    }
    *out = std::make_unique<LocalWindow>(rank_, std::move(memories));
    return scclSuccess;
  }

  void abort() override { job_->markBroken("a rank aborted its communicator"); }
  scclResult_t pollHealth() override { return job_->health(); }

 private:
  // Posts what this rank entered, waits for every rank, and checks what they entered before the
  // caller reads anything of theirs: the carried call records first (the agreement's verdict, the
  // same on every rank), then the operation and its sizes. Every rank reaches the same verdict
  // from the same arrivals, so all return together.
  scclResult_t arrive(const LocalJob::Operation& op, Clock::time_point deadline) {
    const uint64_t number = number_++;
    const CallAgreement agreement = carried_;
    carried_ = CallAgreement{};
    LocalJob::Arrival& mine = job_->arrival(number, rank_);
    mine.operation = op;
    mine.has_record = agreement.mine != nullptr;
    if (mine.has_record) mine.record = *agreement.mine;
    SCCL_CHECK(job_->barrier(rank_, deadline, kindName(op.kind)));
    int with_record = 0;
    for (int r = 0; r < nranks(); ++r) {
      const LocalJob::Arrival& theirs = job_->arrival(number, r);
      with_record += theirs.has_record ? 1 : 0;
      records_[static_cast<size_t>(r)] = theirs.record;
    }
    if (with_record == nranks() && agreement.mine != nullptr) {
      SCCL_CHECK(agreement.check(records_.data(), nranks(), agreement.context));
    } else if (with_record != 0) {
      return fail(scclInvalidUsage,
                  "in-process %s: %d of %d ranks entered a new collective call while the others "
                  "were inside an earlier one",
                  kindName(op.kind), with_record, nranks());
    }
    for (int r = 0; r < nranks(); ++r) {
      const LocalJob::Operation& theirs = job_->arrival(number, r).operation;
      const bool same = theirs.kind == op.kind && theirs.dtype == op.dtype && theirs.op == op.op &&
                        theirs.root == op.root &&
                        (op.kind == kAllGatherV || theirs.bytes == op.bytes);
      if (!same) {
        return fail(scclInvalidUsage,
                    "in-process transport: rank %d entered %s (%llu, dtype %d, op %d, root %d), "
                    "rank %d entered %s (%llu, dtype %d, op %d, root %d)",
                    r, kindName(theirs.kind), static_cast<unsigned long long>(theirs.bytes),
                    theirs.dtype, theirs.op, theirs.root, rank_, kindName(op.kind),
                    static_cast<unsigned long long>(op.bytes), op.dtype, op.op, op.root);
      }
    }
    return scclSuccess;
  }

  std::shared_ptr<LocalJob> job_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  uint64_t number_ = 0;              // operations this rank entered (arrive)
  CallAgreement carried_;            // the agreement the next operation carries (carryAgreement)
  std::vector<CallRecord> records_;  // every rank's record, gathered for the check
  std::vector<std::byte> reduced_;   // reduceScatter's result until every rank has read its input
};

}  // namespace

scclResult_t createLocalTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out) {
  std::shared_ptr<LocalJob> job;
  SCCL_CHECK(joinLocalJob(setup.bootstrap->jobToken(), setup.nranks, &job));
  *out = std::make_unique<LocalTransport>(std::move(job), setup.rank, setup.timeout_ms);
  return scclSuccess;
}

}  // namespace sccl
