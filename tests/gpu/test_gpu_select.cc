// The CUDA backend's selections against the CPU backend's, bit for bit, on the same inputs: every
// floating type with NaN and inf, long ranges, the counted selection of the union call's
// speculative slot, SIDCo's count check decided on the device and the selection at its word, the
// selection among the fused pass's candidates; a mismatch is reported as a count and the first few
// elements (bit_mismatch.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bit_mismatch.h"
#include "cuda/cuda_kernels.h"
#include "device_buffer.h"
#include "gpu_elements.h"
#include "kernels/kernels.h"
#include "kernels/shared/magnitude_bits.h"

using sccl_gpu_test::DeviceBuffer;
using sccl_gpu_test::elements;
using sccl_gpu_test::gpu;

TEST_CASE("gpu selection equals the cpu selection bit for bit", "[gpu][select]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    const size_t n = 100003, width = dtype == scclFloat64 ? 8 : dtype == scclFloat32 ? 4 : 2;
    std::vector<uint8_t> data = elements(dtype, n, 3);
    DeviceBuffer<uint8_t> x(data);
    for (double threshold : {0.0, 0.5, 2.0, 4.7, 9.0, 1e30}) {
      for (size_t begin : {size_t(0), size_t(777)}) {
        const size_t end = n - begin / 7;
        for (size_t capacity : {size_t(17), end - begin}) {
          INFO("dtype " << dtype << " threshold " << threshold << " begin " << begin << " capacity "
                        << capacity);
          std::vector<int64_t> want_idx(capacity);
          std::vector<uint8_t> want_val(capacity * width);
          size_t want_n = 0, got_n = 0;
          REQUIRE(cpu.selectAbove(data.data(), dtype, begin, end, threshold, want_idx.data(),
                                  want_val.data(), capacity, &want_n, nullptr) == scclSuccess);
          DeviceBuffer<int64_t> idx(capacity);
          DeviceBuffer<uint8_t> val(capacity * width);
          REQUIRE(gpu().selectAbove(x.get(), dtype, begin, end, threshold, idx.get(), val.get(),
                                    capacity, &got_n, nullptr) == scclSuccess);
          CHECK(got_n == want_n);
          const size_t kept = std::min(want_n, capacity);
          std::vector<int64_t> got_idx = idx.read();
          std::vector<uint8_t> got_val = val.read();
          got_idx.resize(kept);
          want_idx.resize(kept);
          got_val.resize(kept * width);
          want_val.resize(kept * width);
          CHECK_BITS("selected indices", want_idx, got_idx);
          CHECK_BITS_OF_WIDTH("selected values", width, want_val, got_val);
        }
      }
    }
  }
}

// More tiles of 8192 elements than the selection's grid has blocks (2048), so that its blocks
// loop, with a range that starts inside a mask word and ends inside a tile.
TEST_CASE("gpu selection of a long range equals the cpu selection", "[gpu][select]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 17000003, begin = 45, end = n - 3;
  const std::vector<uint8_t> data = elements(scclFloat32, n, 21);
  DeviceBuffer<uint8_t> x(data);
  for (double threshold : {3.0, 9.0}) {
    INFO("threshold " << threshold);
    const size_t capacity = end - begin;
    std::vector<int64_t> want_idx(capacity);
    size_t want_n = 0, got_n = 0;
    REQUIRE(cpu.selectAbove(data.data(), scclFloat32, begin, end, threshold, want_idx.data(),
                            nullptr, capacity, &want_n, nullptr) == scclSuccess);
    DeviceBuffer<int64_t> idx(capacity);
    REQUIRE(gpu().selectAbove(x.get(), scclFloat32, begin, end, threshold, idx.get(), nullptr,
                              capacity, &got_n, nullptr) == scclSuccess);
    REQUIRE(got_n == want_n);
    std::vector<int64_t> got_idx = idx.read();
    got_idx.resize(got_n);
    want_idx.resize(want_n);
    CHECK_BITS("selected indices", want_idx, got_idx);
  }
}

