// The NaN rule on the GPU (docs/gpu.md, "NaN payloads"): with NaNs of different payloads and signs
// in both operands, every CUDA kernel that computes writes the CPU's result bit for bit, i.e. the
// canonical NaN of the format where the result is NaN (CUDA's own NaN result is 0x7fffffff; the
// first GPU run found 0x7fffffff where the CPU wrote 0x7fc00000). Inputs from
// support/nan_patterns.h, the same the CPU unit tests ([nan_rule]) check against the rule itself.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/shared/count_sketch.h"
#include "bit_mismatch.h"
#include "core/divide_by_ranks.h"
#include "core/dtype.h"
#include "cuda/cuda_kernels.h"
#include "cuda/dispatch.h"
#include "device_buffer.h"
#include "kernels/kernels.h"
#include "support/nan_patterns.h"
#include "transports/reduce_ops.h"

using sccl_gpu_test::DeviceBuffer;
using Bytes = std::vector<uint8_t>;

namespace {

const sccl::CudaKernels& gpu() {
  static sccl::CudaKernels kernels;
  return kernels;
}

size_t widthOf(scclDataType_t dtype) {
  return sccl::dataTypeSize(dtype);
}

// n values of dtype, every third a NaN with a payload, the others small integers.
Bytes valuesWithNaNs(scclDataType_t dtype, size_t n) {
  Bytes values(n * widthOf(dtype));
  for (size_t i = 0; i < n; ++i) {
    sccl_test::putBits(dtype, values.data(), i,
                       i % 3 == 0 ? sccl_test::payloadNaNBits(dtype, i / 3)
                                  : sccl_test::valueBits(dtype, double(int(i % 9) - 4)));
  }
  return values;
}

}  // namespace

