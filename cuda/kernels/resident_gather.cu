// The device-resident gather call's own kernels (src/algorithms/resident_gather.cc has the
// steps): the plan (the decisions of kernels/shared/gather_plan.h, which the CPU backend runs,
// here in one block), the padding of the local
// slice, the check and concatenation of every rank's slice, and the two steps that a failed check
// turns off (the output's zeroing) or on (the residual put back). Nothing here waits for the
// host, and a fault word decides on the device what the host cannot know without a wait.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/gather_plan.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

__global__ void padKernel(int64_t* idx, size_t from, size_t to) {
  for (size_t j = from + globalThread(); j < to; j += gridThreads()) idx[j] = -1;
}

__global__ void padAfterCountKernel(int64_t* idx, const uint64_t* count, size_t capacity) {
  const size_t from = *count < capacity ? size_t(*count) : capacity;
  for (size_t j = from + globalThread(); j < capacity; j += gridThreads()) idx[j] = -1;
}

// The plan in one block: planGatherCall's decisions (kernels/shared/gather_plan.h, the CPU's),
// with the sums over bins and ranks spread over the block's threads. One thread would walk the
// 2 W B + 1 bins and every rank's record one load at a time (tens of microseconds).
constexpr unsigned kPlanThreads = 256;

struct SaturatingSum {
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const {
    return a > ~uint64_t{0} - b ? ~uint64_t{0} : a + b;
  }
};

// The nearest-count walk's order: smaller error, then nearer the centre, then the higher edge
// (the walk from the top keeps the first of equals).
struct EdgeChoice {
  uint64_t error, distance, edge, count;
};
struct BetterEdge {
  __device__ EdgeChoice operator()(const EdgeChoice& a, const EdgeChoice& b) const {
    if (a.error != b.error) return a.error < b.error ? a : b;
    if (a.distance != b.distance) return a.distance < b.distance ? a : b;
    return a.edge > b.edge ? a : b;
  }
};

__global__ void __launch_bounds__(kPlanThreads)
    planKernel(const uint64_t* records, GatherPlanParams p, const uint64_t* ranges,
               const uint32_t* fault, uint64_t* plan) {
  using SumReduce = cub::BlockReduce<uint64_t, kPlanThreads>;
  using EdgeReduce = cub::BlockReduce<EdgeChoice, kPlanThreads>;
  using Scan = cub::BlockScan<uint64_t, kPlanThreads>;
  __shared__ union {
    typename SumReduce::TempStorage sum;
    typename EdgeReduce::TempStorage edge;
    typename Scan::TempStorage scan;
  } temp;
  __shared__ uint64_t shared_word;
  __shared__ EdgeChoice best;
  const unsigned t = threadIdx.x;
  const size_t words = gatherPlanWords(p.nranks);
  const size_t record_words = kGatherRecordHeaderWords + p.bins + 1;
  for (size_t w = t; w < words; w += kPlanThreads) plan[w] = 0;
  __syncthreads();
  // Every rank's total (saturating), kept in its plan slot until the counts replace it.
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* bins = records + r * record_words + kGatherRecordHeaderWords;
    uint64_t mine = 0;
    for (size_t j = t; j <= p.bins; j += kPlanThreads) mine = SaturatingSum()(mine, bins[j]);
    const uint64_t total = SumReduce(temp.sum).Reduce(mine, SaturatingSum());
    if (t == 0) plan[kGatherPlanHeaderWords + 2 * r] = total;
    __syncthreads();
  }
  // The checks (checkPlanInputs, the CPU's), on one thread, the totals as the claims.
  const auto record_at = [&](uint64_t r) { return records + r * record_words; };
  const auto slot_at = [&](uint64_t r) { return plan[kGatherPlanHeaderWords + 2 * r]; };
  if (t == 0) {
    const PlanCheck check = checkPlanInputs(record_at, slot_at, p, ranges, *fault);
    if (check.status != kPlanOk) {  // the plan holds the failure's words alone
      for (size_t w = 0; w < words; ++w) plan[w] = 0;
      writePlan(check, record_at(p.self)[kRecordNonFinite], slot_at, p.nranks, 0, plan);
    }
    shared_word = check.status;
    best = EdgeChoice{~uint64_t{0}, ~uint64_t{0}, 0, 0};
  }
  __syncthreads();
  if (shared_word != kPlanOk) return;
  // The edge: chunks of kPlanThreads edges from the top; thread t takes edge hi - 1 - t, so an
  // inclusive scan over t is the count at or above each edge.
  uint64_t carry = 0;
  for (size_t hi = p.bins + 1; hi > 0;) {
    const size_t lo = hi > kPlanThreads ? hi - kPlanThreads : 0;
    const bool mine = t < hi - lo;
    const size_t j = hi - 1 - t;
    uint64_t global = 0;
    if (mine) {
      for (uint64_t r = 0; r < p.nranks; ++r)
        global += records[r * record_words + kGatherRecordHeaderWords + j];
    }
    uint64_t at_or_above = 0, chunk_total = 0;
    Scan(temp.scan).InclusiveSum(global, at_or_above, chunk_total);
    __syncthreads();
    at_or_above += carry;
    EdgeChoice choice{~uint64_t{0}, ~uint64_t{0}, 0, 0};
    if (mine) {
      const uint64_t k = p.k_target;
      choice.error = at_or_above > k ? at_or_above - k : k - at_or_above;
      choice.distance = j > p.centre_edge ? j - p.centre_edge : p.centre_edge - j;
      choice.edge = j;
      choice.count = at_or_above;
      if (p.nearest_edge == 0) {  // edge 0 and everything at or above it
        choice.error = j == 0 ? 0 : 1;
        choice.distance = 0;
      }
    }
    const EdgeChoice chunk_best = EdgeReduce(temp.edge).Reduce(choice, BetterEdge());
    if (t == 0) best = BetterEdge()(best, chunk_best);
    carry += chunk_total;
    __syncthreads();
    hi = lo;
  }
  const size_t edge = size_t(best.edge);
  // Every rank's count at or above the edge; offsets and the largest count on one thread.
  for (uint64_t r = 0; r < p.nranks; ++r) {
    const uint64_t* bins = records + r * record_words + kGatherRecordHeaderWords;
    uint64_t mine = 0;
    for (size_t j = edge + t; j <= p.bins; j += kPlanThreads) mine += bins[j];
    const uint64_t k = SumReduce(temp.sum).Sum(mine);
    if (t == 0) plan[kGatherPlanHeaderWords + 2 * r] = k;
    __syncthreads();
  }
  if (t == 0) {
    const uint64_t edge_word =
        p.sole < p.nranks ? record_at(p.sole)[kRecordReserved] : uint64_t(edge);
    writePlan(PlanCheck{}, record_at(p.self)[kRecordNonFinite], slot_at, p.nranks, edge_word, plan,
              p.cap);
  }
}

