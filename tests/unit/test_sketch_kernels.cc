// The count sketch on its own: the hash and sign functions, the CPU kernels (encode, decode,
// block norms, bitmaps, residual update) and the public scclCountSketch* building blocks.
// Linearity and exact recovery are checked bitwise on integer-valued inputs, unbiasedness over
// many seeds against a bound from the measured spread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "sparsecoll/sparsecoll.h"

using sccl::SketchShape;

namespace {

struct Sketch {
  std::vector<uint64_t> keys;
  SketchShape shape;
  Sketch(size_t count, size_t block, uint32_t rows, uint64_t width, uint64_t seed) {
    for (uint32_t j = 0; j < rows; ++j) keys.push_back(sccl::sketchRowKey(seed, j));
    shape.count = count;
    shape.block = block;
    shape.rows = rows;
    shape.width = width;
    shape.row_keys = keys.data();
  }
  size_t cells() const { return size_t(shape.rows) * shape.width; }
};

// Integer values in [-20, 20] with about `zero_share` zeros, from (seed, i).
std::vector<float> integerVector(size_t count, uint64_t seed, double zero_share) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t h = sccl::sketchMix(seed * 0x100000001b3ull + i);
    bool zero = double(h >> 11) / 9007199254740992.0 < zero_share;
    v[i] = zero ? 0.0f : float(int64_t(h % 41) - 20);
  }
  return v;
}

std::vector<float> encode(const Sketch& s, const std::vector<float>& x, const uint8_t* bitmap) {
  std::vector<float> table(s.cells(), 0.0f);
  REQUIRE(sccl::cpuKernels().sketchEncode(x.data(), scclFloat32, s.shape, bitmap, table.data(),
                                          sccl::kListedUnknown, nullptr) == scclSuccess);
  return table;
}

std::vector<float> decode(const Sketch& s, const std::vector<float>& table, const uint8_t* bitmap) {
  std::vector<float> out(s.shape.count, -1.0f);
  REQUIRE(sccl::cpuKernels().sketchDecode(table.data(), scclFloat32, s.shape, bitmap, 1, out.data(),
                                          scclFloat32, nullptr) == scclSuccess);
  return out;
}

}  // namespace

TEST_CASE("sketch hash is splitmix64 and its buckets and signs are well spread", "[sketch][hash]") {
  // splitmix64's first outputs from state 0 and 1 (the published reference values).
  CHECK(sccl::sketchMix(0) == 0xE220A8397B1DCDAFull);
  CHECK(sccl::sketchMix(0x9E3779B97F4A7C15ull) == 0x6E789E6AA1B965F4ull);
  // The row keys differ, and a key's hash is a bijection of the index.
  CHECK(sccl::sketchRowKey(0, 0) != sccl::sketchRowKey(0, 1));
  CHECK(sccl::sketchRowKey(0, 0) != sccl::sketchRowKey(1, 0));
  const uint64_t width = 97;
  const size_t n = 97 * 1000;
  for (uint32_t row = 0; row < 3; ++row) {
    std::vector<size_t> per_bucket(width, 0);
    size_t negative = 0;
    const uint64_t key = sccl::sketchRowKey(12345, row);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t h = sccl::sketchHash(key, i);
      const uint64_t b = sccl::sketchBucket(h, width);
      REQUIRE(b < width);
      ++per_bucket[b];
      negative += sccl::sketchNegative(h) ? 1 : 0;
    }
    // Chi-square with 96 degrees of freedom: mean 96, sd ~13.9; 200 is > 7 sd.
    double chi2 = 0;
    for (size_t c : per_bucket) chi2 += (double(c) - 1000.0) * (double(c) - 1000.0) / 1000.0;
    CHECK(chi2 < 200);
    CHECK(std::fabs(double(negative) - n / 2.0) < 5 * std::sqrt(n / 4.0));
  }
  // The widest bucket range stays in range.
  CHECK(sccl::sketchBucket(~uint64_t{0}, sccl::kMaxSketchWidth) < sccl::kMaxSketchWidth);
}

