// The fused pass on the CPU (kernels.h, accumulateSelect): accumulate, count the histogram and
// select candidates in one streaming pass over the gradient and the residual.
//
// Why: a sparse all-reduce with error feedback must read the gradient and the residual and write
// the new residual; the density correction's histogram and the threshold selection each read the
// accumulated range once more (and the histogram's per-element binning made it compute-bound:
// 4x its memory time at 26M float32 on 4 ranks). Here each part of the vector is accumulated
// block by block, and every block is selected while it is still in the core's cache, so memory
// sees the three streams of the accumulation alone; the histogram is counted from the selected
// candidates only (every element at or above the window's base is a candidate), a few per cent
// of the range instead of all of it.
//
// The dense output, when given, is zeroed block by block with streaming stores right after the
// block's gradient was read (so it may be the gradient itself): the fourth stream of the call,
// in the same pass.
//
// Results: the same bits as accumulate(), absBitHistogram() and selectAbove() (and fillZero())
// called one after the other, because the blocks run those very kernels (the ISA's accumulate loop
// and block selection) and the histogram is integer counts of the same bit patterns. Parts and
// blocks only decide where the work is cut, which none of the three results depends on.
//
// Memory: each part stages its candidates in a buffer of the calling thread that is kept between
// calls. Past `capacity` candidates in a part, later blocks are selected into a one-block scratch
// that is counted and binned but not kept (the total count stays exact, as selectAbove's), so a
// floor that lets everything through costs at most capacity + one block of staging per part.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/accumulate_select_avx512.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/select.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/streaming_zero.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cpu {
namespace {

// Elements accumulated and then selected at a time: the block's accumulator (64 KiB of float32)
// plus its gradient and residual stay in L2 between the two steps.
constexpr size_t kBlockElements = size_t{1} << 14;
// Three streams per element: smaller parts are not worth a pool round trip.
constexpr size_t kMinPartElements = size_t{1} << 16;

struct FusedPart {
  size_t begin = 0, end = 0;  // elements of the whole vector this part accumulates
  uint64_t nonfinite = 0;
  size_t count = 0;  // candidates found (may exceed what was kept)
  size_t kept = 0;   // candidates in the staging arrays
  size_t offset = 0;
  bool out_of_memory = false;
  std::vector<int64_t> idx;  // staging, kept between calls
  std::vector<unsigned char> val;
  std::vector<int64_t> spill_idx;  // one block's selection once the part is past capacity
  std::vector<unsigned char> spill_val;
  std::vector<uint64_t> counts;  // this part's histogram
};

// Per calling thread: every rank thread of the in-process transport has its own.
thread_local std::vector<FusedPart> t_parts;

struct FusedPlan {
  const AccumulateSelectArgs* args;
  AccumulateRangeFn accumulate;
  cpu_select::BlockSelectFn select;  // null: accumulate only
  // AVX-512 with a float32 accumulator: the in-register loop (streaming and plain stores).
  FusedGroupsFn groups_streaming = nullptr, groups_plain = nullptr;
  CpuIsa isa;
  size_t element_bytes;
  uint64_t floor_bits;
  bool histogram;
  size_t keep;  // candidates a part keeps at most (the caller's capacity; 0 without idx)
};

// Adds the candidates' magnitudes at or above the window's base to the part's histogram.
template <typename Bits>
void countCandidates(const unsigned char* values, size_t n, const AccumulateSelectArgs& a,
                     uint64_t* counts) {
  const Bits base = static_cast<Bits>(a.base_bits);
  for (size_t j = 0; j < n; ++j) {
    Bits bits;
    std::memcpy(&bits, values + j * sizeof(Bits), sizeof(Bits));
    const Bits magnitude = magnitudeBits(bits);
    if (magnitude < base) continue;
    ++counts[std::min<uint64_t>(uint64_t(magnitude - base) >> a.shift, a.bins)];
  }
}

// Grows a staging array to at least `entries` elements (doubling), keeping its contents.
template <typename T>
void growTo(std::vector<T>& v, size_t entries) {
  if (v.size() < entries) v.resize(std::max(entries, 2 * v.size()));
}

void zeroOutput(const FusedPlan& plan, size_t begin, size_t end) {
  const AccumulateSelectArgs& a = *plan.args;
  unsigned char* out = static_cast<unsigned char*>(a.out);
  const size_t width = dataTypeSize(a.out_dtype);
  if (plan.isa == CpuIsa::Scalar) {
    std::memset(out + begin * width, 0, (end - begin) * width);
  } else {
    zeroStreamingFor(plan.isa, out + begin * width, out + end * width);
  }
}

// The output as the AVX-512 loop zeroes it: float32 at the accumulator's alignment, else null
// (finishOutput then zeroes the span after it).
float* loopOutput(const FusedPlan& plan, size_t begin) {
  const AccumulateSelectArgs& a = *plan.args;
  if (a.out == nullptr || a.out_dtype != scclFloat32) return nullptr;
  float* out = static_cast<float*>(a.out);
  return reinterpret_cast<uintptr_t>(out + begin) % 64 == 0 ? out : nullptr;
}

// Zeroes the output of [begin, end) that the loop did not: [stop, end) when it did [begin, stop).
void finishOutput(const FusedPlan& plan, size_t begin, size_t stop, size_t end, bool by_loop) {
  if (plan.args->out == nullptr) return;
  zeroOutput(plan, by_loop ? stop : begin, end);
}

// Selects [from, to) of the block into idx/val: in registers while accumulating where the AVX-512
// loop applies (the caller then accumulates only the rest of the block), else from the block the
// caller has just accumulated. Returns the number selected.
size_t selectBlock(const FusedPlan& plan, FusedPart& part, size_t from, size_t to,
                   cpu_select::EmitStyle style, int64_t* idx, unsigned char* val, bool* streamed) {
  const AccumulateSelectArgs& a = *plan.args;
  if (plan.groups_plain == nullptr) {  // the caller zeroes the block's output
    return plan.select(a.acc, from, to, plan.floor_bits, style, idx, val);
  }
  float* acc = static_cast<float*>(a.acc);
  const bool aligned = reinterpret_cast<uintptr_t>(acc + from) % 64 == 0;
  *streamed |= aligned;
  float* out = aligned ? loopOutput(plan, from) : nullptr;
  size_t n = 0;
  const size_t stop = (aligned ? plan.groups_streaming : plan.groups_plain)(
      acc, static_cast<const float*>(a.residual), a.grad, from, to,
      static_cast<uint32_t>(plan.floor_bits), idx, reinterpret_cast<uint32_t*>(val),
      &part.nonfinite, &n, out);
  if (stop < to) {
    part.nonfinite += plan.accumulate(plan.isa, a.acc, a.residual, a.grad, stop, to);
    n +=
        plan.select(a.acc, stop, to, plan.floor_bits, style, idx + n, val + n * plan.element_bytes);
  }
  finishOutput(plan, from, stop, to, out != nullptr);
  return n;
}

// Accumulates [begin, end) without selecting: through the AVX-512 loop with a floor nothing
// reaches (its streaming stores spare the read of every accumulator line before it is written),
// else the ISA's accumulate loop.
void accumulateSpan(const FusedPlan& plan, FusedPart& part, size_t begin, size_t end,
                    bool* streamed) {
  const AccumulateSelectArgs& a = *plan.args;
  size_t stop = begin;
  float* out = nullptr;
  if (plan.groups_plain != nullptr && end - begin >= 64) {
    float* acc = static_cast<float*>(a.acc);
    if (reinterpret_cast<uintptr_t>(acc + begin) % 64 == 0) {
      *streamed = true;
      size_t none = 0;
      out = loopOutput(plan, begin);
      stop = plan.groups_streaming(acc, static_cast<const float*>(a.residual), a.grad, begin, end,
                                   0xffffffffu, nullptr, nullptr, &part.nonfinite, &none, out);
    }
  }
  part.nonfinite += plan.accumulate(plan.isa, a.acc, a.residual, a.grad, stop, end);
  finishOutput(plan, begin, stop, end, out != nullptr);
}

void runPart(const FusedPlan& plan, FusedPart& part) {
  const AccumulateSelectArgs& a = *plan.args;
  cpu_select::EmitStyle style = cpu_select::EmitStyle::Branchy;
  bool streamed = false;
  try {
    for (size_t block = part.begin; block < part.end; block += kBlockElements) {
      const size_t block_end = std::min(part.end, block + kBlockElements);
      size_t from = block_end, to = block_end;  // the block's part of the selection range
      if (plan.select != nullptr) {
        from = std::max(block, a.begin);
        to = std::max(from, std::min(block_end, a.end));
      }
      const bool in_registers = plan.groups_plain != nullptr && from < to;
      if (in_registers) {  // the selected span is accumulated by selectBlock
        accumulateSpan(plan, part, block, from, &streamed);
        accumulateSpan(plan, part, to, block_end, &streamed);
      } else if (plan.select == nullptr || from == to) {
        accumulateSpan(plan, part, block, block_end, &streamed);
      } else {  // the block selection reads back what the ISA's loop wrote
        part.nonfinite += plan.accumulate(plan.isa, a.acc, a.residual, a.grad, block, block_end);
      }
      const bool plain_select = !in_registers && plan.select != nullptr && from < to;
      if (from < to) {
        const size_t room = to - from;
        int64_t* idx;
        unsigned char* val;
        const bool keeping = part.kept < plan.keep;
        if (keeping) {
          growTo(part.idx, part.kept + room);
          growTo(part.val, (part.kept + room) * plan.element_bytes);
          idx = part.idx.data() + part.kept;
          val = part.val.data() + part.kept * plan.element_bytes;
        } else {
          growTo(part.spill_idx, room);
          growTo(part.spill_val, room * plan.element_bytes);
          idx = part.spill_idx.data();
          val = part.spill_val.data();
        }
        const size_t n = selectBlock(plan, part, from, to, style, idx, val, &streamed);
        if (plan.histogram) {
          if (plan.element_bytes == 4) {
            countCandidates<uint32_t>(val, n, a, part.counts.data());
          } else {
            countCandidates<uint64_t>(val, n, a, part.counts.data());
          }
        }
        part.count += n;
        if (keeping) part.kept += n;
        style = cpu_select::nextEmitStyle(n, room);
      }
      // After the block's gradient was read (the output may be the gradient itself); the spans
      // of accumulateSpan and selectBlock zeroed their own.
      if (plain_select && a.out != nullptr) zeroOutput(plan, block, block_end);
    }
  } catch (const std::bad_alloc&) {
    part.out_of_memory = true;
  }
  // Streaming stores are weakly ordered: fence them on the thread that issued them, before the
  // pool hands the part back.
  if (a.out != nullptr || streamed) _mm_sfence();
}

// Copies a part's kept candidates to their place in the output, cut at capacity.
void placePart(const AccumulateSelectArgs& a, size_t element_bytes, const FusedPart& part) {
  if (part.offset >= a.capacity) return;
  const size_t n = std::min(part.kept, a.capacity - part.offset);
  if (n == 0) return;  // the part's staging may never have been allocated (memcpy of null)
  std::memcpy(a.idx + part.offset, part.idx.data(), n * sizeof(int64_t));
  if (a.val != nullptr) {
    std::memcpy(static_cast<unsigned char*>(a.val) + part.offset * element_bytes, part.val.data(),
                n * element_bytes);
  }
}

scclResult_t checkArgs(const AccumulateSelectArgs& a, AccumulateRangeFn accumulate) {
  if (accumulate == nullptr) {
    return fail(scclInvalidArgument, "accumulateSelect: %s = %s + %s is not supported",
                dataTypeName(a.acc_dtype), dataTypeName(a.acc_dtype), dataTypeName(a.grad_dtype));
  }
  if (a.begin > a.end || a.end > a.count) {
    return fail(scclInvalidArgument, "accumulateSelect: range [%zu, %zu) outside [0, %zu)", a.begin,
                a.end, a.count);
  }
  if (a.idx != nullptr && a.ncandidates == nullptr) {
    return fail(scclInvalidArgument, "accumulateSelect: candidates need a count output");
  }
  if (a.bins > 0) {
    const unsigned width = a.acc_dtype == scclFloat64 ? 64 : 32;
    if (a.counts == nullptr || a.shift >= width) {
      return fail(scclInvalidArgument, "accumulateSelect: histogram counts null or shift %u >= %u",
                  a.shift, width);
    }
    if (a.idx != nullptr && thresholdBits(a.acc_dtype, a.floor) > a.base_bits) {
      return fail(scclInvalidArgument,
                  "accumulateSelect: the candidates' floor %g lies above the histogram's base",
                  a.floor);
    }
  }
  return scclSuccess;
}

}  // namespace

