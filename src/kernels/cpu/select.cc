// Threshold selection on the CPU: one streaming pass over the data, split into contiguous parts
// that run on the kernel pool. The first part selects straight into the output when it fits (its
// entries start at offset 0 whatever the others find); the others select into staging buffers
// that belong to the calling thread and are kept between calls, so the steady state allocates
// nothing. Part counts are then prefix-summed and the staged entries copied into place, sliced
// evenly over the threads.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/shared/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/select.h"
#include "kernels/shared/magnitude_bits.h"
#include "kernels/cpu/thread_pool.h"

namespace sccl {
namespace cpu_select {

// One definition with the CUDA kernels: kernels/shared/magnitude_bits.h.
uint64_t thresholdBits(scclDataType_t dtype, double threshold) {
  return sccl::thresholdBits(dtype, threshold);
}

}  // namespace cpu_select

namespace cpu {
namespace {

// Below this many elements per part a pool round trip costs more than the parallel pass saves.
constexpr size_t kMinPartElements = size_t{1} << 16;
// A part selects block by block so that its staging buffer only needs room for what was
// selected so far plus one block (the worst case of a block: every element qualifies).
constexpr size_t kBlockElements = size_t{1} << 15;

// One part's selected entries. Grows geometrically and never shrinks.
class StagingBuffer {
 public:
  int64_t* indices() { return indices_.get(); }
  unsigned char* values() { return values_.get(); }

  // Makes room for `entries` entries of element_bytes, keeping the first `keep`.
  void reserve(size_t entries, size_t keep, size_t element_bytes) {
    if (entries <= capacity_ && element_bytes <= element_bytes_) return;
    size_t grown = std::max({entries, 2 * capacity_, kBlockElements});
    size_t wide = std::max(element_bytes, element_bytes_);
    auto new_indices = std::make_unique_for_overwrite<int64_t[]>(grown);
    auto new_values = std::make_unique_for_overwrite<unsigned char[]>(grown * wide);
    if (keep > 0) {
      std::memcpy(new_indices.get(), indices_.get(), keep * sizeof(int64_t));
      std::memcpy(new_values.get(), values_.get(), keep * element_bytes);
    }
    indices_ = std::move(new_indices);
    values_ = std::move(new_values);
    capacity_ = grown;
    element_bytes_ = wide;
  }

