#include "sparsifier/node_hierarchy.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "comm/call_agreement.h"
#include "comm/comm.h"
#include "comm/node_split.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "sparsifier/sparsifier.h"

namespace sccl {
namespace {

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

CallRecord denseRecord(CallOperation operation, size_t count, scclDataType_t dtype) {
  CallRecord record = callRecord(operation);
  record.count = count;
  record.dtype = static_cast<int16_t>(dtype);
  return record;
}

// This rank's k_i of the last inner call (0 without a chunk), gathered inside the node: with the
// inner's per-node counts every rank learns every rank's k_i.
scclResult_t gatherRankCounts(scclSparsifier& sp, NodeHierarchy& h) {
  const size_t nodes = static_cast<size_t>(h.nodes), local = static_cast<size_t>(h.local_ranks);
  std::vector<uint64_t> mine(nodes, 0), all(nodes * local, 0);
  if (h.inner != nullptr)
    std::copy(h.inner->reduction_memory.rank_counts.begin(),
              h.inner->reduction_memory.rank_counts.end(), mine.begin());
  SCCL_CHECK(runAgreedCall(h.intra, denseRecord(CallOperation::AllGather, nodes, scclUint64),
                           *h.intra->transport, [&](Transport& t) {
                             return t.allGather(mine.data(), all.data(), nodes * sizeof(uint64_t));
                           }));
  // all[l * nodes + j]: local rank l's count on node j; rank r of the communicator is local rank
  // (its position among its node's ranks) on node node_of_rank[r].
  std::vector<int> seen(nodes, 0);
  sp.reduction_memory.rank_counts.assign(static_cast<size_t>(sp.comm->nranks), 0);
  for (int r = 0; r < sp.comm->nranks; ++r) {
    const size_t node = static_cast<size_t>(sp.comm->node_of_rank[size_t(r)]);
    const size_t l = static_cast<size_t>(seen[node]++);
    sp.reduction_memory.rank_counts[size_t(r)] = all[l * nodes + node];
  }
  return scclSuccess;
}

// The statistics of the whole call: the inner's for what crossed nodes, summed over the node for
// the aggregated counts (each local rank's inner covers one chunk).
scclResult_t recordHierarchicalCall(scclSparsifier& sp, NodeHierarchy& h, double total_us,
                                    double comm_us) {
  const scclSparseStats_t zero{};
  const scclSparseStats_t& in = h.inner != nullptr ? h.inner->stats : zero;
  // k', k, max k_i over the node's chunks: one all-gather of 3 words inside the node.
  uint64_t mine[3] = {in.kGlobal, in.kTarget, in.kMax};
  std::vector<uint64_t> all(3 * size_t(h.local_ranks));
  SCCL_CHECK(runAgreedCall(
      h.intra, denseRecord(CallOperation::AllGather, 3, scclUint64), *h.intra->transport,
      [&](Transport& t) { return t.allGather(mine, all.data(), sizeof(mine)); }));
  uint64_t k_global = 0, k_target = 0, k_max = 0;
  for (int l = 0; l < h.local_ranks; ++l) {
    k_global += all[3 * size_t(l)];
    k_target += all[3 * size_t(l) + 1];
    k_max = std::max(k_max, all[3 * size_t(l) + 2]);
  }
  scclSparseStats_t& s = sp.stats;
  s.iteration = sp.iteration;
  s.kTarget = k_target;
  s.kLocal = in.kLocal;
  s.kGlobal = k_global;
  s.kMax = k_max;
  s.density = sp.count == 0 ? 0.0 : double(k_global) / double(sp.count);
  s.densityError = k_target == 0 ? 0.0 : double(k_global) / double(k_target) - 1.0;
  s.gatherInflation = in.gatherInflation;
  s.bytesSent = in.bytesSent;
  s.bytesReceived = in.bytesReceived;
  s.bytesSentInsideNode = h.bytes_inside_node;
  s.bytesReceivedInsideNode = h.bytes_inside_node;
  s.threshold = in.threshold;
  s.nonFinite = 0;
  s.timeSelectUs = in.timeSelectUs;
  s.timeCommUs = comm_us + in.timeCommUs;
  s.timeOtherUs = std::max(0.0, total_us - s.timeSelectUs - s.timeCommUs);
  s.totalBytesSent += s.bytesSent;
  s.totalBytesReceived += s.bytesReceived;
  s.totalBytesSentInsideNode += s.bytesSentInsideNode;
  s.totalBytesReceivedInsideNode += s.bytesReceivedInsideNode;
  s.totalTimeSelectUs += s.timeSelectUs;
  s.totalTimeCommUs += s.timeCommUs;
  s.totalTimeOtherUs += s.timeOtherUs;
  const double calls = double(std::max<uint64_t>(1, sp.iteration));
  s.meanAbsDensityError += (std::fabs(s.densityError) - s.meanAbsDensityError) / calls;
  sp.k_target = k_target;
  return gatherRankCounts(sp, h);
}

}  // namespace

NodeHierarchy::~NodeHierarchy() {
  if (inner != nullptr) sparsifierDestroy(inner);  // before the split it runs on
}

scclResult_t buildNodeHierarchy(scclSparsifier& sp) {
  scclComm& comm = *sp.comm;
  auto h = std::make_unique<NodeHierarchy>();
  SCCL_CHECK(nodeSplitOf(&comm, &h->split));
  h->intra = h->split->intra;
  h->inter = h->split->inter;
  h->nodes = h->split->nodes;
  h->local_ranks = h->split->local_ranks;
  h->local_rank = h->split->local_rank;
  const int per_node = h->local_ranks, nodes = h->nodes, local_rank = h->local_rank;
  const size_t L = static_cast<size_t>(per_node);
  h->chunk = (sp.count + L - 1) / L;
  h->chunk_begin = std::min(sp.count, static_cast<size_t>(local_rank) * h->chunk);
  h->chunk_length = std::min(h->chunk, sp.count - h->chunk_begin);
  const size_t element = dataTypeSize(sp.dtype);
  if (h->chunk * L != sp.count) h->padded.resize(h->chunk * L * element);
  h->node_sum.resize(std::max<size_t>(h->chunk, 1) * element);
  h->host = hostHierarchyMemory(*h);
  if (h->chunk_length > 0) {
    ResolvedSparseConfig flat = sp.config;
    flat.hierarchy = "flat";
    // Every rank of `inter` has this local index, hence the same chunk length: all create it.
    SCCL_CHECK(sparsifierCreate(h->inter, h->chunk_length, sp.dtype, flat, &h->inner));
  }
  SCCL_INFO(LogSubsys::Coll,
            "sparsifier %p rank %d: hierarchy node: %d node(s) x %d rank(s), local rank %d owns "
            "[%zu, +%zu) of %zu",
            static_cast<void*>(&sp), comm.rank, nodes, per_node, local_rank, h->chunk_begin,
            h->chunk_length, sp.count);
  sp.hierarchy = std::move(h);
  return scclSuccess;
}

scclResult_t hierarchicalAllreduce(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                   scclRedOp_t op, HierarchyMemory& m) {
  NodeHierarchy& h = *sp.hierarchy;
  const auto start = Clock::now();
  SCCL_CHECK(
      agreeOnCall(sp.comm, sparseCallRecord(sp, op, m.onDevice()), nullptr, "hierarchy node"));
  const size_t element = dataTypeSize(sp.dtype);
  const size_t L = static_cast<size_t>(h.local_ranks);
  void* padded = m.padded();
  if (padded != nullptr) {  // the reduce-scatter's input: the gradient, zeros past count
    SCCL_CHECK(m.copy(padded, sendbuf, sp.count * element));
    SCCL_CHECK(m.fillZero(static_cast<unsigned char*>(padded) + sp.count * element,
                          (h.chunk * L - sp.count) * element));
  }
  const void* scatter_from = padded != nullptr ? padded : sendbuf;
  void* node_sum = m.nodeSum();
  auto comm_start = Clock::now();
  SCCL_CHECK(m.synchronize());  // the transport reads what the stream wrote
  SCCL_CHECK(runAgreedCall(h.intra, denseRecord(CallOperation::ReduceScatter, h.chunk, sp.dtype),
                           m.intraTransport(), [&](Transport& t) {
                             return t.reduceScatter(scatter_from, node_sum, h.chunk, sp.dtype,
                                                    ReduceOp::Sum);
                           }));
  // Every rank applies the non-finite policy to the same step: the node sums' count over all.
  uint64_t nonfinite_here = 0;
  SCCL_CHECK(m.countNonFinite(node_sum, h.chunk_length, sp.dtype, &nonfinite_here));
  uint64_t nonfinite = nonfinite_here;
  SCCL_CHECK(runAgreedCall(sp.comm, denseRecord(CallOperation::AllReduce, 1, scclUint64),
                           *sp.comm->transport, [&](Transport& t) {
                             return t.allReduce(&nonfinite, &nonfinite, 1, scclUint64,
                                                ReduceOp::Sum);
                           }));
  double comm_us = microsecondsSince(comm_start);
  if (nonfinite > 0 && sp.config.non_finite == scclNonFiniteError) {
    return fail(scclInvalidArgument,
                "sparse all-reduce (hierarchy node): %llu NaN/Inf value(s) in the node-summed "
                "gradients (policy error); nothing was changed",
                static_cast<unsigned long long>(nonfinite));
  }
  if (nonfinite > 0) {
    SCCL_WARN(LogSubsys::Coll,
              "rank %d: NaN/Inf in %llu node-summed gradient value(s); step discarded",
              sp.comm->rank, static_cast<unsigned long long>(nonfinite));
    SCCL_CHECK(m.fillNaN(recvbuf, sp.count, sp.dtype));
    sp.stats.nonFinite = nonfinite_here;  // this rank's, in its chunk's node sum
    return scclSuccess;
  }
  // The inner calls of the node's local ranks run on different communicators: one that fails
  // (a hostile peer refused, a broken link) must fail its whole node, or the others would wait
  // in the all-gather below. The verdict travels inside the node before anything is written.
  const scclResult_t inner_result =
      h.inner != nullptr ? m.innerCall(h.inner, node_sum) : scclSuccess;
  const std::string inner_error = inner_result != scclSuccess ? threadLastError() : "";
  uint64_t failed_ranks = inner_result != scclSuccess ? 1 : 0;
  SCCL_CHECK(runAgreedCall(h.intra, denseRecord(CallOperation::AllReduce, 1, scclUint64),
                           *h.intra->transport, [&](Transport& t) {
                             return t.allReduce(&failed_ranks, &failed_ranks, 1, scclUint64,
                                                ReduceOp::Sum);
                           }));
  if (inner_result != scclSuccess) {
    return fail(inner_result,
                "hierarchy node: the exchange across nodes of local rank %d "
                "failed: %s",
                h.local_rank, inner_error.c_str());
  }
  if (failed_ranks > 0) {
    return fail(scclRemoteError,
                "hierarchy node: the exchange across nodes of %llu other local rank(s) of this "
                "node failed (their error names the cause); nothing was written to recvbuf",
                static_cast<unsigned long long>(failed_ranks));
  }
  comm_start = Clock::now();
  void* gather_into = padded != nullptr ? padded : recvbuf;
  SCCL_CHECK(m.synchronize());  // the inner call's output, written on the stream
  SCCL_CHECK(runAgreedCall(
      h.intra, denseRecord(CallOperation::AllGather, h.chunk, sp.dtype), m.intraTransport(),
      [&](Transport& t) { return t.allGather(node_sum, gather_into, h.chunk * element); }));
  comm_us += microsecondsSince(comm_start);
  if (padded != nullptr) SCCL_CHECK(m.copy(recvbuf, padded, sp.count * element));
  if (op == scclAvg) SCCL_CHECK(m.divideByRanks(recvbuf, sp.count, sp.dtype, sp.comm->nranks));
  // The reduce-scatter and the all-gather each send (L - 1) blocks of c elements inside the node.
  h.bytes_inside_node = 2 * (L - 1) * h.chunk * element;
  ++sp.iteration;
  return recordHierarchicalCall(sp, h, microsecondsSince(start), comm_us);
}

scclResult_t hierarchicalAllreduceOnHost(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                         scclRedOp_t op) {
  NodeHierarchy& h = *sp.hierarchy;
  if (h.device != nullptr) {
    return fail(scclInvalidUsage,
                "sendbuf/recvbuf are host memory, but this hierarchical sparsifier's residual is "
                "in GPU memory since its first call; scclSparsifierReset starts it again");
  }
  applyCallDensity(sp);
  return commRecordFailure(sp.comm, hierarchicalAllreduce(sp, sendbuf, recvbuf, op, *h.host));
}

scclResult_t hierarchicalAllreduceOnDevice(scclSparsifier& sp, const void* sendbuf, void* recvbuf,
                                           scclRedOp_t op, void* stream,
                                           const HierarchyDevice& device) {
  NodeHierarchy& h = *sp.hierarchy;
  if (h.device == nullptr) {
    if (sp.iteration > 0) {
      return fail(scclInvalidUsage,
                  "sendbuf/recvbuf are GPU memory, but this hierarchical sparsifier's residual is "
                  "in host memory since its first call (%llu calls); scclSparsifierReset starts "
                  "it again",
                  static_cast<unsigned long long>(sp.iteration));
    }
    // Every rank with a chunk checks its inner preset; all ranks refuse together.
    const scclResult_t checked = h.inner != nullptr ? device.check(*h.inner, stream) : scclSuccess;
    const std::string why = checked != scclSuccess ? threadLastError() : "";
    uint64_t refusing = checked != scclSuccess ? 1 : 0;
    SCCL_CHECK(runAgreedCall(sp.comm, denseRecord(CallOperation::AllReduce, 1, scclUint64),
                             *sp.comm->transport, [&](Transport& t) {
                               return t.allReduce(&refusing, &refusing, 1, scclUint64,
                                                  ReduceOp::Sum);
                             }));
    if (checked != scclSuccess) return fail(checked, "hierarchy node: %s", why.c_str());
    if (refusing > 0) {
      return fail(scclInvalidUsage,
                  "hierarchy node: %llu rank(s) cannot run the preset across nodes on device "
                  "buffers (their error names why); nothing was changed",
                  static_cast<unsigned long long>(refusing));
    }
    SCCL_CHECK(device.create(sp, &h.device));
  }
  h.device->setStream(stream);
  applyCallDensity(sp);
  return commRecordFailure(sp.comm, hierarchicalAllreduce(sp, sendbuf, recvbuf, op, *h.device));
}

}  // namespace sccl
