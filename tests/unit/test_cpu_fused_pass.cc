// The CPU fused pass (KernelBackend::accumulateSelect) against its definition: accumulate(), then
// absBitHistogram() and selectAbove() on the accumulated range, called one after the other. Every
// output must match bit for bit on every instruction set and split into parts, with NaN,
// infinities, subnormals, a range that starts and ends anywhere, a capacity that cuts the
// candidates, in-place accumulation and the histogram-only and accumulate-only forms.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/shared/magnitude_bits.h"
#include "unit/cpu_kernel_test_data.h"

namespace {

using cpu_kernel_test::KernelSettingsGuard;
using cpu_kernel_test::kPartCounts;
using cpu_kernel_test::makeData;
using cpu_kernel_test::supportedIsas;
using Bytes = std::vector<unsigned char>;

struct Pair {
  scclDataType_t acc, grad;
};
constexpr Pair kPairs[] = {{scclFloat32, scclFloat32},
                           {scclFloat32, scclFloat16},
                           {scclFloat32, scclBfloat16},
                           {scclFloat64, scclFloat64}};

// What one call produced.
struct PassOutput {
  Bytes acc;
  Bytes out;  // the output buffer after the call (empty without one)
  uint64_t nonfinite = 0;
  std::vector<uint64_t> counts;
  std::vector<int64_t> idx;
  Bytes val;
  size_t ncandidates = 0;
  bool operator==(const PassOutput&) const = default;
};

struct PassCase {
  Pair pair;
  size_t count = 0, begin = 0, end = 0;
  double floor = 0;
  bool candidates = true;  // idx given
  size_t capacity = 0;
  size_t bins = 0;  // 0: no histogram
  unsigned shift = 0;
  uint64_t base_bits = 0;
  bool in_place = false;
  bool residual = true;
  // 0: no output; 1: a separate output zeroed by the pass; 2: the output is the gradient.
  int output = 0;
};

// The window of the density correction around `centre` (kernels.h: base on a bin edge).
void setWindow(PassCase& c, double centre) {
  const unsigned mantissa = c.pair.acc == scclFloat64 ? 52 : 23;
  c.shift = mantissa - 6;  // 64 bins per octave
  c.bins = 128;            // one octave each side
  const uint64_t bits = sccl::thresholdBits(c.pair.acc, centre);
  const uint64_t octave = uint64_t{1} << mantissa;
  c.base_bits = (bits - octave) >> c.shift << c.shift;
}

double edgeValue(scclDataType_t dtype, uint64_t bits) {
  if (dtype == scclFloat64) {
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  const uint32_t narrow = static_cast<uint32_t>(bits);
  float v;
  std::memcpy(&v, &narrow, 4);
  return v;
}

// The definition: three kernel calls.
PassOutput separatePasses(const PassCase& c, const Bytes& residual, const Bytes& grad_in) {
  const sccl::KernelBackend& k = sccl::cpuKernels();
  const size_t width = sccl::dataTypeSize(c.pair.acc);
  Bytes grad = grad_in;
  PassOutput out;
  out.acc = c.in_place ? residual : Bytes(c.count * width, 0xab);
  const void* res = c.residual ? (c.in_place ? out.acc.data() : residual.data()) : nullptr;
  REQUIRE(k.accumulate(out.acc.data(), res, c.pair.acc, grad.data(), c.pair.grad, c.count,
                       &out.nonfinite, nullptr) == scclSuccess);
  if (c.output != 0) {
    out.out = c.output == 2 ? grad : Bytes(grad.size(), 0x77);
    REQUIRE(k.fillZero(out.out.data(), out.out.size(), nullptr) == scclSuccess);
  }
  if (c.bins > 0) {
    out.counts.assign(c.bins + 1, 0);
    if (c.begin < c.end) {
      REQUIRE(k.absBitHistogram(out.acc.data(), c.pair.acc, c.begin, c.end, c.base_bits, c.shift,
                                c.bins, out.counts.data(), nullptr) == scclSuccess);
    }
  }
  if (c.candidates) {
    out.idx.assign(c.capacity + 1, -7);  // one more than the capacity: never written
    out.val.assign((c.capacity + 1) * width, 0xcd);
    if (c.begin < c.end) {
      REQUIRE(k.selectAbove(out.acc.data(), c.pair.acc, c.begin, c.end, c.floor, out.idx.data(),
                            out.val.data(), c.capacity, &out.ncandidates, nullptr) == scclSuccess);
    }
  }
  return out;
}

// aligned: the accumulator at a 64-byte boundary (the AVX-512 loop's streaming stores), else
// wherever the vector puts it.
PassOutput fusedPass(const PassCase& c, const Bytes& residual, const Bytes& grad_in, bool aligned) {
  const size_t width = sccl::dataTypeSize(c.pair.acc);
  Bytes grad = grad_in;
  PassOutput out;
  if (c.output == 1) out.out.assign(grad.size(), 0x77);
  out.acc = c.in_place ? residual : Bytes(c.count * width, 0xab);
  sccl::AlignedBuffer aligned_acc(c.count * width), aligned_grad(grad.size()),
      aligned_out(grad.size());
  unsigned char* acc = out.acc.data();
  unsigned char* grad_at = grad.data();
  unsigned char* out_at = out.out.data();
  if (aligned) {  // accumulator, gradient and output at 64-byte boundaries
    std::memcpy(aligned_acc.data(), out.acc.data(), out.acc.size());
    acc = static_cast<unsigned char*>(aligned_acc.data());
    std::memcpy(aligned_grad.data(), grad.data(), grad.size());
    grad_at = static_cast<unsigned char*>(aligned_grad.data());
    if (c.output == 1) {
      std::memcpy(aligned_out.data(), out.out.data(), out.out.size());
      out_at = static_cast<unsigned char*>(aligned_out.data());
    }
  }
  sccl::AccumulateSelectArgs a;
  a.acc = acc;
  a.residual = c.residual ? (c.in_place ? acc : residual.data()) : nullptr;
  a.acc_dtype = c.pair.acc;
  a.grad = grad_at;
  a.grad_dtype = c.pair.grad;
  a.count = c.count;
  a.nonfinite = &out.nonfinite;
  if (c.output != 0) {
    a.out = c.output == 2 ? grad_at : out_at;
    a.out_dtype = c.pair.grad;
  }
  a.begin = c.begin;
  a.end = c.end;
  a.floor = c.floor;
  if (c.candidates) {
    out.idx.assign(c.capacity + 1, -7);  // one more than the capacity: never written
    out.val.assign((c.capacity + 1) * width, 0xcd);
    a.idx = out.idx.data();
    a.val = out.val.data();
    a.capacity = c.capacity;
    a.ncandidates = &out.ncandidates;
  }
  if (c.bins > 0) {
    out.counts.assign(c.bins + 1, 99);
    a.bins = c.bins;
    a.shift = c.shift;
    a.base_bits = c.base_bits;
    a.counts = out.counts.data();
  }
  REQUIRE(sccl::cpuKernels().accumulateSelect(a, nullptr) == scclSuccess);
  if (aligned) {
    std::memcpy(out.acc.data(), acc, out.acc.size());
    std::memcpy(grad.data(), grad_at, grad.size());
    if (c.output == 1) std::memcpy(out.out.data(), out_at, out.out.size());
  }
  if (c.candidates) CHECK(out.idx[c.capacity] == -7);  // nothing written past the capacity
  if (c.output == 2) out.out = grad;
  return out;
}

// Entries past min(n, capacity) are unspecified (selectAbove may leave scratch there): keep the
// written ones only.
void keepWritten(PassOutput& out, size_t width) {
  const size_t n = std::min(out.ncandidates, out.idx.empty() ? 0 : out.idx.size() - 1);
  out.idx.resize(std::min(out.idx.size(), n));
  out.val.resize(std::min(out.val.size(), n * width));
}

// The first difference, for a short failure message.
std::string firstDifference(const PassOutput& want, const PassOutput& got) {
  if (want.acc != got.acc) return "acc";
  if (want.out != got.out) return "output";
  if (want.nonfinite != got.nonfinite) return "nonfinite";
  if (want.ncandidates != got.ncandidates) {
    return "ncandidates " + std::to_string(want.ncandidates) + " vs " +
           std::to_string(got.ncandidates);
  }
  if (want.counts != got.counts) return "histogram";
  if (want.idx != got.idx) return "indices";
  if (want.val != got.val) return "values";
  return "";
}

void checkCase(const PassCase& c, uint64_t seed) {
  const Bytes residual = makeData(c.pair.acc, c.count, seed);
  const Bytes grad = makeData(c.pair.grad, c.count, seed + 1);
  KernelSettingsGuard guard;
  sccl::setCpuIsaForTesting(sccl::CpuIsa::Scalar);
  sccl::setKernelPartsForTesting(1);
  const size_t width = sccl::dataTypeSize(c.pair.acc);
  PassOutput want = separatePasses(c, residual, grad);
  keepWritten(want, width);
  for (sccl::CpuIsa isa : supportedIsas()) {
    sccl::setCpuIsaForTesting(isa);
    for (int parts : kPartCounts) {
      sccl::setKernelPartsForTesting(parts);
      for (bool aligned : {false, true}) {
        PassOutput got = fusedPass(c, residual, grad, aligned);
        keepWritten(got, width);
        INFO("accumulator " << (aligned ? "64-byte aligned" : "as allocated") << ", "
                            << sccl::dataTypeName(c.pair.acc) << " + "
                            << sccl::dataTypeName(c.pair.grad) << ", " << sccl::cpuIsaName(isa)
                            << ", " << parts << " parts, range [" << c.begin << ", " << c.end
                            << "), capacity " << c.capacity << ": first difference "
                            << firstDifference(want, got));
        CHECK(got == want);
      }
    }
  }
}

}  // namespace

TEST_CASE("cpu fused pass: candidates and histogram equal the separate passes bit for bit",
          "[kernels][fused]") {
  for (const Pair pair : kPairs) {
    PassCase c;
    c.pair = pair;
    c.count = 200003;  // several blocks and parts, with tails
    c.begin = 1234;
    c.end = 170001;
    setWindow(c, 3.0);
    c.floor = edgeValue(pair.acc, c.base_bits);  // the density correction's floor
    c.capacity = c.end - c.begin;
    checkCase(c, 11);
  }
}

TEST_CASE("cpu fused pass: a capacity that cuts the candidates keeps the first and counts all",
          "[kernels][fused]") {
  for (const Pair pair : kPairs) {
    PassCase c;
    c.pair = pair;
    c.count = 150000;
    c.begin = 0;
    c.end = c.count;
    setWindow(c, 2.0);
    c.floor = edgeValue(pair.acc, c.base_bits) * 0.5;  // below the base: candidates not binned
    for (size_t capacity : {size_t{0}, size_t{1}, size_t{777}, size_t{40000}}) {
      c.capacity = capacity;
      checkCase(c, 23);
    }
  }
}

TEST_CASE("cpu fused pass: in place, without residual, without candidates or histogram",
          "[kernels][fused]") {
  for (const Pair pair : kPairs) {
    PassCase c;
    c.pair = pair;
    c.count = 140001;
    c.begin = 70000;
    c.end = 140001;
    c.floor = 1.5;
    c.capacity = c.count;
    SECTION("in place") {
      c.in_place = true;
      c.residual = true;
      checkCase(c, 31);
    }
    SECTION("the output zeroed in the pass, separate or the gradient itself") {
      setWindow(c, 1.0);
      c.floor = edgeValue(pair.acc, c.base_bits);
      c.output = 1;
      checkCase(c, 53);
      c.output = 2;
      checkCase(c, 59);
    }
    SECTION("no residual") {
      c.residual = false;
      checkCase(c, 37);
    }
    SECTION("histogram only") {
      c.candidates = false;
      setWindow(c, 1.0);
      checkCase(c, 41);
    }
    SECTION("accumulate only: empty range") {
      c.begin = c.end = 5000;
      setWindow(c, 1.0);
      c.floor = edgeValue(pair.acc, c.base_bits);
      checkCase(c, 43);
    }
    SECTION("small vector: one part inline") {
      c.count = 1000;
      c.begin = 3;
      c.end = 999;
      c.capacity = 1000;
      setWindow(c, 0.5);
      c.floor = edgeValue(pair.acc, c.base_bits);
      checkCase(c, 47);
    }
  }
}

TEST_CASE("cpu fused pass: refuses a floor above the histogram's base and a bad range",
          "[kernels][fused]") {
  std::vector<float> acc(100), grad(100, 1.0f);
  std::vector<int64_t> idx(100);
  std::vector<uint64_t> counts(9);
  size_t n = 0;
  sccl::AccumulateSelectArgs a;
  a.acc = acc.data();
  a.grad = grad.data();
  a.count = 100;
  a.begin = 0;
  a.end = 100;
  a.idx = idx.data();
  a.capacity = 100;
  a.ncandidates = &n;
  a.bins = 8;
  a.shift = 20;
  a.counts = counts.data();
  a.base_bits = sccl::thresholdBits(scclFloat32, 1.0);
  a.floor = 2.0;
  CHECK(sccl::cpuKernels().accumulateSelect(a, nullptr) == scclInvalidArgument);
  a.floor = 1.0;
  a.end = 101;
  CHECK(sccl::cpuKernels().accumulateSelect(a, nullptr) == scclInvalidArgument);
  a.end = 100;
  REQUIRE(sccl::cpuKernels().accumulateSelect(a, nullptr) == scclSuccess);
  CHECK(n == 100);
  CHECK(counts[0] == 100);
}

namespace {

// Distinct indices below `count` as `runs` ascending runs of interleaved ranges (the exchange's
// per-rank slices in rotated order), or shuffled when runs is 0.
std::vector<int64_t> runIndices(size_t count, size_t n, size_t runs, uint64_t seed) {
  std::vector<int64_t> all;
  for (size_t i = 0; i < count && all.size() < n; i += 1 + cpu_kernel_test::mix(seed, i) % 7)
    all.push_back(int64_t(i));
  if (runs == 0) {
    for (size_t j = all.size(); j > 1; --j)
      std::swap(all[j - 1], all[cpu_kernel_test::mix(seed, j) % j]);
    return all;
  }
  std::vector<int64_t> out;
  const size_t slice = (all.size() + runs - 1) / runs;
  for (size_t r = 0; r < runs; ++r) {  // slices in reverse order: runs ascending, list not
    const size_t from = (runs - 1 - r) * slice, to = std::min(all.size(), from + slice);
    if (from < to) out.insert(out.end(), all.begin() + long(from), all.begin() + long(to));
  }
  return out;
}

}  // namespace

TEST_CASE("cpu writeDense equals fillZero then scatterValues bit for bit", "[kernels][fused]") {
  const sccl::KernelBackend& k = sccl::cpuKernels();
  struct Pair {
    scclDataType_t dst, val;
  };
  KernelSettingsGuard guard;
  for (const Pair pair : {Pair{scclFloat32, scclFloat32}, Pair{scclFloat16, scclFloat32},
                          Pair{scclBfloat16, scclFloat32}, Pair{scclFloat64, scclFloat64}}) {
    const size_t count = 300007, width = sccl::dataTypeSize(pair.dst);
    for (size_t runs : {size_t{0}, size_t{1}, size_t{4}, size_t{300}}) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{5000}, size_t{60000}}) {
        const std::vector<int64_t> idx = runIndices(count, n, runs, 5 + runs);
        const Bytes vals = makeData(pair.val, idx.size(), 17);
        for (double scale : {1.0, 0.25}) {
          sccl::setKernelPartsForTesting(1);
          Bytes want(count * width, 0x5a);
          REQUIRE(k.fillZero(want.data(), want.size(), nullptr) == scclSuccess);
          REQUIRE(k.scatterValues(want.data(), pair.dst, idx.data(), vals.data(), pair.val,
                                  idx.size(), scale, nullptr) == scclSuccess);
          for (int parts : kPartCounts) {
            sccl::setKernelPartsForTesting(parts);
            Bytes got(count * width, 0xa5);
            REQUIRE(k.writeDense(got.data(), pair.dst, count, idx.data(), vals.data(), pair.val,
                                 idx.size(), scale, nullptr) == scclSuccess);
            INFO(sccl::dataTypeName(pair.dst) << ", runs " << runs << ", n " << idx.size()
                                              << ", scale " << scale << ", parts " << parts);
            CHECK(got == want);
          }
        }
      }
    }
  }
  std::vector<float> out(4);
  const int64_t one = 0;
  const double value = 1.0;
  CHECK(k.writeDense(out.data(), scclFloat32, 4, &one, &value, scclFloat64, 1, 1.0, nullptr) ==
        scclInvalidArgument);
}

TEST_CASE("cpu gatherAndZero equals gather then zeroAt bit for bit", "[kernels][fused]") {
  const sccl::KernelBackend& k = sccl::cpuKernels();
  KernelSettingsGuard guard;
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16}) {
    const size_t count = 200001, width = sccl::dataTypeSize(dtype);
    const Bytes src = makeData(dtype, count, 29);
    const std::vector<int64_t> idx = runIndices(count, 40000, 3, 31);
    sccl::setKernelPartsForTesting(1);
    Bytes want_src = src, want_out(idx.size() * width);
    REQUIRE(k.gather(want_src.data(), dtype, idx.data(), idx.size(), want_out.data(), nullptr) ==
            scclSuccess);
    REQUIRE(k.zeroAt(want_src.data(), dtype, idx.data(), idx.size(), nullptr) == scclSuccess);
    for (int parts : kPartCounts) {
      sccl::setKernelPartsForTesting(parts);
      Bytes got_src = src, got_out(idx.size() * width);
      REQUIRE(k.gatherAndZero(got_src.data(), dtype, idx.data(), idx.size(), got_out.data(),
                              nullptr) == scclSuccess);
      CHECK(got_src == want_src);
      CHECK(got_out == want_out);
    }
  }
}
