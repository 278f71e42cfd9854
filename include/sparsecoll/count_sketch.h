/*
 * sparsecoll: the count sketch building blocks of the S2 Reducer, part of the public C99 ABI.
 * Included by sparsecoll.h; docs/algorithms/s2.md defines the hash and sign functions.
 */
#ifndef SPARSECOLL_COUNT_SKETCH_H_
#define SPARSECOLL_COUNT_SKETCH_H_

/* The shared types (scclResult_t, scclComm_t, scclDataType_t, SCCL_API) are in sparsecoll.h,
 * which also includes this header: either include order works. */
#include "sparsecoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Count sketch building blocks (the S2 Reducer's, for frameworks that run their own exchange;
 * docs/api.md "Count sketch")
 * ------------------------------------------------------------------------------------------- */
/* A count sketch of `rows` x `width` buckets (table[j * width + b], row-major) over a vector of
 * `count` elements cut into blocks of `blockSize` elements (the last one may be shorter); a
 * bitmap holds one byte per block, ceil(count / blockSize) bytes, and a non-zero byte marks the
 * block (bitmap NULL: every block). Row j hashes element i to bucket h_j(i) with sign s_j(i),
 * functions of (seed, j, i) only, identical on every rank, process and backend (64-bit
 * splitmix mixing, defined in docs/algorithms/s2.md). dtype is scclFloat32 or scclFloat64 and is
 * the type of values, table and out alike. rows is 1..16, width 1..2^32-1, blockSize >= 1.
 * Host buffers with stream NULL. Invalid arguments (NULL buffers, an unsupported dtype, sizes
 * out of range or overflowing size_t) are scclInvalidArgument and change nothing. */

/* table[j * width + h_j(i)] += s_j(i) * values[i] for every row j and every non-zero values[i] in
 * a marked block. The table is not cleared: zero it first, or add several vectors into it (the
 * sketch is linear, so the element-wise sum of the tables of several vectors, e.g. an
 * all-reduce, is the sketch of their sum). */
SCCL_API scclResult_t scclCountSketchEncode(const void* values, size_t count, scclDataType_t dtype,
                                            size_t blockSize, const uint8_t* bitmap, int rows,
                                            size_t width, uint64_t seed, void* table,
                                            void* stream);

/* out[i] = median over rows j of s_j(i) * table[j * width + h_j(i)] (an even row count averages
 * the two middle estimates) for every i in a marked block; out[i] = 0 in unmarked blocks. */
SCCL_API scclResult_t scclCountSketchDecode(const void* table, scclDataType_t dtype, int rows,
                                            size_t width, uint64_t seed, size_t count,
                                            size_t blockSize, const uint8_t* bitmap, void* out,
                                            void* stream);

/* bitmap[b] = 1 if block b of values holds a non-zero value (NaN counts), else 0. To unite the
 * bitmaps of several ranks with scclAllReduce (which sums), widen them to scclInt32 first: a
 * uint8 sum wraps to 0 when a multiple of 256 ranks mark the same block. */
SCCL_API scclResult_t scclCountSketchMarkBlocks(const void* values, size_t count,
                                                scclDataType_t dtype, size_t blockSize,
                                                uint8_t* bitmap, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSECOLL_COUNT_SKETCH_H_ */