TEST_CASE("sketch encoding is linear on integer-valued inputs", "[sketch][linearity]") {
  for (uint32_t rows : {1u, 3u, 4u}) {
    Sketch s(5003, 7, rows, 211, 99);
    std::vector<float> a = integerVector(5003, 1, 0.9), b = integerVector(5003, 2, 0.9);
    std::vector<float> sum(5003);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = a[i] + b[i];
    std::vector<float> ta = encode(s, a, nullptr), tb = encode(s, b, nullptr);
    std::vector<float> tsum = encode(s, sum, nullptr);
    for (size_t c = 0; c < ta.size(); ++c) REQUIRE(ta[c] + tb[c] == tsum[c]);
    // Encoding b on top of a's table is the same as encoding the sum.
    std::vector<float> both = ta;
    REQUIRE(sccl::cpuKernels().sketchEncode(b.data(), scclFloat32, s.shape, nullptr, both.data(),
                                            sccl::kListedUnknown, nullptr) == scclSuccess);
    CHECK(std::memcmp(both.data(), tsum.data(), both.size() * 4) == 0);
    // Scaling: sketch(3 a) = 3 sketch(a).
    std::vector<float> a3(a.size());
    for (size_t i = 0; i < a.size(); ++i) a3[i] = 3 * a[i];
    std::vector<float> t3 = encode(s, a3, nullptr);
    for (size_t c = 0; c < ta.size(); ++c) REQUIRE(t3[c] == 3 * ta[c]);
  }
}

TEST_CASE("sketch decodes exactly when no selected element collides", "[sketch][exact]") {
  // By construction: walk the indices and keep one only if none of its r buckets is taken yet;
  // every kept element then sits alone in each row and its r estimates are its value.
  const size_t count = 20000;
  const uint32_t rows = 3;
  const uint64_t width = 4096;
  Sketch s(count, 1, rows, width, 7);
  std::vector<std::vector<char>> taken(rows, std::vector<char>(width, 0));
  std::vector<float> x(count, 0.0f);
  std::vector<uint8_t> bitmap(count, 0);
  size_t kept = 0;
  for (size_t i = 0; i < count && kept < 600; i += 13) {
    bool free = true;
    for (uint32_t j = 0; j < rows; ++j)
      free = free && !taken[j][sccl::sketchBucket(sccl::sketchHash(s.keys[j], i), width)];
    if (!free) continue;
    for (uint32_t j = 0; j < rows; ++j)
      taken[j][sccl::sketchBucket(sccl::sketchHash(s.keys[j], i), width)] = 1;
    x[i] = float(int(i % 1000) - 500) + 0.25f;
    bitmap[i] = 1;
    ++kept;
  }
  REQUIRE(kept == 600);
  std::vector<float> out = decode(s, encode(s, x, bitmap.data()), bitmap.data());
  CHECK(std::memcmp(out.data(), x.data(), count * 4) == 0);  // values, and zeros elsewhere
  // The same through the public building blocks.
  std::vector<float> table(s.cells(), 0.0f), api_out(count, 5.0f);
  REQUIRE(scclCountSketchEncode(x.data(), count, scclFloat32, 1, bitmap.data(), 3, width, 7,
                                table.data(), nullptr) == scclSuccess);
  REQUIRE(scclCountSketchDecode(table.data(), scclFloat32, 3, width, 7, count, 1, bitmap.data(),
                                api_out.data(), nullptr) == scclSuccess);
  CHECK(std::memcmp(api_out.data(), x.data(), count * 4) == 0);
}

TEST_CASE("sketch decode is unbiased over many seeds", "[sketch][unbiased]") {
  // 64 non-zeros in 16 buckets: every estimate is polluted by about 4 colliding values. Over
  // many seeds the mean error of each element must vanish like sd / sqrt(seeds).
  const size_t count = 256, seeds = 3000;
  std::vector<float> x(count, 0.0f);
  for (size_t i = 0; i < count; i += 4) x[i] = float(int(i % 37) - 18);
  for (uint32_t rows : {1u, 3u}) {
    std::vector<double> sum(count, 0.0), sum_sq(count, 0.0);
    for (uint64_t seed = 0; seed < seeds; ++seed) {
      Sketch s(count, 4, rows, 16, seed);
      std::vector<float> out = decode(s, encode(s, x, nullptr), nullptr);
      for (size_t i = 0; i < count; i += 4) {
        const double error = double(out[i]) - double(x[i]);
        sum[i] += error;
        sum_sq[i] += error * error;
      }
    }
    double mean_abs_error = 0;
    size_t outside = 0;
    for (size_t i = 0; i < count; i += 4) {
      const double mean = sum[i] / seeds;
      const double sd = std::sqrt(std::max(0.0, sum_sq[i] / seeds - mean * mean));
      mean_abs_error += std::sqrt(sum_sq[i] / seeds) / (count / 4);
      outside += std::fabs(mean) > 5 * sd / std::sqrt(double(seeds)) ? 1 : 0;
    }
    INFO("rows " << rows << " rms error " << mean_abs_error);
    CHECK(mean_abs_error > 1.0);  // the collisions are real
    CHECK(outside == 0);
  }
}

