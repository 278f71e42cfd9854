// Each collective is a few phases separated by job barriers: every rank posts its buffers, then
// reads what it needs straight from the others' buffers, then waits until all have finished
// reading before anyone may reuse a buffer. Bytes are copied once (gather, broadcast) or read
// once by the owner of each chunk (reduction), as a shared-memory collective should.
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
      : job_(std::move(job)), rank_(rank), timeout_(std::chrono::milliseconds(timeout_ms)) {}

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
    SCCL_CHECK(job_->barrier(rank_, deadline, "allGather"));
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
    SCCL_CHECK(job_->barrier(rank_, deadline, "allReduce"));
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

  scclResult_t broadcast(void* buf, size_t bytes, int root) override {
    SCCL_CHECK(checkBroadcastArguments(buf, bytes, root, nranks()));
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = buf;
    SCCL_CHECK(job_->barrier(rank_, deadline, "broadcast"));
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
    return job_->barrier(rank_, Clock::now() + timeout_, "barrier");
  }

  // Every rank posts its memory (a shared_ptr) and takes a reference to everyone's.
  scclResult_t createWindow(size_t bytes, std::unique_ptr<Window>* out) override {
    SCCL_REQUIRE_ARG(bytes > 0, "createWindow: a window of 0 bytes");
    auto mine = std::make_shared<LocalWindowMemory>(bytes);
    auto deadline = Clock::now() + timeout_;
    job_->posted(rank_).send = &mine;
    SCCL_CHECK(job_->barrier(rank_, deadline, "createWindow"));
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
  std::shared_ptr<LocalJob> job_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

scclResult_t createLocalTransport(const TransportSetup& setup, std::unique_ptr<Transport>* out) {
  std::shared_ptr<LocalJob> job;
  SCCL_CHECK(joinLocalJob(setup.bootstrap->jobToken(), setup.nranks, &job));
  *out = std::make_unique<LocalTransport>(std::move(job), setup.rank, setup.timeout_ms);
  return scclSuccess;
}

}  // namespace sccl