TEST_CASE("gpu accumulate, scaled scatter and average write the cpu's canonical NaNs",
          "[gpu][indexed][nan_rule]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  const size_t n = 10007;
  const struct {
    scclDataType_t acc, grad;
  } pairs[] = {{scclFloat32, scclFloat32},
               {scclFloat32, scclFloat16},
               {scclFloat32, scclBfloat16},
               {scclFloat64, scclFloat64}};
  for (const auto& pair : pairs) {
    INFO(sccl::dataTypeName(pair.acc) << " + " << sccl::dataTypeName(pair.grad));
    Bytes residual, grad;
    sccl_test::nanSumOperands(pair.acc, pair.grad, n, &residual, &grad);
    Bytes want(n * widthOf(pair.acc));
    REQUIRE(cpu.accumulate(want.data(), residual.data(), pair.acc, grad.data(), pair.grad, n,
                           nullptr, nullptr) == scclSuccess);
    DeviceBuffer<uint8_t> r(residual), g(grad), acc(want.size());
    REQUIRE(gpu().accumulate(acc.get(), r.get(), pair.acc, g.get(), pair.grad, n, nullptr,
                             nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("accumulate", widthOf(pair.acc), want, acc.read());
  }

  std::vector<int64_t> idx;
  for (size_t i = 0; i < n; i += 2) idx.push_back(int64_t(i));
  DeviceBuffer<int64_t> d_idx(idx);
  for (scclDataType_t val_dtype : {scclFloat32, scclFloat64}) {
    const Bytes vals = valuesWithNaNs(val_dtype, idx.size());
    DeviceBuffer<uint8_t> d_vals(vals);
    const std::vector<scclDataType_t> dsts =
        val_dtype == scclFloat64
            ? std::vector<scclDataType_t>{scclFloat64}
            : std::vector<scclDataType_t>{scclFloat32, scclFloat16, scclBfloat16};
    for (scclDataType_t dst_dtype : dsts) {
      for (double scale : {0.5, 1.0}) {
        INFO(sccl::dataTypeName(val_dtype)
             << " into " << sccl::dataTypeName(dst_dtype) << ", scale " << scale);
        Bytes want(n * widthOf(dst_dtype), 0);
        REQUIRE(cpu.scatterValues(want.data(), dst_dtype, idx.data(), vals.data(), val_dtype,
                                  idx.size(), scale, nullptr) == scclSuccess);
        DeviceBuffer<uint8_t> out(want.size());
        REQUIRE(gpu().scatterValues(out.get(), dst_dtype, d_idx.get(), d_vals.get(), val_dtype,
                                    idx.size(), scale, nullptr) == scclSuccess);
        CHECK_BITS_OF_WIDTH("scatterValues", widthOf(dst_dtype), want, out.read());
      }
    }
  }

  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    INFO("divideByRanks " << sccl::dataTypeName(dtype));
    Bytes want = valuesWithNaNs(dtype, n);
    DeviceBuffer<uint8_t> x(want);
    REQUIRE(sccl::divideByRanks(want.data(), n, dtype, 3) == scclSuccess);
    REQUIRE(gpu().divideByRanks(x.get(), dtype, n, 3, nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("divideByRanks", widthOf(dtype), want, x.read());
  }
}

TEST_CASE("gpu rank-order reduction writes the cpu's canonical NaNs", "[gpu][indexed][nan_rule]") {
  // The NCCL transport's all-reduce kernel against the host transports' reduceInRankOrder, for
  // three ranks whose NaNs carry different payloads.
  const size_t n = 5003;
  const int nranks = 3;
  for (scclDataType_t dtype : {scclFloat32, scclFloat64, scclFloat16, scclBfloat16}) {
    Bytes gathered;
    std::vector<Bytes> inputs;
    for (int r = 0; r < nranks; ++r) {
      Bytes a, b;
      sccl_test::nanSumOperands(dtype, dtype, n, &a, &b);
      inputs.push_back(r == 1 ? b : a);
      gathered.insert(gathered.end(), inputs.back().begin(), inputs.back().end());
    }
    std::vector<const void*> pointers;
    for (const Bytes& input : inputs) pointers.push_back(input.data());
    DeviceBuffer<uint8_t> d_gathered(gathered);
    for (sccl::ReduceOp op : {sccl::ReduceOp::Sum, sccl::ReduceOp::Max, sccl::ReduceOp::Min}) {
      INFO(sccl::dataTypeName(dtype) << " " << sccl::reduceOpName(op));
      Bytes want(n * widthOf(dtype));
      sccl::reduceInRankOrder(pointers.data(), nranks, want.data(), n, dtype, op);
      DeviceBuffer<uint8_t> out(want.size());
      REQUIRE(sccl::cuda_dispatch::reduceRankOrder(d_gathered.get(), n, nranks, dtype, op,
                                                   out.get(), nullptr) == cudaSuccess);
      CHECK_BITS_OF_WIDTH("reduceRankOrder", widthOf(dtype), want, out.read());
    }
  }
}

TEST_CASE("gpu count-sketch kernels write the cpu's canonical NaNs", "[gpu][sketch][nan_rule]") {
  const sccl::KernelBackend& cpu = sccl::cpuKernels();
  for (scclDataType_t dtype : {scclFloat32, scclFloat64}) {
    const size_t n = 4001, width = widthOf(dtype);
    const uint32_t rows = 2;  // an even row count: the median averages two rows
    std::vector<uint64_t> keys{sccl::sketchRowKey(5, 0), sccl::sketchRowKey(5, 1)};
    sccl::SketchShape shape;
    shape.count = n;
    shape.block = 8;
    shape.rows = rows;
    shape.width = 331;
    shape.row_keys = keys.data();
    INFO(sccl::dataTypeName(dtype));
    const Bytes x = valuesWithNaNs(dtype, n);
    DeviceBuffer<uint8_t> d_x(x);

    std::vector<double> want_sq(shape.blocks());
    REQUIRE(cpu.blockSquaredNorms(x.data(), dtype, n, shape.block, want_sq.data(), nullptr) ==
            scclSuccess);
    DeviceBuffer<double> sq(want_sq.size());
    REQUIRE(gpu().blockSquaredNorms(d_x.get(), dtype, n, shape.block, sq.get(), nullptr) ==
            scclSuccess);
    CHECK_BITS("block norms", want_sq, sq.read());

    Bytes want_table(rows * shape.width * width, 0);
    REQUIRE(cpu.sketchEncode(x.data(), dtype, shape, nullptr, want_table.data(),
                             sccl::kListedUnknown, nullptr) == scclSuccess);
    DeviceBuffer<uint8_t> table(want_table.size());
    REQUIRE(gpu().sketchEncode(d_x.get(), dtype, shape, nullptr, table.get(), sccl::kListedUnknown,
                               nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("encoded table", width, want_table, table.read());

    // Decode a table with payload NaNs (as if all-reduced elsewhere) into every output type.
    Bytes payload_table = want_table;
    for (size_t b = 0; b < rows * shape.width; b += 4) {
      sccl_test::putBits(dtype, payload_table.data(), b, sccl_test::payloadNaNBits(dtype, b));
    }
    DeviceBuffer<uint8_t> d_table(payload_table);
    const std::vector<scclDataType_t> outs =
        dtype == scclFloat64 ? std::vector<scclDataType_t>{scclFloat64}
                             : std::vector<scclDataType_t>{scclFloat32, scclFloat16, scclBfloat16};
    for (scclDataType_t out_dtype : outs) {
      for (uint32_t divisor : {1u, 3u}) {
        INFO("decode to " << sccl::dataTypeName(out_dtype) << ", divisor " << divisor);
        Bytes want(n * widthOf(out_dtype));
        REQUIRE(cpu.sketchDecode(payload_table.data(), dtype, shape, nullptr, divisor, want.data(),
                                 out_dtype, nullptr) == scclSuccess);
        DeviceBuffer<uint8_t> out(want.size());
        REQUIRE(gpu().sketchDecode(d_table.get(), dtype, shape, nullptr, divisor, out.get(),
                                   out_dtype, nullptr) == scclSuccess);
        CHECK_BITS_OF_WIDTH("decode", widthOf(out_dtype), want, out.read());
      }
    }

    Bytes want_x = x;
    const Bytes sub = valuesWithNaNs(dtype, n);
    DeviceBuffer<uint8_t> d_sub(sub);
    REQUIRE(cpu.updateMarkedBlocks(want_x.data(), dtype, n, shape.block, nullptr, sub.data(),
                                   nullptr) == scclSuccess);
    REQUIRE(gpu().updateMarkedBlocks(d_x.get(), dtype, n, shape.block, nullptr, d_sub.get(),
                                     nullptr) == scclSuccess);
    CHECK_BITS_OF_WIDTH("updateMarkedBlocks", width, want_x, d_x.read());
  }
}