// The union call's speculative slot: the first `capacity` indices, -1 after them, and the count of
// every qualifying entry in device memory, also when it is past the capacity.
TEST_CASE("gpu counted selection equals the cpu one past and within its capacity",
          "[gpu][select]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 300007, begin = 13, end = n - 5;
  const std::vector<uint8_t> data = elements(scclFloat32, n, 23);
  DeviceBuffer<uint8_t> x(data);
  for (size_t capacity : {size_t(100), size_t(5000), end - begin}) {
    INFO("capacity " << capacity);
    std::vector<int64_t> want(capacity);
    std::vector<uint64_t> want_count(1);
    REQUIRE(cpu.selectAboveCounted(data.data(), scclFloat32, begin, end, 3.0, capacity, want.data(),
                                   want_count.data(), nullptr) == scclSuccess);
    DeviceBuffer<int64_t> idx(capacity);
    DeviceBuffer<uint64_t> count(1);
    REQUIRE(gpu().selectAboveCounted(x.get(), scclFloat32, begin, end, 3.0, capacity, idx.get(),
                                     count.get(), nullptr) == scclSuccess);
    CHECK(count.read() == want_count);
    CHECK_BITS("counted selection", want, idx.read());
  }
}

// SIDCo's count check decided on the device (kernels/shared/count_check.h) and the selection at
// the threshold word it leaves: both windows, a first window that decides (the wide one must then
// leave the words alone on the device) and one that does not (the wide one decides).
TEST_CASE("gpu count check and the selection at its word equal the cpu ones", "[gpu][select]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 300007, begin = 11, end = n - 7;
  const std::vector<uint8_t> data = elements(scclFloat32, n, 31, /*finite=*/true);
  DeviceBuffer<uint8_t> x(data);
  // Windows of 1/32 octave: 8 bins under the centre, 96 above (narrow) or 128 under (wide).
  const auto window = [](double centre, size_t below, bool wide, uint64_t k) {
    sccl::CountCheckWindow w;
    w.shift = 23 - 5;
    const uint64_t centre_bits = sccl::thresholdBits(scclFloat32, centre);
    w.base_bits = (centre_bits - below * (uint64_t{1} << w.shift)) >> w.shift << w.shift;
    w.bins = below + 96;
    w.k = k;
    w.centre_edge = below;
    w.lo_bits = sccl::thresholdBits(scclFloat32, 1e-6);
    w.hi_bits = sccl::thresholdBits(scclFloat32, 40.0);
    w.wide = wide;
    return w;
  };
  for (double centre : {4.0, 14.0}) {  // 14: the first window holds fewer than k
    const uint64_t k = 3000;
    INFO("fitted " << centre);
    std::vector<uint64_t> want_counts(225), want_check(sccl::kCheckWords), want_bits(1);
    DeviceBuffer<uint64_t> counts(std::vector<uint64_t>(225, 0)), check(sccl::kCheckWords), bits(1);
    for (bool wide : {false, true}) {
      const sccl::CountCheckWindow w = window(centre, wide ? 128 : 8, wide, k);
      REQUIRE(cpu.countCheckWindow(data.data(), scclFloat32, begin, end, w, want_counts.data(),
                                   want_check.data(), want_bits.data(), nullptr) == scclSuccess);
      REQUIRE(gpu().countCheckWindow(x.get(), scclFloat32, begin, end, w, counts.get(), check.get(),
                                     bits.get(), nullptr) == scclSuccess);
    }
    CHECK(check.read() == want_check);
    CHECK(bits.read() == want_bits);
    CHECK(want_check[sccl::kCheckWidened] == (centre > 10 ? 1u : 0u));
    std::vector<int64_t> want_idx(5000);
    std::vector<uint64_t> want_count(1);
    REQUIRE(cpu.selectAboveCountedAt(data.data(), scclFloat32, begin, end, want_bits.data(), 5000,
                                     want_idx.data(), want_count.data(), nullptr) == scclSuccess);
    DeviceBuffer<int64_t> idx(5000);
    DeviceBuffer<uint64_t> count(1);
    REQUIRE(gpu().selectAboveCountedAt(x.get(), scclFloat32, begin, end, bits.get(), 5000,
                                       idx.get(), count.get(), nullptr) == scclSuccess);
    CHECK(count.read() == want_count);
    CHECK(want_count[0] == want_check[sccl::kCheckCount]);
    CHECK_BITS("selection at the word", want_idx, idx.read());
  }
}

