// SCCL_HOST_DEVICE marks the functions that the CPU kernels and the CUDA kernels (cuda/) share:
// one definition compiled by g++ for the host and by nvcc for both, so that both backends
// compute the same bits (hashes, signs, threshold patterns, block bounds, medians, roundings).
#pragma once

#if defined(__CUDACC__)
#define SCCL_HOST_DEVICE __host__ __device__
#else
#define SCCL_HOST_DEVICE
#endif