TEST_CASE("sketch block kernels handle partial last blocks and any split", "[sketch][blocks]") {
  const sccl::KernelBackend& k = sccl::cpuKernels();
  // 10 elements in blocks of 4: [0,4) [4,8) [8,10).
  std::vector<float> x = {0, 0, 0, 0, 1, -2, 0, 0, 0, 3};
  std::vector<double> sq(3, -1);
  REQUIRE(k.blockSquaredNorms(x.data(), scclFloat32, 10, 4, sq.data(), nullptr) == scclSuccess);
  CHECK(sq == std::vector<double>{0, 5, 9});
  std::vector<uint8_t> bitmap(3, 7);
  REQUIRE(k.markNonzeroBlocks(x.data(), scclFloat32, 10, 4, bitmap.data(), nullptr) == scclSuccess);
  CHECK(bitmap == std::vector<uint8_t>{0, 1, 1});
  std::vector<float> y = x;
  REQUIRE(k.updateMarkedBlocks(y.data(), scclFloat32, 10, 4, bitmap.data(), nullptr, nullptr) ==
          scclSuccess);
  CHECK(y == std::vector<float>(10, 0.0f));
  std::vector<float> sub(10, 1.0f);
  y = x;
  REQUIRE(k.updateMarkedBlocks(y.data(), scclFloat32, 10, 4, bitmap.data(), sub.data(), nullptr) ==
          scclSuccess);
  CHECK(y == std::vector<float>{0, 0, 0, 0, 0, -3, -1, -1, -1, 2});
  // Decode writes zeros in unmarked blocks, including a partial one.
  Sketch s(10, 4, 3, 64, 1);
  std::vector<float> table = encode(s, x, bitmap.data());
  std::vector<uint8_t> only_last = {0, 0, 1};
  std::vector<float> out = decode(s, table, only_last.data());
  for (size_t i = 0; i < 8; ++i) CHECK(out[i] == 0.0f);
  // The results do not depend on how the kernels split their work.
  const size_t count = 100003;
  std::vector<float> big = integerVector(count, 5, 0.5);
  Sketch wide(count, 33, 3, 5000, 3);
  std::vector<std::vector<float>> tables, outs;
  std::vector<std::vector<double>> norms;
  for (int parts : {1, 3, 7}) {
    int previous = sccl::setKernelPartsForTesting(parts);
    tables.push_back(encode(wide, big, nullptr));
    outs.push_back(decode(wide, tables.back(), nullptr));
    norms.emplace_back(wide.shape.blocks());
    REQUIRE(k.blockSquaredNorms(big.data(), scclFloat32, count, 33, norms.back().data(), nullptr) ==
            scclSuccess);
    sccl::setKernelPartsForTesting(previous);
  }
  for (size_t p = 1; p < tables.size(); ++p) {
    CHECK(std::memcmp(tables[p].data(), tables[0].data(), tables[0].size() * 4) == 0);
    CHECK(std::memcmp(outs[p].data(), outs[0].data(), outs[0].size() * 4) == 0);
    CHECK(norms[p] == norms[0]);
  }
}

TEST_CASE("block norms are each block's squares summed in index order, bit for bit",
          "[sketch][blocks]") {
  // Values whose squares round, so that another order of the additions would show: the CUDA
  // kernel sums each block sequentially in double, and the CPU must give the same bits.
  const sccl::KernelBackend& k = sccl::cpuKernels();
  for (size_t block : {1, 7, 32, 33}) {
    for (size_t count : {block * 9 + 5, block * 64, size_t(4099)}) {
      std::vector<float> x(count);
      for (size_t i = 0; i < count; ++i)
        x[i] = float(std::sin(double(i) * 0.7 + double(block))) * (1.0f + float(i % 11) / 3.0f);
      const size_t blocks = (count + block - 1) / block;
      std::vector<double> got(blocks, -1.0), want(blocks, 0.0);
      for (int parts : {1, 3}) {
        const int previous = sccl::setKernelPartsForTesting(parts);
        REQUIRE(k.blockSquaredNorms(x.data(), scclFloat32, count, block, got.data(), nullptr) ==
                scclSuccess);
        sccl::setKernelPartsForTesting(previous);
        for (size_t b = 0; b < blocks; ++b) {
          double sum = 0;
          for (size_t i = b * block; i < std::min(count, (b + 1) * block); ++i)
            sum += double(x[i]) * double(x[i]);
          want[b] = sum;
        }
        INFO("block " << block << ", count " << count << ", parts " << parts);
        CHECK(std::memcmp(got.data(), want.data(), blocks * sizeof(double)) == 0);
      }
    }
  }
}

