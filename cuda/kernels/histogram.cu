// The density correction's magnitude histogram on the GPU, alone (absBitHistogram) or counted in
// the pass that accumulates the gradient (accumulateHistogram).
//
// Each block counts into 32-bit counters in shared memory and adds its non-zero bins to the
// global 64-bit counts once at its end. The first version made one global atomic per counted
// element: the window reaches a few octaves below the threshold, so most elements of a Laplace-
// like gradient fall into a few dozen bins, and those atomics serialised (172-538 us for 26M
// float32 on an H100, against 115 us for the accumulation itself). Counts are integer
// sums, the same in any order: bitwise the CPU's histogram.
//
// The fused kernel does accumulate()'s element operation (accumulate_element.cuh) and counts the
// value it has just written: acc is read once per call instead of twice.
//
// A block's counters cannot overflow: with kHistogramBlocks blocks, a block visits at most
// count / (kHistogramBlocks * kThreads) + 1 elements per thread, far below 2^32 for any vector
// that fits in GPU memory. Windows wider than the shared memory (more than kSharedBins bins) fall
// back to global atomics.
#include "cuda/dispatch.h"
#include "cuda/kernels/accumulate_element.cuh"
#include "cuda/kernels/device_common.cuh"
#include "kernels/shared/magnitude_bits.h"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

constexpr unsigned kHistogramBlocks = 1024;  // about two waves of resident blocks on an H100
constexpr size_t kSharedBins = 12288;        // 48 KiB of counters: the default shared memory limit

unsigned histogramGrid(size_t n) {
  const unsigned grid = gridFor(n);
  return grid < kHistogramBlocks ? grid : kHistogramBlocks;
}

// The bin of a magnitude at or above the window's base; the last one (bins) holds everything
// above the window.
template <typename Bits, typename Counter>
__device__ inline void countInto(Counter* hist, Bits bits, uint64_t base_bits, unsigned shift,
                                 size_t bins) {
  const uint64_t b = magnitudeBits(bits);
  if (b < base_bits) return;
  const uint64_t bin = (b - base_bits) >> shift;
  atomicAdd(hist + (bin < bins ? bin : bins), Counter{1});
}

__device__ inline void clearShared(unsigned* hist, size_t bins) {
  for (size_t j = threadIdx.x; j <= bins; j += blockDim.x) hist[j] = 0;
  __syncthreads();
}

__device__ inline void flushShared(const unsigned* hist, size_t bins, unsigned long long* counts) {
  __syncthreads();
  for (size_t j = threadIdx.x; j <= bins; j += blockDim.x) {
    if (hist[j] != 0) atomicAdd(counts + j, static_cast<unsigned long long>(hist[j]));
  }
}

// skip (device memory, may be null): when it points at a non-zero word, the kernel does nothing
// (SIDCo's wide count-check window after the first window decided; kernels/shared/count_check.h).
__device__ inline bool skipped(const uint64_t* skip) {
  return skip != nullptr && *skip != 0;
}

template <typename Bits>
__global__ void sharedHistogramKernel(const Bits* x, size_t begin, size_t end, uint64_t base_bits,
                                      unsigned shift, size_t bins, unsigned long long* counts,
                                      const uint64_t* skip) {
  if (skipped(skip)) return;  // the whole block, before its first barrier
  extern __shared__ unsigned hist[];
  clearShared(hist, bins);
  for (size_t i = begin + globalThread(); i < end; i += gridThreads())
    countInto(hist, x[i], base_bits, shift, bins);
  flushShared(hist, bins, counts);
}

template <typename Bits>
__global__ void globalHistogramKernel(const Bits* x, size_t begin, size_t end, uint64_t base_bits,
                                      unsigned shift, size_t bins, unsigned long long* counts,
                                      const uint64_t* skip) {
  if (skipped(skip)) return;
  for (size_t i = begin + globalThread(); i < end; i += gridThreads())
    countInto(counts, x[i], base_bits, shift, bins);
}

template <typename Acc, typename Load>
__global__ void accumulateHistogramKernel(Acc* acc, const Acc* residual, Load load, size_t count,
                                          unsigned long long* nonfinite, size_t begin,
                                          size_t end, uint64_t base_bits, unsigned shift,
                                          size_t bins, unsigned long long* counts) {
  extern __shared__ unsigned hist[];
  clearShared(hist, bins);
  unsigned long long bad = 0;
  for (size_t i = globalThread(); i < count; i += gridThreads()) {
    const Acc value = accumulatedValue(residual, load, i);
    acc[i] = value;
    bad += nonFinite(value) ? 1 : 0;
    if (i >= begin && i < end) countInto(hist, accBits(value), base_bits, shift, bins);
  }
  if (nonfinite != nullptr && bad != 0) atomicAdd(nonfinite, bad);
  flushShared(hist, bins, counts);
}