__global__ void assembleKernel(const int64_t* gathered, size_t nranks, size_t slot,
                               size_t first_rank, const uint64_t* plan, const uint64_t* ranges,
                               int64_t* global, uint32_t* fault) {
  const size_t positions = nranks * slot;
  for (size_t p = globalThread(); p < positions; p += gridThreads()) {
    const size_t r = first_rank + p / slot;
    const size_t j = p % slot;
    if (j >= plan[kGatherPlanHeaderWords + 2 * r]) continue;
    const int64_t* slice = gathered + (p / slot) * slot;
    const bool valid = sliceEntryValid(slice, j, ranges[2 * r], ranges[2 * r + 1]);
    global[plan[kGatherPlanHeaderWords + 2 * r + 1] + j] = valid ? slice[j] : 0;
    if (!valid) atomicMin(fault, uint32_t(r));
  }
}

__global__ void planEdgeKernel(const uint64_t* summed, const uint64_t* own, GatherPlanParams p,
                               uint64_t* edge_words, uint64_t* own_count) {
  planEdgeFromSums(summed, own, p, edge_words, own_count);
}

__global__ void planHeadersKernel(const uint64_t* headers, GatherPlanParams p,
                                  const uint64_t* ranges, const uint32_t* fault,
                                  const uint64_t* edge_words, uint64_t* plan) {
  planFromHeaders(headers, p, ranges, *fault, edge_words, plan);
}

__global__ void setWordsKernel(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3) {
  dst[0] = w0;
  dst[1] = w1;
  dst[2] = w2;
  dst[3] = w3;
}

template <typename Bits>
__global__ void topKEmitKernel(const Bits* x, const int64_t* slot_indices, size_t k, int64_t* idx,
                               unsigned long long* kth_bits) {
  unsigned long long smallest = ~0ull;
  for (size_t j = globalThread(); j < k; j += gridThreads()) {
    const int64_t i = slot_indices[j];
    idx[j] = i;
    const unsigned long long m = magnitudeBits(x[i]);
    if (m < smallest) smallest = m;
  }
  if (smallest != ~0ull) atomicMin(kth_bits, smallest);
}

template <typename Word>
__global__ void zeroUnlessFaultKernel(Word* dst, size_t words, const uint32_t* fault) {
  if (*fault != kNoIndexFault) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) dst[i] = Word{0};
}

