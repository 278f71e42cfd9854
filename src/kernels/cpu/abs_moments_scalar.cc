// The scalar lane kernels of the CPU moments of |x| (abs_moments.h): addOne for every element.
#include "kernels/cpu/abs_moments.h"

namespace sccl::cpu_moments {
namespace {

template <bool kLog>
void addFloatsScalar(LaneMoments& m, const float* x, size_t n, double floor) {
  addScalar<kLog>(m, x, n, floor);
}
template <bool kLog>
void addDoublesScalar(LaneMoments& m, const double* x, size_t n, double floor) {
  addScalar<kLog>(m, x, n, floor);
}

template <bool kLog>
void chunkLanesScalarT(LaneMoments& m, const void* x, scclDataType_t dtype, size_t n,
                       double floor) {
  chunkLanes(m, x, dtype, n, floor, addFloatsScalar<kLog>, addDoublesScalar<kLog>, widenFp16Scalar);
}

}  // namespace

ChunkLanesFn chunkLanesScalar(bool want_log) {
  return want_log ? chunkLanesScalarT<true> : chunkLanesScalarT<false>;
}

}  // namespace sccl::cpu_moments
