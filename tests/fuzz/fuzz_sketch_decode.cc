// libFuzzer harness: the count sketch building blocks (scclCountSketchDecode, Encode and
// MarkBlocks) on table contents, bitmaps and shapes from the input: what the S2 reduction
// decodes after its all-reduce, where table and bitmap came from peers. Shapes are kept within
// the buffers the harness allocates (the API cannot know a buffer's size); separately, shapes
// whose sizes overflow size_t must be rejected with scclInvalidArgument before any access.
//
// Input: byte 0 rows (0..17, out-of-range included), byte 1 flags (dtype, bitmap or NULL, an
// overflowing shape), bytes 2-3 width (0..1024), 4-5 count (0..2048), 6 block size, 7-14 seed;
// then the table, then the bitmap, each filled from the input (zeros past its end). Widths and
// counts stay small so that an input costs well under a millisecond: nothing in the decoder
// depends on size beyond a few blocks of 255 elements and 16 rows, and sizes at the size_t
// boundaries are the overflowing shapes above (the first version allowed 4096 x 8192 and ran
// 1,900 inputs per second, too few for 10^7 executions).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace {

uint64_t readLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

void fill(std::vector<uint8_t>& buffer, const uint8_t*& data, size_t& size) {
  size_t n = buffer.size() < size ? buffer.size() : size;
  if (n > 0) std::memcpy(buffer.data(), data, n);
  data += n;
  size -= n;
}

void expect(scclResult_t got, bool valid) {
  if (valid ? got != scclSuccess : got != scclInvalidArgument) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 15) return 0;
  const int rows = data[0] % 18;
  const uint8_t flags = data[1];
  const scclDataType_t dtype = (flags & 1) ? scclFloat64 : scclFloat32;
  const size_t element = dtype == scclFloat64 ? 8 : 4;
  const bool use_bitmap = (flags & 2) != 0;
  const size_t width = readLe(data + 2, 2) % 1025;  // 0 is invalid
  const size_t count = readLe(data + 4, 2) % 2049;
  const size_t block = data[6];  // 0 is invalid
  const uint64_t seed = readLe(data + 7, 8);
  data += 15;
  size -= 15;

  if (flags & 4) {
    // Overflowing shapes: width or count so large that rows x width or count x element size
    // does not fit size_t; nothing may be touched (the buffers are one element).
    double one[1] = {0};
    uint8_t bit[1] = {1};
    const size_t huge = SIZE_MAX / (flags & 8 ? 2 : 1) - (flags >> 4);
    expect(scclCountSketchDecode(one, dtype, rows == 0 ? 1 : rows, huge, seed, 1, 1, bit, one,
                                 nullptr),
           false);
    expect(scclCountSketchDecode(one, dtype, 1, 1, seed, huge, 1, nullptr, one, nullptr), false);
    expect(scclCountSketchEncode(one, huge, dtype, 1, nullptr, 1, 1, seed, one, nullptr), false);
    expect(scclCountSketchMarkBlocks(one, huge, dtype, 1, bit, nullptr), false);
    return 0;
  }

  const bool valid = rows >= 1 && rows <= 16 && width >= 1 && block >= 1;
  const size_t blocks = block == 0 ? 0 : (count + block - 1) / block;
  std::vector<uint8_t> table(size_t(rows == 0 ? 1 : rows) * (width == 0 ? 1 : width) * element);
  std::vector<uint8_t> bitmap(blocks == 0 ? 1 : blocks);
  std::vector<uint8_t> values(count == 0 ? element : count * element);
  std::vector<uint8_t> out(values.size());
  fill(table, data, size);
  fill(bitmap, data, size);
  fill(values, data, size);
  const uint8_t* bits = use_bitmap ? bitmap.data() : nullptr;

  expect(scclCountSketchDecode(table.data(), dtype, rows, width, seed, count, block, bits,
                               out.data(), nullptr),
         valid);
  expect(scclCountSketchEncode(values.data(), count, dtype, block, bits, rows, width, seed,
                               table.data(), nullptr),
         valid);
  expect(scclCountSketchMarkBlocks(values.data(), count, dtype, block, bitmap.data(), nullptr),
         block >= 1);
  return 0;
}
