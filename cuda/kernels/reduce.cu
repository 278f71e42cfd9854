// Reductions of the CUDA backend: moments of |x| (cub::DeviceReduce::TransformReduce over a
// counting iterator, one pass) and block squared norms (one thread per block, in index order).
//
// Determinism: CUB's DeviceReduce combines partials in a fixed tree for a given size and device,
// so moments are identical run to run and rank to rank (same GPU model), but the tree differs
// from the CPU's fixed-order combine: CPU and GPU moments agree within rounding, not bit for bit.
// The moments feed threshold estimates, not the exchanged values. Block norms are summed in index
// order in double by one thread, exactly as the CPU: bitwise equal.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "cuda/dispatch.h"
#include "cuda/kernels/device_common.cuh"

namespace sccl::cuda_dispatch {
namespace {

using namespace sccl::cuda_kernels;

template <typename T>
struct ElementMoments {
  const T* x;
  double floor;
  bool want_log;
  __device__ DeviceMoments operator()(int64_t i) const {
    DeviceMoments m{};
    const double v = double(x[i]);
    const double a = fabs(v);
    if (isnan(v)) {
      m.nan_count = 1;
      return m;
    }
    if (!(a >= floor)) return m;
    m.count = 1;
    m.sum_abs = a;
    m.sum_sq = v * v;
    m.max_abs = a;
    m.min_abs = a;
    if (a == 0) {
      m.zero_count = 1;
    } else if (want_log) {
      m.sum_log = log(a);
    }
    return m;
  }
};

struct CombineMoments {
  __device__ DeviceMoments operator()(const DeviceMoments& p, const DeviceMoments& q) const {
    DeviceMoments m;
    m.count = p.count + q.count;
    m.nan_count = p.nan_count + q.nan_count;
    m.zero_count = p.zero_count + q.zero_count;
    m.sum_abs = p.sum_abs + q.sum_abs;
    m.sum_sq = p.sum_sq + q.sum_sq;
    m.sum_log = p.sum_log + q.sum_log;
    // An empty side (count 0) must not lend its zeros to max and min.
    if (p.count == 0) {
      m.max_abs = q.max_abs;
      m.min_abs = q.min_abs;
    } else if (q.count == 0) {
      m.max_abs = p.max_abs;
      m.min_abs = p.min_abs;
    } else {
      m.max_abs = fmax(p.max_abs, q.max_abs);
      m.min_abs = fmin(p.min_abs, q.min_abs);
    }
    return m;
  }
};

template <typename T>
cudaError_t momentsOf(void* temp, size_t* temp_bytes, const T* x, size_t begin, size_t end,
                      double floor, bool want_log, DeviceMoments* out, cudaStream_t stream) {
  thrust::counting_iterator<int64_t> first(static_cast<int64_t>(begin));
  return cub::DeviceReduce::TransformReduce(
      temp, *temp_bytes, first, out, static_cast<int64_t>(end - begin), CombineMoments{},
      ElementMoments<T>{x, floor, want_log}, DeviceMoments{}, stream);
}

template <typename T>
__global__ void squaredNormsKernel(const T* x, size_t count, size_t block, double* sq) {
  const size_t blocks = sketchBlockCount(count, block);
  for (size_t b = globalThread(); b < blocks; b += gridThreads()) {
    const size_t end = sketchBlockEnd(b, block, count);
    double sum = 0;
    for (size_t i = b * block; i < end; ++i) sum += double(x[i]) * double(x[i]);
    sq[b] = canonicalizeNaN(sum);  // a NaN norm canonical, as the CPU's
  }
}

}  // namespace

cudaError_t absMoments(void* temp, size_t* temp_bytes, const void* x, scclDataType_t dtype,
                       size_t begin, size_t end, double floor, bool want_log, DeviceMoments* out,
                       cudaStream_t stream) {
  if (dtype == scclFloat64) {
    return momentsOf(temp, temp_bytes, static_cast<const double*>(x), begin, end, floor, want_log,
                     out, stream);
  }
  return momentsOf(temp, temp_bytes, static_cast<const float*>(x), begin, end, floor, want_log, out,
                   stream);
}

cudaError_t blockSquaredNorms(const void* x, scclDataType_t dtype, size_t count, size_t block,
                              double* sq, cudaStream_t stream) {
  const size_t blocks = sketchBlockCount(count, block);
  if (blocks == 0) return cudaSuccess;
  if (dtype == scclFloat64) {
    squaredNormsKernel<<<gridFor(blocks), kThreads, 0, stream>>>(static_cast<const double*>(x),
                                                                 count, block, sq);
  } else {
    squaredNormsKernel<<<gridFor(blocks), kThreads, 0, stream>>>(static_cast<const float*>(x),
                                                                 count, block, sq);
  }
  return cudaGetLastError();
}

}  // namespace sccl::cuda_dispatch