 private:
  std::unique_ptr<int64_t[]> indices_;
  std::unique_ptr<unsigned char[]> values_;
  size_t capacity_ = 0;
  size_t element_bytes_ = 0;
};

struct PartResult {
  size_t begin = 0, end = 0;
  size_t count = 0;
  size_t offset = 0;        // position of the part's first entry in the output
  size_t staged_start = 0;  // position of its first entry among all staged entries
  // The first part's entries go to offset 0 whatever the other parts find, so when the output
  // can hold all its elements it selects straight into the output and is never copied.
  bool direct = false;
  bool out_of_memory = false;
};

// Per calling thread: every rank thread of the in-process transport has its own.
struct SelectScratch {
  std::vector<StagingBuffer> staging;
  std::vector<PartResult> parts;
};
thread_local SelectScratch t_scratch;

struct SelectCall {
  cpu_select::BlockSelectFn kernel;
  const void* x;
  size_t element_bytes;
  uint64_t threshold_bits;
  int64_t* idx;
  void* val;
  size_t capacity;
};

void selectPart(const SelectCall& call, StagingBuffer& staging, PartResult& part) {
  cpu_select::EmitStyle style = cpu_select::EmitStyle::Branchy;
  try {
    for (size_t block = part.begin; block < part.end; block += kBlockElements) {
      size_t block_end = std::min(part.end, block + kBlockElements);
      int64_t* idx;
      unsigned char* val;
      if (part.direct) {  // call.val is non-null for a direct part
        idx = call.idx + part.count;
        val = static_cast<unsigned char*>(call.val) + part.count * call.element_bytes;
      } else {
        staging.reserve(part.count + (block_end - block), part.count, call.element_bytes);
        idx = staging.indices() + part.count;
        val = staging.values() + part.count * call.element_bytes;
      }
      size_t selected = call.kernel(call.x, block, block_end, call.threshold_bits, style, idx, val);
      part.count += selected;
      style = cpu_select::nextEmitStyle(selected, block_end - block);
    }
  } catch (const std::bad_alloc&) {
    part.out_of_memory = true;
  }
}

// Copies the staged entries [first, last) (numbered across all staged parts in order) to their
// places in the output, cut at capacity. Slicing across parts keeps every thread busy even when
// a single part holds everything that was staged.
void copyStagedRange(const SelectCall& call, SelectScratch& scratch, size_t first, size_t last) {
  for (size_t p = 0; p < scratch.parts.size(); ++p) {
    const PartResult& part = scratch.parts[p];
    if (part.direct) continue;
    size_t from = std::max(first, part.staged_start);
    size_t to = std::min(last, part.staged_start + part.count);
    if (from >= to) continue;
    size_t out = part.offset + (from - part.staged_start);
    if (out >= call.capacity) return;
    size_t entries = std::min(to - from, call.capacity - out);
    size_t in = from - part.staged_start;
    std::memcpy(call.idx + out, scratch.staging[p].indices() + in, entries * sizeof(int64_t));
    if (call.val != nullptr) {
      std::memcpy(static_cast<unsigned char*>(call.val) + out * call.element_bytes,
                  scratch.staging[p].values() + in * call.element_bytes,
                  entries * call.element_bytes);
    }
  }
}

// Splits [begin, end) into parts on whole groups, so that only the last part has a scalar tail.
void planParts(const SelectCall& call, size_t begin, size_t end, SelectScratch& scratch) {
  const size_t nparts = kernelPartCount(end - begin, kMinPartElements);
  const size_t groups = (end - begin) / cpu_select::kGroupElements;
  if (scratch.staging.size() < nparts) scratch.staging.resize(nparts);
  scratch.parts.assign(nparts, PartResult{});
  for (size_t p = 0; p < nparts; ++p) {
    PartResult& part = scratch.parts[p];
    part.begin = begin + groups * p / nparts * cpu_select::kGroupElements;
    part.end =
        p + 1 == nparts ? end : begin + groups * (p + 1) / nparts * cpu_select::kGroupElements;
  }
  PartResult& first = scratch.parts.front();
  first.direct = call.val != nullptr && call.capacity >= first.end - first.begin;
}

// Prefix sums of the part counts; returns the total, or fails if a part ran out of memory.
scclResult_t placeParts(SelectScratch& scratch, size_t* total, size_t* staged) {
  *total = 0;
  *staged = 0;
  for (PartResult& part : scratch.parts) {
    if (part.out_of_memory) {
      return fail(scclSystemError, "selectAbove: out of memory for the staging buffers");
    }
    part.offset = *total;
    *total += part.count;
    if (!part.direct) {
      part.staged_start = *staged;
      *staged += part.count;
    }
  }
  return scclSuccess;
}

}  // namespace

scclResult_t selectAbove(const void* x, scclDataType_t dtype, size_t begin, size_t end,
                         double threshold, int64_t* idx, void* val, size_t capacity,
                         size_t* nselected) {
  const size_t element_bytes = dataTypeSize(dtype);
  cpu_select::BlockSelectFn kernel = cpu_select::blockSelectFor(activeCpuIsa(), element_bytes);
  if (!isFloatingType(dtype) || kernel == nullptr) {
    return fail(scclInvalidArgument, "selectAbove: unsupported dtype %s", dataTypeName(dtype));
  }
  const SelectCall call{kernel, x,   element_bytes, cpu_select::thresholdBits(dtype, threshold),
                        idx,    val, capacity};
  SelectScratch& scratch = t_scratch;
  planParts(call, begin, end, scratch);
  const size_t nparts = scratch.parts.size();
  cpuThreadPool().parallelFor(
      nparts, [&](size_t p) { selectPart(call, scratch.staging[p], scratch.parts[p]); });

  size_t total = 0, staged = 0;
  SCCL_CHECK(placeParts(scratch, &total, &staged));
  const size_t ncopies = staged >= kMinPartElements ? nparts : 1;
  cpuThreadPool().parallelFor(ncopies, [&](size_t c) {
    copyStagedRange(call, scratch, staged * c / ncopies, staged * (c + 1) / ncopies);
  });
  *nselected = total;
  return scclSuccess;
}

}  // namespace cpu
}  // namespace sccl
