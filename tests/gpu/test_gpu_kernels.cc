// The CUDA backend against the CPU backend, bit for bit, on the same inputs (selection:
// test_gpu_select.cc): accumulate, the indexed kernels, the count-sketch kernels, k-th largest
// and the histogram; moments within rounding (CUB's reduction tree differs from the
// CPU's fixed order, docs/gpu.md). Both backends write NaN results as the canonical NaN
// (kernels/shared/canonical_nan.h), so the NaN inputs compare bit for bit too; a mismatch is
// reported as a count and the first few elements (bit_mismatch.h), never whole vectors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "bit_mismatch.h"
#include "kernels/shared/half.h"
#include "kernels/shared/magnitude_bits.h"
#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "gpu_elements.h"
#include "kernels/kernels.h"

using sccl_gpu_test::DeviceBuffer;

using sccl_gpu_test::elements;
using sccl_gpu_test::gpu;
using sccl_gpu_test::laplace;

// A window wider than the shared-memory counters (12288) takes the global-atomic histogram.
TEST_CASE("gpu histogram wider than shared memory equals the cpu one", "[gpu][moments]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 300007, bins = 20000;
  const std::vector<uint8_t> data = elements(scclFloat32, n, 23, true);
  DeviceBuffer<uint8_t> x(data);
  const uint64_t base = 0x3c000000ull;
  const unsigned shift = 10;
  std::vector<uint64_t> want_counts(bins + 1);
  REQUIRE(cpu.absBitHistogram(data.data(), scclFloat32, 5, n, base, shift, bins,
                              want_counts.data(), nullptr) == scclSuccess);
  DeviceBuffer<uint64_t> counts(bins + 1);
  REQUIRE(gpu().absBitHistogram(x.get(), scclFloat32, 5, n, base, shift, bins, counts.get(),
                                nullptr) == scclSuccess);
  CHECK_BITS("histogram", want_counts, counts.read());
}

