// scclCountSketchEncode / Decode / MarkBlocks: the S2 Reducer's building blocks over a caller's
// buffers, validated here and run by the CPU kernel backend (kernels.h, kernels/cpu/sketch.cc).
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "api/api_guard.h"
#include "api/api_validate.h"
#include "kernels/kernels.h"

namespace sccl {
namespace {

constexpr int kMaxApiRows = 16;

scclResult_t requireSketchData(const scclDataType_t& dtype, size_t count, size_t block_size,
                               size_t* value_bytes) {
  SCCL_CHECK(requireByteSize(count, dtype, value_bytes));
  SCCL_REQUIRE_ARG(dtype == scclFloat32 || dtype == scclFloat64,
                   "count sketch data must be float32 or float64, not %s", dataTypeName(dtype));
  SCCL_REQUIRE_ARG(block_size >= 1, "blockSize is 0 (it must be >= 1)");
  return scclSuccess;
}

// The table's shape and byte size; keys receives the row keys.
scclResult_t requireTable(int rows, size_t width, uint64_t seed, scclDataType_t dtype,
                          std::vector<uint64_t>* keys, size_t* table_bytes) {
  SCCL_REQUIRE_ARG(rows >= 1 && rows <= kMaxApiRows, "rows %d must be in [1, %d]", rows,
                   kMaxApiRows);
  SCCL_REQUIRE_ARG(width >= 1 && width <= kMaxSketchWidth, "width %zu must be in [1, %llu]", width,
                   static_cast<unsigned long long>(kMaxSketchWidth));
  size_t cells = 0;
  SCCL_REQUIRE_ARG(
      !__builtin_mul_overflow(size_t(rows), width, &cells) && byteSize(cells, dtype, table_bytes),
      "a table of %d x %zu %s overflows the address space", rows, width, dataTypeName(dtype));
  keys->resize(size_t(rows));
  for (int j = 0; j < rows; ++j) (*keys)[size_t(j)] = sketchRowKey(seed, uint32_t(j));
  return scclSuccess;
}

SketchShape shapeOf(size_t count, size_t block_size, int rows, size_t width,
                    const std::vector<uint64_t>& keys) {
  SketchShape shape;
  shape.count = count;
  shape.block = block_size;
  shape.rows = uint32_t(rows);
  shape.width = width;
  shape.row_keys = keys.data();
  return shape;
}

}  // namespace
}  // namespace sccl

extern "C" {

SCCL_API scclResult_t scclCountSketchEncode(const void* values, size_t count, scclDataType_t dtype,
                                            size_t blockSize, const uint8_t* bitmap, int rows,
                                            size_t width, uint64_t seed, void* table,
                                            void* stream) {
  return sccl::guardedCall(__func__, nullptr, [&]() -> scclResult_t {
    size_t value_bytes = 0, table_bytes = 0;
    std::vector<uint64_t> keys;
    SCCL_CHECK(sccl::requireSketchData(dtype, count, blockSize, &value_bytes));
    SCCL_CHECK(sccl::requireTable(rows, width, seed, dtype, &keys, &table_bytes));
    SCCL_CHECK(sccl::requireHostBuffer(values, value_bytes, "values", stream));
    SCCL_CHECK(sccl::requireHostBuffer(table, table_bytes, "table", stream));
    if (bitmap != nullptr) SCCL_CHECK(sccl::requireHostBuffer(bitmap, 1, "bitmap", stream));
    const sccl::SketchShape shape = sccl::shapeOf(count, blockSize, rows, width, keys);
    return sccl::cpuKernels().sketchEncode(values, dtype, shape, bitmap, table,
                                           sccl::kListedUnknown, nullptr);
  });
}

SCCL_API scclResult_t scclCountSketchDecode(const void* table, scclDataType_t dtype, int rows,
                                            size_t width, uint64_t seed, size_t count,
                                            size_t blockSize, const uint8_t* bitmap, void* out,
                                            void* stream) {
  return sccl::guardedCall(__func__, nullptr, [&]() -> scclResult_t {
    size_t value_bytes = 0, table_bytes = 0;
    std::vector<uint64_t> keys;
    SCCL_CHECK(sccl::requireSketchData(dtype, count, blockSize, &value_bytes));
    SCCL_CHECK(sccl::requireTable(rows, width, seed, dtype, &keys, &table_bytes));
    SCCL_CHECK(sccl::requireHostBuffer(table, table_bytes, "table", stream));
    SCCL_CHECK(sccl::requireHostBuffer(out, value_bytes, "out", stream));
    if (bitmap != nullptr) SCCL_CHECK(sccl::requireHostBuffer(bitmap, 1, "bitmap", stream));
    const sccl::SketchShape shape = sccl::shapeOf(count, blockSize, rows, width, keys);
    return sccl::cpuKernels().sketchDecode(table, dtype, shape, bitmap, 1, out, dtype, nullptr);
  });
}

SCCL_API scclResult_t scclCountSketchMarkBlocks(const void* values, size_t count,
                                                scclDataType_t dtype, size_t blockSize,
                                                uint8_t* bitmap, void* stream) {
  return sccl::guardedCall(__func__, nullptr, [&]() -> scclResult_t {
    size_t value_bytes = 0;
    SCCL_CHECK(sccl::requireSketchData(dtype, count, blockSize, &value_bytes));
    const size_t blocks = count == 0 ? 0 : (count - 1) / blockSize + 1;
    SCCL_CHECK(sccl::requireHostBuffer(values, value_bytes, "values", stream));
    SCCL_CHECK(sccl::requireHostBuffer(bitmap, blocks, "bitmap", stream));
    return sccl::cpuKernels().markNonzeroBlocks(values, dtype, count, blockSize, bitmap, nullptr);
  });
}

}  // extern "C"