scclResult_t accumulateSelect(const AccumulateSelectArgs& a) {
  const AccumulateRangeFn accumulate_fn =
      accumulateRangeFor(a.acc_dtype, a.grad_dtype, a.residual != nullptr);
  SCCL_CHECK(checkArgs(a, accumulate_fn));
  const bool selecting = a.begin < a.end && (a.idx != nullptr || a.bins > 0);
  FusedPlan plan{};
  plan.args = &a;
  plan.accumulate = accumulate_fn;
  plan.isa = activeCpuIsa();
  plan.element_bytes = dataTypeSize(a.acc_dtype);
  plan.histogram = selecting && a.bins > 0;
  plan.keep = a.idx != nullptr ? a.capacity : 0;
  if (plan.isa == CpuIsa::Avx512 && a.acc_dtype == scclFloat32) {
    plan.groups_streaming = fusedGroupsAvx512(a.grad_dtype, a.residual != nullptr, true);
    plan.groups_plain = fusedGroupsAvx512(a.grad_dtype, a.residual != nullptr, false);
  }
  if (selecting) {
    plan.select = cpu_select::blockSelectFor(plan.isa, plan.element_bytes);
    // Without candidates to return, the histogram's own window is the floor.
    plan.floor_bits = a.idx != nullptr ? thresholdBits(a.acc_dtype, a.floor) : a.base_bits;
  }

  const size_t nparts = kernelPartCount(a.count, kMinPartElements);
  std::vector<FusedPart>& parts = t_parts;
  if (parts.size() < nparts) parts.resize(nparts);
  const size_t groups = a.count / cpu_select::kGroupElements;
  for (size_t p = 0; p < nparts; ++p) {
    FusedPart& part = parts[p];
    part.begin = groups * p / nparts * cpu_select::kGroupElements;
    part.end = p + 1 == nparts ? a.count : groups * (p + 1) / nparts * cpu_select::kGroupElements;
    part.nonfinite = 0;
    part.count = part.kept = part.offset = 0;
    part.out_of_memory = false;
    if (plan.histogram) part.counts.assign(a.bins + 1, 0);
  }
  cpuThreadPool().parallelFor(nparts, [&](size_t p) { runPart(plan, parts[p]); });

  uint64_t nonfinite = 0;
  size_t total = 0;
  for (size_t p = 0; p < nparts; ++p) {
    if (parts[p].out_of_memory) {
      return fail(scclSystemError, "accumulateSelect: out of memory for the staging buffers");
    }
    nonfinite += parts[p].nonfinite;
    parts[p].offset = total;
    total += parts[p].count;
  }
  if (a.nonfinite != nullptr) *a.nonfinite = nonfinite;
  if (a.bins > 0) {
    std::fill(a.counts, a.counts + a.bins + 1, uint64_t{0});
    if (plan.histogram) {
      for (size_t p = 0; p < nparts; ++p)
        for (size_t j = 0; j <= a.bins; ++j) a.counts[j] += parts[p].counts[j];
    }
  }
  if (a.idx != nullptr) {
    const size_t ncopies = total >= kMinPartElements ? nparts : 1;
    cpuThreadPool().parallelFor(ncopies, [&](size_t c) {
      for (size_t p = c; p < nparts; p += ncopies) placePart(a, plan.element_bytes, parts[p]);
    });
    *a.ncandidates = plan.select != nullptr ? total : 0;
  } else if (a.ncandidates != nullptr) {
    *a.ncandidates = 0;
  }
  return scclSuccess;
}

}  // namespace sccl::cpu