TEST_CASE("gpu accumulate and indexed kernels equal the cpu ones bit for bit", "[gpu][indexed]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 50021;
  for (scclDataType_t grad_dtype : {scclFloat32, scclFloat16, scclBfloat16, scclFloat64}) {
    const scclDataType_t acc_dtype = grad_dtype == scclFloat64 ? scclFloat64 : scclFloat32;
    const size_t acc_width = acc_dtype == scclFloat64 ? 8 : 4;
    std::vector<uint8_t> grad = elements(grad_dtype, n, 5);
    std::vector<uint8_t> residual = elements(acc_dtype, n, 6);
    for (bool with_residual : {false, true}) {
      INFO("grad dtype " << grad_dtype << " residual " << with_residual);
      std::vector<uint8_t> want(n * acc_width);
      uint64_t want_bad = 0;
      REQUIRE(cpu.accumulate(want.data(), with_residual ? residual.data() : nullptr, acc_dtype,
                             grad.data(), grad_dtype, n, &want_bad, nullptr) == scclSuccess);
      DeviceBuffer<uint8_t> g(grad), r(residual), acc(n * acc_width);
      DeviceBuffer<uint64_t> bad(1);
      REQUIRE(gpu().accumulate(acc.get(), with_residual ? r.get() : nullptr, acc_dtype, g.get(),
                               grad_dtype, n, bad.get(), nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("accumulate", acc_width, want, acc.read());
      CHECK(bad.read()[0] == want_bad);

      // gather, zeroAt and scatterValues (with and without scale) on every 3rd index.
      std::vector<int64_t> idx;
      for (size_t i = 1; i < n; i += 3) idx.push_back(int64_t(i));
      DeviceBuffer<int64_t> d_idx(idx);
      std::vector<uint8_t> want_gathered(idx.size() * acc_width);
      REQUIRE(cpu.gather(want.data(), acc_dtype, idx.data(), idx.size(), want_gathered.data(),
                         nullptr) == scclSuccess);
      DeviceBuffer<uint8_t> gathered(idx.size() * acc_width);
      REQUIRE(gpu().gather(acc.get(), acc_dtype, d_idx.get(), idx.size(), gathered.get(),
                           nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("gather", acc_width, want_gathered, gathered.read());
      for (double scale : {1.0, 0.25, 1.0 / 3.0}) {
        const size_t out_width = grad_dtype == scclFloat64 ? 8 : grad_dtype == scclFloat32 ? 4 : 2;
        std::vector<uint8_t> want_out(n * out_width, 0);
        REQUIRE(cpu.scatterValues(want_out.data(), grad_dtype, idx.data(), want_gathered.data(),
                                  acc_dtype, idx.size(), scale, nullptr) == scclSuccess);
        DeviceBuffer<uint8_t> out(n * out_width);
        REQUIRE(gpu().scatterValues(out.get(), grad_dtype, d_idx.get(), gathered.get(), acc_dtype,
                                    idx.size(), scale, nullptr) == scclSuccess);
        CHECK_BITS_OF_WIDTH("scatterValues", out_width, want_out, out.read());
      }
      REQUIRE(cpu.zeroAt(want.data(), acc_dtype, idx.data(), idx.size(), nullptr) == scclSuccess);
      REQUIRE(gpu().zeroAt(acc.get(), acc_dtype, d_idx.get(), idx.size(), nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("zeroAt", acc_width, want, acc.read());
    }
  }
}

TEST_CASE("gpu count sketch kernels equal the cpu ones bit for bit", "[gpu][sketch]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    for (uint32_t rows : {1u, 3u, 4u}) {
      const size_t n = 40009, width_bytes = dtype == scclFloat64 ? 8 : 4;
      std::vector<uint8_t> data = elements(dtype, n, 9, true);
      std::vector<uint64_t> keys(rows);
      for (uint32_t j = 0; j < rows; ++j) keys[j] = sccl::sketchRowKey(42, j);
      sccl::SketchShape shape;
      shape.count = n;
      shape.block = 7;
      shape.rows = rows;
      shape.width = 1531;
      shape.row_keys = keys.data();
      const size_t blocks = shape.blocks();
      INFO("dtype " << dtype << " rows " << rows);
      DeviceBuffer<uint8_t> x(data);

      std::vector<uint8_t> want_bitmap(blocks);
      REQUIRE(cpu.markNonzeroBlocks(data.data(), dtype, n, shape.block, want_bitmap.data(),
                                    nullptr) == scclSuccess);
      for (size_t b = 0; b < blocks; b += 3) want_bitmap[b] = 0;  // some unmarked blocks
      DeviceBuffer<uint8_t> bitmap(want_bitmap);
      DeviceBuffer<uint8_t> got_bitmap(blocks);
      REQUIRE(gpu().markNonzeroBlocks(x.get(), dtype, n, shape.block, got_bitmap.get(), nullptr) ==
              scclSuccess);
      std::vector<uint8_t> plain_bitmap(blocks);
      REQUIRE(cpu.markNonzeroBlocks(data.data(), dtype, n, shape.block, plain_bitmap.data(),
                                    nullptr) == scclSuccess);
      CHECK_BITS("bitmap", plain_bitmap, got_bitmap.read());

      std::vector<double> want_sq(blocks);
      REQUIRE(cpu.blockSquaredNorms(data.data(), dtype, n, shape.block, want_sq.data(), nullptr) ==
              scclSuccess);
      DeviceBuffer<double> sq(blocks);
      REQUIRE(gpu().blockSquaredNorms(x.get(), dtype, n, shape.block, sq.get(), nullptr) ==
              scclSuccess);
      CHECK_BITS("block norms", want_sq, sq.read());

      std::vector<uint8_t> want_table(rows * shape.width * width_bytes, 0);
      REQUIRE(cpu.sketchEncode(data.data(), dtype, shape, want_bitmap.data(), want_table.data(),
                               sccl::kListedUnknown, nullptr) == scclSuccess);
      DeviceBuffer<uint8_t> table(rows * shape.width * width_bytes);
      REQUIRE(gpu().sketchEncode(x.get(), dtype, shape, bitmap.get(), table.get(),
                                 sccl::kListedUnknown, nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("encoded table", width_bytes, want_table, table.read());
      // Bounded by the marked blocks' elements (what the S2 call passes) and by the count: the
      // padded sort, nothing read back, the same table.
      size_t marked = 0;
      for (size_t b = 0; b < blocks; ++b)
        if (want_bitmap[b] != 0) marked += std::min(shape.block, n - b * shape.block);
      for (size_t bound : {marked, n}) {
        INFO("listed bound " << bound);
        DeviceBuffer<uint8_t> bounded(rows * shape.width * width_bytes);
        REQUIRE(gpu().sketchEncode(x.get(), dtype, shape, bitmap.get(), bounded.get(), bound,
                                   nullptr) == scclSuccess);
        CHECK_BITS_OF_WIDTH("bounded encode", width_bytes, want_table, bounded.read());
      }

      for (uint32_t divisor : {1u, 3u}) {
        std::vector<uint8_t> want_out(n * width_bytes);
        REQUIRE(cpu.sketchDecode(want_table.data(), dtype, shape, want_bitmap.data(), divisor,
                                 want_out.data(), dtype, nullptr) == scclSuccess);
        DeviceBuffer<uint8_t> out(n * width_bytes);
        REQUIRE(gpu().sketchDecode(table.get(), dtype, shape, bitmap.get(), divisor, out.get(),
                                   dtype, nullptr) == scclSuccess);
        CHECK_BITS_OF_WIDTH("decode", width_bytes, want_out, out.read());
      }
      std::vector<uint8_t> want_x = data;
      REQUIRE(cpu.updateMarkedBlocks(want_x.data(), dtype, n, shape.block, want_bitmap.data(),
                                     nullptr, nullptr) == scclSuccess);
      REQUIRE(gpu().updateMarkedBlocks(x.get(), dtype, n, shape.block, bitmap.get(), nullptr,
                                       nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("updateMarkedBlocks", width_bytes, want_x, x.read());
    }
  }
}

// S2's block selection: squared norms on a coarse grid (many ties), zeros, NaN and inf.
TEST_CASE("gpu top blocks equal the cpu ones bit for bit", "[gpu][sketch]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  for (size_t blocks : {size_t(100003), size_t(812500)}) {
    std::vector<double> sq(blocks);
    for (size_t b = 0; b < blocks; ++b) {
      const double v = std::round(laplace(31, b) * 4.0) / 4.0;
      sq[b] = v * v;
      if (b % 1009 == 3) sq[b] = NAN;
      if (b % 2003 == 5) sq[b] = INFINITY;
    }
    DeviceBuffer<double> d_sq(sq);
    for (size_t keep : {size_t(0), size_t(1), size_t(17), size_t(813), size_t(25000), blocks}) {
      INFO("blocks " << blocks << " keep " << keep);
      std::vector<uint8_t> want(blocks);
      double want_cutoff = -1;
      REQUIRE(cpu.markTopBlocks(sq.data(), blocks, keep, want.data(), &want_cutoff, nullptr) ==
              scclSuccess);
      DeviceBuffer<uint8_t> marks(std::vector<uint8_t>(blocks, 9));
      DeviceBuffer<double> got_cutoff(std::vector<double>{-1.0});  // the kernels' memory
      REQUIRE(gpu().markTopBlocks(d_sq.get(), blocks, keep, marks.get(), got_cutoff.get(),
                                  nullptr) == scclSuccess);
      CHECK_BITS("marked blocks", want, marks.read());
      CHECK_BITS("cut-off", std::vector<double>{want_cutoff}, got_cutoff.read());
    }
  }
}

TEST_CASE("gpu kth largest and histogram equal the cpu ones and moments agree", "[gpu][moments]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    const size_t n = 65537;
    std::vector<uint8_t> data = elements(dtype, n, 13, true);
    DeviceBuffer<uint8_t> x(data);
    for (uint64_t k : {uint64_t(1), uint64_t(100), uint64_t(5000), uint64_t(n - 10)}) {
      double want = 0, got = 0;
      REQUIRE(cpu.kthLargestAbs(data.data(), dtype, 10, n, k, &want, nullptr) == scclSuccess);
      REQUIRE(gpu().kthLargestAbs(x.get(), dtype, 10, n, k, &got, nullptr) == scclSuccess);
      CHECK_BITS("k-th largest", std::vector<double>{want}, std::vector<double>{got});
    }
    const size_t bins = 300;
    const uint64_t base = dtype == scclFloat64 ? 0x3fb0000000000000ull : 0x3d800000ull;
    const unsigned shift = dtype == scclFloat64 ? 44 : 15;
    std::vector<uint64_t> want_counts(bins + 1);
    REQUIRE(cpu.absBitHistogram(data.data(), dtype, 3, n, base, shift, bins, want_counts.data(),
                                nullptr) == scclSuccess);
    DeviceBuffer<uint64_t> counts(bins + 1);
    REQUIRE(gpu().absBitHistogram(x.get(), dtype, 3, n, base, shift, bins, counts.get(), nullptr) ==
            scclSuccess);
    CHECK_BITS("histogram", want_counts, counts.read());

    sccl::AbsMoments want_m, got_m;
    REQUIRE(cpu.absMoments(data.data(), dtype, 0, n, 0.5, true, &want_m, nullptr) == scclSuccess);
    REQUIRE(gpu().absMoments(x.get(), dtype, 0, n, 0.5, true, &got_m, nullptr) == scclSuccess);
    CHECK(got_m.count == want_m.count);
    CHECK(got_m.nan_count == want_m.nan_count);
    CHECK(got_m.zero_count == want_m.zero_count);
    CHECK(got_m.max_abs == want_m.max_abs);
    CHECK(got_m.min_abs == want_m.min_abs);
    CHECK(got_m.sum_abs == Approx(want_m.sum_abs).epsilon(1e-12));
    CHECK(got_m.sum_sq == Approx(want_m.sum_sq).epsilon(1e-12));
    CHECK(got_m.sum_log == Approx(want_m.sum_log).epsilon(1e-12));
  }
}

namespace {

// The buffers of one accumulateSelect call (host for the CPU backend, device for the GPU one).
struct FusedPassBuffers {
  void* acc;
  const void* residual;
  const void* grad;
  uint64_t* nonfinite;
  int64_t* idx;
  void* val;
  size_t* ncandidates;
  uint64_t* counts;
  void* out;
};

sccl::AccumulateSelectArgs withBuffers(sccl::AccumulateSelectArgs args, const FusedPassBuffers& b) {
  args.acc = b.acc;
  args.residual = b.residual;
  args.grad = b.grad;
  args.nonfinite = b.nonfinite;
  args.idx = b.idx;
  args.val = b.val;
  args.ncandidates = b.ncandidates;
  args.counts = b.counts;
  args.out = b.out;
  return args;
}

}  // namespace

TEST_CASE("gpu fused pass, gatherAndZero and writeDense equal the cpu ones bit for bit",
          "[gpu][fused]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 70001, begin = 1234, end = 60001;
  for (scclDataType_t grad_dtype : {scclFloat32, scclFloat16, scclBfloat16, scclFloat64}) {
    const scclDataType_t acc_dtype = grad_dtype == scclFloat64 ? scclFloat64 : scclFloat32;
    const size_t acc_width = acc_dtype == scclFloat64 ? 8 : 4;
    const size_t grad_width = grad_dtype == scclFloat64 ? 8 : grad_dtype == scclFloat32 ? 4 : 2;
    const std::vector<uint8_t> grad = elements(grad_dtype, n, 15);
    const std::vector<uint8_t> residual = elements(acc_dtype, n, 16);
    // The density correction's window around 2.0 (64 bins per octave, one octave each side)
    // and its floor edge as the candidates' floor.
    const unsigned mantissa = acc_dtype == scclFloat64 ? 52 : 23;
    const unsigned shift = mantissa - 6;
    const size_t bins = 128;
    const uint64_t centre = sccl::thresholdBits(acc_dtype, 2.0);
    const uint64_t base = (centre - (uint64_t{1} << mantissa)) >> shift << shift;
    double floor_value = 0;
    if (acc_dtype == scclFloat64) {
      std::memcpy(&floor_value, &base, 8);
    } else {
      floor_value = sccl::bitsToFloat(uint32_t(base));
    }
    const size_t capacity = end - begin;
    INFO("grad dtype " << grad_dtype);

    sccl::AccumulateSelectArgs a;
    a.residual = nullptr;
    a.acc_dtype = acc_dtype;
    a.grad_dtype = grad_dtype;
    a.count = n;
    a.begin = begin;
    a.end = end;
    a.floor = floor_value;
    a.capacity = capacity;
    a.base_bits = base;
    a.shift = shift;
    a.bins = bins;
    a.out_dtype = grad_dtype;

    std::vector<uint8_t> want_acc(n * acc_width), want_val(capacity * acc_width),
        want_out(n * grad_width, 0x5a);
    std::vector<int64_t> want_idx(capacity);
    std::vector<uint64_t> want_counts(bins + 1);
    uint64_t want_bad = 0;
    size_t want_n = 0;
    REQUIRE(cpu.accumulateSelect(withBuffers(a, {want_acc.data(), residual.data(), grad.data(),
                                                  &want_bad, want_idx.data(), want_val.data(),
                                                  &want_n, want_counts.data(), want_out.data()}),
                                 nullptr) == scclSuccess);

    DeviceBuffer<uint8_t> g(grad), r(residual), acc(n * acc_width), val(capacity * acc_width),
        out(std::vector<uint8_t>(n * grad_width, 0x5a));
    DeviceBuffer<int64_t> idx(capacity);
    DeviceBuffer<uint64_t> bad(1), counts(bins + 1);
    size_t got_n = 0;
    REQUIRE(gpu().accumulateSelect(withBuffers(a, {acc.get(), r.get(), g.get(), bad.get(),
                                                    idx.get(), val.get(), &got_n, counts.get(),
                                                    out.get()}),
                                   nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("accumulateSelect acc", acc_width, want_acc, acc.read());
    CHECK(bad.read()[0] == want_bad);
    REQUIRE(got_n == want_n);
    std::vector<int64_t> got_idx = idx.read();
    got_idx.resize(std::min(got_n, capacity));
    want_idx.resize(std::min(want_n, capacity));
    CHECK(got_idx == want_idx);
    std::vector<uint8_t> got_val = val.read();
    got_val.resize(std::min(got_n, capacity) * acc_width);
    want_val.resize(std::min(want_n, capacity) * acc_width);
    CHECK_BITS_OF_WIDTH("accumulateSelect values", acc_width, want_val, got_val);
    CHECK(counts.read() == want_counts);
    CHECK_BITS_OF_WIDTH("accumulateSelect output", grad_width, want_out, out.read());

    // gatherAndZero and writeDense on the selected indices.
    DeviceBuffer<int64_t> d_sel(want_idx);
    std::vector<uint8_t> want_gathered(want_idx.size() * acc_width);
    REQUIRE(cpu.gatherAndZero(want_acc.data(), acc_dtype, want_idx.data(), want_idx.size(),
                              want_gathered.data(), nullptr) == scclSuccess);
    DeviceBuffer<uint8_t> gathered(want_idx.size() * acc_width);
    REQUIRE(gpu().gatherAndZero(acc.get(), acc_dtype, d_sel.get(), want_idx.size(), gathered.get(),
                                nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("gatherAndZero values", acc_width, want_gathered, gathered.read());
    CHECK_BITS_OF_WIDTH("gatherAndZero residual", acc_width, want_acc, acc.read());
    for (double scale : {1.0, 0.25}) {
      std::vector<uint8_t> want_dense(n * grad_width, 0x77);
      REQUIRE(cpu.writeDense(want_dense.data(), grad_dtype, n, want_idx.data(),
                             want_gathered.data(), acc_dtype, want_idx.size(), scale,
                             nullptr) == scclSuccess);
      DeviceBuffer<uint8_t> dense(std::vector<uint8_t>(n * grad_width, 0x77));
      REQUIRE(gpu().writeDense(dense.get(), grad_dtype, n, d_sel.get(), gathered.get(), acc_dtype,
                               want_idx.size(), scale, nullptr) == scclSuccess);
      CHECK_BITS_OF_WIDTH("writeDense", grad_width, want_dense, dense.read());
    }
  }
}