TEST_CASE("gpu selection from the pass's candidates equals the cpu one", "[gpu][select]") {
  // The candidates of the CPU's fused pass at a floor, then both backends select among them at
  // thresholds at and above it (the resident gather's step 6 on host buffers).
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 300007;
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    INFO("dtype " << dtype);
    const size_t width = dtype == scclFloat64 ? 8 : 4;
    const std::vector<uint8_t> grad = elements(dtype, n, 29);
    std::vector<uint8_t> acc(n * width);
    std::vector<int64_t> cand_idx(n);
    std::vector<uint8_t> cand_val(n * width);
    size_t ncand = 0;
    sccl::AccumulateSelectArgs a;
    a.acc = acc.data();
    a.acc_dtype = dtype;
    a.grad = grad.data();
    a.grad_dtype = dtype;
    a.count = n;
    a.begin = 7;
    a.end = n - 3;
    a.floor = 2.0;
    a.idx = cand_idx.data();
    a.val = cand_val.data();
    a.capacity = n;
    a.ncandidates = &ncand;
    REQUIRE(cpu.accumulateSelect(a, nullptr) == scclSuccess);
    REQUIRE(ncand > 0);
    DeviceBuffer<int64_t> ci(cand_idx);
    DeviceBuffer<uint8_t> cv(cand_val);
    for (double threshold : {2.0, 3.0, 100.0}) {
      INFO("threshold " << threshold);
      size_t want_n = 0;
      std::vector<int64_t> scratch(n);
      REQUIRE(cpu.selectAbove(acc.data(), dtype, a.begin, a.end, threshold, scratch.data(), nullptr,
                              n, &want_n, nullptr) == scclSuccess);
      const size_t padded = want_n + 17;
      std::vector<int64_t> want(padded);
      REQUIRE(cpu.selectCandidatesPadded(cand_idx.data(), cand_val.data(), dtype, ncand, threshold,
                                         want_n, want.data(), padded, nullptr) == scclSuccess);
      DeviceBuffer<int64_t> idx(padded);
      REQUIRE(gpu().selectCandidatesPadded(ci.get(), cv.get(), dtype, ncand, threshold, want_n,
                                           idx.get(), padded, nullptr) == scclSuccess);
      CHECK_BITS("candidates' selection", want, idx.read());
      // The union call's counted selection among them, past and within the slot.
      for (size_t capacity : {size_t{0}, want_n / 2, want_n + 9}) {
        INFO("capacity " << capacity);
        std::vector<int64_t> want_slot(capacity + 1);
        std::vector<uint64_t> want_count(1);
        REQUIRE(cpu.selectCandidatesCounted(cand_idx.data(), cand_val.data(), dtype, ncand,
                                            threshold, capacity, want_slot.data(),
                                            want_count.data(), nullptr) == scclSuccess);
        DeviceBuffer<int64_t> slot(capacity + 1);
        DeviceBuffer<uint64_t> count(1);
        REQUIRE(gpu().selectCandidatesCounted(ci.get(), cv.get(), dtype, ncand, threshold, capacity,
                                              slot.get(), count.get(), nullptr) == scclSuccess);
        CHECK(count.read() == want_count);
        std::vector<int64_t> got_slot = slot.read();
        want_slot.resize(capacity);
        got_slot.resize(capacity);
        CHECK_BITS("counted candidates' selection", want_slot, got_slot);
      }
    }
    // The exact top-k among them (at least k at or above the floor).
    for (size_t k : {size_t{1}, ncand / 3, ncand}) {
      INFO("top-k " << k);
      std::vector<int64_t> want(k);
      std::vector<uint64_t> want_kth(1);
      REQUIRE(cpu.selectTopKCandidates(cand_idx.data(), cand_val.data(), dtype, ncand, k,
                                       want.data(), want_kth.data(), nullptr) == scclSuccess);
      DeviceBuffer<int64_t> idx(k);
      DeviceBuffer<uint64_t> kth(1);
      REQUIRE(gpu().selectTopKCandidates(ci.get(), cv.get(), dtype, ncand, k, idx.get(), kth.get(),
                                         nullptr) == scclSuccess);
      CHECK_BITS("top-k among the candidates", want, idx.read());
      CHECK(kth.read() == want_kth);
    }
  }
}