TEST_CASE("top blocks are the largest positive norms, ties to the lower block", "[sketch][blocks]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const double inf = INFINITY, nan = NAN;
  //                         0    1    2    3    4    5    6    7    8     9
  const std::vector<double> sq{2.0, 0.0, 5.0, 2.0, nan, 2.0, inf, 1.0, -0.0, 3.0};
  auto marked = [&](size_t keep, double* cutoff) {
    std::vector<uint8_t> marks(sq.size(), 7);
    REQUIRE(cpu.markTopBlocks(sq.data(), sq.size(), keep, marks.data(), cutoff, nullptr) ==
            scclSuccess);
    return marks;
  };
  double cutoff = -1;
  // NaN and inf tie as +inf (lower block first), then 5, 3, then the 2s by block index.
  CHECK(marked(1, &cutoff) == std::vector<uint8_t>{0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  CHECK(cutoff == inf);
  CHECK(marked(3, &cutoff) == std::vector<uint8_t>{0, 0, 1, 0, 1, 0, 1, 0, 0, 0});
  CHECK(cutoff == 5.0);
  CHECK(marked(5, &cutoff) == std::vector<uint8_t>{1, 0, 1, 0, 1, 0, 1, 0, 0, 1});
  CHECK(cutoff == 2.0);
  CHECK(marked(6, &cutoff) == std::vector<uint8_t>{1, 0, 1, 1, 1, 0, 1, 0, 0, 1});
  // More room than positive norms: every positive one, the cut-off the smallest (zeros never).
  CHECK(marked(100, &cutoff) == std::vector<uint8_t>{1, 0, 1, 1, 1, 1, 1, 1, 0, 1});
  CHECK(cutoff == 1.0);
  CHECK(marked(0, &cutoff) == std::vector<uint8_t>(sq.size(), 0));
  CHECK(cutoff == 0.0);
  REQUIRE(cpu.markTopBlocks(nullptr, 0, 3, nullptr, &cutoff, nullptr) == scclSuccess);
  CHECK(cutoff == 0.0);
  CHECK(cpu.markTopBlocks(sq.data(), sq.size(), 3, nullptr, &cutoff, nullptr) ==
        scclInvalidArgument);
}

TEST_CASE("sketch kernels in float64 and decode to 16-bit types", "[sketch][types]") {
  const sccl::KernelBackend& k = sccl::cpuKernels();
  const size_t count = 777;
  std::vector<float> xf = integerVector(count, 9, 0.7);
  std::vector<double> xd(xf.begin(), xf.end());
  Sketch s(count, 5, 3, 101, 4);
  std::vector<float> tf = encode(s, xf, nullptr);
  std::vector<double> td(s.cells(), 0.0);
  REQUIRE(k.sketchEncode(xd.data(), scclFloat64, s.shape, nullptr, td.data(), sccl::kListedUnknown,
                         nullptr) == scclSuccess);
  for (size_t c = 0; c < tf.size(); ++c) REQUIRE(double(tf[c]) == td[c]);
  std::vector<double> outd(count);
  REQUIRE(k.sketchDecode(td.data(), scclFloat64, s.shape, nullptr, 1, outd.data(), scclFloat64,
                         nullptr) == scclSuccess);
  std::vector<float> outf = decode(s, tf, nullptr);
  for (size_t i = 0; i < count; ++i) REQUIRE(double(outf[i]) == outd[i]);
  // Integers below 256 are exact in bfloat16 and float16; the divisor divides before rounding.
  std::vector<uint16_t> half(count), bf(count);
  REQUIRE(k.sketchDecode(tf.data(), scclFloat32, s.shape, nullptr, 1, half.data(), scclFloat16,
                         nullptr) == scclSuccess);
  REQUIRE(k.sketchDecode(tf.data(), scclFloat32, s.shape, nullptr, 1, bf.data(), scclBfloat16,
                         nullptr) == scclSuccess);
  std::vector<float> quarter(count);
  REQUIRE(k.sketchDecode(tf.data(), scclFloat32, s.shape, nullptr, 4, quarter.data(), scclFloat32,
                         nullptr) == scclSuccess);
  for (size_t i = 0; i < count; ++i) {
    REQUIRE(sccl::fp16ToFloat(half[i]) == outf[i]);
    REQUIRE(sccl::bf16ToFloat(bf[i]) == outf[i]);
    REQUIRE(quarter[i] == outf[i] / 4.0f);
  }
  CHECK(k.sketchDecode(td.data(), scclFloat64, s.shape, nullptr, 1, outf.data(), scclFloat32,
                       nullptr) == scclInvalidArgument);
  CHECK(k.sketchEncode(half.data(), scclFloat16, s.shape, nullptr, tf.data(), sccl::kListedUnknown,
                       nullptr) == scclInvalidArgument);
}

TEST_CASE("count sketch API rejects bad arguments without side effects", "[sketch][api]") {
  std::vector<float> x = {1, 0, 2, 0, 0, 0, 3};
  std::vector<float> table(3 * 8, 0.0f), out(7, -1.0f);
  std::vector<uint8_t> bitmap(3, 9);
  auto rejects = [&](scclResult_t result, const char* words) {
    INFO(scclGetLastError(nullptr));
    CHECK(result == scclInvalidArgument);
    CHECK(std::string(scclGetLastError(nullptr)).find(words) != std::string::npos);
  };
  rejects(
      scclCountSketchEncode(nullptr, 7, scclFloat32, 3, nullptr, 3, 8, 0, table.data(), nullptr),
      "values is NULL");
  rejects(scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 3, 8, 0, nullptr, nullptr),
          "table is NULL");
  rejects(
      scclCountSketchEncode(x.data(), 7, scclFloat16, 3, nullptr, 3, 8, 0, table.data(), nullptr),
      "float32 or float64");
  rejects(scclCountSketchEncode(x.data(), 7, scclDataType_t(77), 3, nullptr, 3, 8, 0, table.data(),
                                nullptr),
          "unknown data type");
  rejects(
      scclCountSketchEncode(x.data(), 7, scclFloat32, 0, nullptr, 3, 8, 0, table.data(), nullptr),
      "blockSize");
  rejects(
      scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 0, 8, 0, table.data(), nullptr),
      "rows 0");
  rejects(
      scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 17, 8, 0, table.data(), nullptr),
      "rows 17");
  rejects(
      scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 3, 0, 0, table.data(), nullptr),
      "width 0");
  rejects(scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 3, size_t{1} << 33, 0,
                                table.data(), nullptr),
          "width");
  rejects(scclCountSketchEncode(x.data(), SIZE_MAX, scclFloat32, 3, nullptr, 3, 8, 0, table.data(),
                                nullptr),
          "overflows");
  int not_a_stream = 0;
  rejects(scclCountSketchEncode(x.data(), 7, scclFloat32, 3, nullptr, 3, 8, 0, table.data(),
                                &not_a_stream),
          "stream must be NULL");
  rejects(
      scclCountSketchDecode(table.data(), scclFloat32, 3, 8, 0, 7, 3, nullptr, nullptr, nullptr),
      "out is NULL");
  rejects(scclCountSketchDecode(nullptr, scclFloat32, 3, 8, 0, 7, 3, nullptr, out.data(), nullptr),
          "table is NULL");
  rejects(scclCountSketchMarkBlocks(x.data(), 7, scclFloat32, 3, nullptr, nullptr),
          "bitmap is NULL");
  CHECK(table == std::vector<float>(3 * 8, 0.0f));  // nothing was written
  CHECK(out == std::vector<float>(7, -1.0f));
  CHECK(bitmap == std::vector<uint8_t>(3, 9));
  // The valid calls: blocks {0,1,2}, {3,4,5}, {6}.
  REQUIRE(scclCountSketchMarkBlocks(x.data(), 7, scclFloat32, 3, bitmap.data(), nullptr) ==
          scclSuccess);
  CHECK(bitmap == std::vector<uint8_t>{1, 0, 1});
  REQUIRE(scclCountSketchEncode(x.data(), 7, scclFloat32, 3, bitmap.data(), 3, 8, 0, table.data(),
                                nullptr) == scclSuccess);
  REQUIRE(scclCountSketchDecode(table.data(), scclFloat32, 3, 8, 0, 7, 3, bitmap.data(), out.data(),
                                nullptr) == scclSuccess);
  CHECK(out[3] == 0.0f);
  CHECK(out[4] == 0.0f);
  CHECK(out[5] == 0.0f);
  // Empty vectors are fine (nothing to read or write).
  CHECK(scclCountSketchMarkBlocks(nullptr, 0, scclFloat32, 3, nullptr, nullptr) == scclSuccess);
}