__global__ void copyOnFaultKernel(uint32_t* dst, const uint32_t* src, size_t words,
                                  const uint32_t* fault, uint32_t* published) {
  const uint32_t f = *fault;
  if (f == kNoIndexFault) return;
  for (size_t i = globalThread(); i < words; i += gridThreads()) dst[i] = src[i];
  if (published != nullptr && globalThread() == 0) {
    *published = f;
    __threadfence_system();  // the host reads it without waiting for the stream
  }
}

}  // namespace

cudaError_t padIndices(int64_t* idx, size_t from, size_t to, cudaStream_t stream) {
  if (from >= to) return cudaSuccess;
  padKernel<<<gridFor(to - from), kThreads, 0, stream>>>(idx, from, to);
  return cudaGetLastError();
}

cudaError_t padIndicesAfterCount(int64_t* idx, const uint64_t* count, size_t capacity,
                                 cudaStream_t stream) {
  if (capacity == 0) return cudaSuccess;
  padAfterCountKernel<<<gridFor(capacity), kThreads, 0, stream>>>(idx, count, capacity);
  return cudaGetLastError();
}

cudaError_t planGather(const uint64_t* records, const GatherPlanParams& params,
                       const uint64_t* ranges, const uint32_t* fault, uint64_t* plan,
                       cudaStream_t stream) {
  planKernel<<<1, kPlanThreads, 0, stream>>>(records, params, ranges, fault, plan);
  return cudaGetLastError();
}

cudaError_t assembleExclusiveIndices(const int64_t* gathered, size_t nranks, size_t slot,
                                     size_t first_rank, const uint64_t* plan,
                                     const uint64_t* ranges, int64_t* global, uint32_t* fault,
                                     cudaStream_t stream) {
  if (nranks * slot == 0) return cudaSuccess;
  assembleKernel<<<gridFor(nranks * slot), kThreads, 0, stream>>>(
      gathered, nranks, slot, first_rank, plan, ranges, global, fault);
  return cudaGetLastError();
}

cudaError_t planEdge(const uint64_t* summed, const uint64_t* own, const GatherPlanParams& params,
                     uint64_t* edge_words, uint64_t* own_count, cudaStream_t stream) {
  planEdgeKernel<<<1, 1, 0, stream>>>(summed, own, params, edge_words, own_count);
  return cudaGetLastError();
}

cudaError_t planHeaders(const uint64_t* headers, const GatherPlanParams& params,
                        const uint64_t* ranges, const uint32_t* fault, const uint64_t* edge_words,
                        uint64_t* plan, cudaStream_t stream) {
  planHeadersKernel<<<1, 1, 0, stream>>>(headers, params, ranges, fault, edge_words, plan);
  return cudaGetLastError();
}

cudaError_t setWords(uint64_t* dst, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                     cudaStream_t stream) {
  setWordsKernel<<<1, 1, 0, stream>>>(dst, w0, w1, w2, w3);
  return cudaGetLastError();
}

cudaError_t topKEmit(const void* x, size_t element_bytes, const int64_t* slot_indices, size_t k,
                     int64_t* idx, uint64_t* kth_bits, cudaStream_t stream) {
  cudaError_t status = cudaMemsetAsync(kth_bits, 0xff, sizeof(uint64_t), stream);
  if (status != cudaSuccess || k == 0) return status;
  auto* bits = reinterpret_cast<unsigned long long*>(kth_bits);
  if (element_bytes == 8) {
    topKEmitKernel<<<gridFor(k), kThreads, 0, stream>>>(static_cast<const uint64_t*>(x),
                                                        slot_indices, k, idx, bits);
  } else {
    topKEmitKernel<<<gridFor(k), kThreads, 0, stream>>>(static_cast<const uint32_t*>(x),
                                                        slot_indices, k, idx, bits);
  }
  return cudaGetLastError();
}

cudaError_t zeroUnlessFault(void* dst, size_t bytes, const uint32_t* fault, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (bytes % 4 == 0) {
    zeroUnlessFaultKernel<<<gridFor(bytes / 4), kThreads, 0, stream>>>(static_cast<uint32_t*>(dst),
                                                                       bytes / 4, fault);
  } else {
    zeroUnlessFaultKernel<<<gridFor(bytes / 2), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst),
                                                                       bytes / 2, fault);
  }
  return cudaGetLastError();
}

cudaError_t copyOnFault(void* dst, const void* src, size_t bytes, const uint32_t* fault,
                        uint32_t* published, cudaStream_t stream) {
  if (bytes == 0 && published == nullptr) return cudaSuccess;
  copyOnFaultKernel<<<gridFor(bytes / 4), kThreads, 0, stream>>>(
      static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), bytes / 4, fault, published);
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