template <typename Acc, typename Load>
void launchAccumulateHistogram(Acc* acc, const Acc* residual, Load load, size_t count,
                               unsigned long long* nonfinite, size_t begin, size_t end,
                               uint64_t base_bits, unsigned shift, size_t bins,
                               unsigned long long* counts, cudaStream_t stream) {
  accumulateHistogramKernel<<<histogramGrid(count), kThreads, (bins + 1) * sizeof(unsigned),
                              stream>>>(acc, residual, load, count, nonfinite, begin, end,
                                        base_bits, shift, bins, counts);
}

bool fitsShared(size_t bins) {
  return bins + 1 <= kSharedBins;
}

// Shared-memory counters when the window fits, else one global atomic per counted element.
template <typename Bits>
void launchHistogram(const Bits* x, size_t begin, size_t end, uint64_t base_bits, unsigned shift,
                     size_t bins, unsigned long long* counts, cudaStream_t stream,
                     const uint64_t* skip = nullptr) {
  if (fitsShared(bins)) {
    sharedHistogramKernel<<<histogramGrid(end - begin), kThreads, (bins + 1) * sizeof(unsigned),
                            stream>>>(x, begin, end, base_bits, shift, bins, counts, skip);
  } else {
    globalHistogramKernel<<<gridFor(end - begin), kThreads, 0, stream>>>(x, begin, end, base_bits,
                                                                         shift, bins, counts, skip);
  }
}

__global__ void decideCountCheckKernel(const uint64_t* counts, CountCheckWindow w, uint64_t* check,
                                       uint64_t* threshold_bits) {
  if (countCheckRuns(w, check)) decideCountCheck(counts, w, check, threshold_bits);
}

}  // namespace

bool histogramInSharedMemory(size_t bins) {
  return fitsShared(bins);
}

cudaError_t absBitHistogram(const void* x, size_t element_bytes, size_t begin, size_t end,
                            uint64_t base_bits, unsigned shift, size_t bins, uint64_t* counts,
                            cudaStream_t stream) {
  cudaError_t status = cudaMemsetAsync(counts, 0, (bins + 1) * sizeof(uint64_t), stream);
  if (status != cudaSuccess || end <= begin) return status;
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  if (element_bytes == 4) {
    launchHistogram(static_cast<const uint32_t*>(x), begin, end, base_bits, shift, bins, out,
                    stream);
  } else {
    launchHistogram(static_cast<const uint64_t*>(x), begin, end, base_bits, shift, bins, out,
                    stream);
  }
  return cudaGetLastError();
}

cudaError_t countCheckWindow(const void* x, size_t element_bytes, size_t begin, size_t end,
                             const CountCheckWindow& w, uint64_t* counts, uint64_t* check,
                             uint64_t* threshold_bits, cudaStream_t stream) {
  // The counts are zeroed whether or not the window runs: a skipped window's are never read.
  cudaError_t status = cudaMemsetAsync(counts, 0, (w.bins + 1) * sizeof(uint64_t), stream);
  if (status != cudaSuccess) return status;
  const uint64_t* skip = w.wide ? check + kCheckDecided : nullptr;
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  if (end > begin && element_bytes == 4) {
    launchHistogram(static_cast<const uint32_t*>(x), begin, end, w.base_bits, w.shift, w.bins, out,
                    stream, skip);
  } else if (end > begin) {
    launchHistogram(static_cast<const uint64_t*>(x), begin, end, w.base_bits, w.shift, w.bins, out,
                    stream, skip);
  }
  decideCountCheckKernel<<<1, 1, 0, stream>>>(counts, w, check, threshold_bits);
  return cudaGetLastError();
}

cudaError_t accumulateHistogram(void* acc, const void* residual, scclDataType_t acc_dtype,
                                const void* grad, scclDataType_t grad_dtype, size_t count,
                                uint64_t* nonfinite, size_t begin, size_t end, uint64_t base_bits,
                                unsigned shift, size_t bins, uint64_t* counts,
                                cudaStream_t stream) {
  if (!histogramInSharedMemory(bins)) return cudaErrorInvalidValue;
  cudaError_t status = cudaMemsetAsync(counts, 0, (bins + 1) * sizeof(uint64_t), stream);
  if (status != cudaSuccess || count == 0) return status;
  auto* bad = reinterpret_cast<unsigned long long*>(nonfinite);
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  withAccumulateTypes(acc, residual, acc_dtype, grad, grad_dtype,
                      [&](auto* a, const auto* r, auto load) {
                        launchAccumulateHistogram(a, r, load, count, bad, begin, end, base_bits,
                                                  shift, bins, out, stream);
                      });
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
