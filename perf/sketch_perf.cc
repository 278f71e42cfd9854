// sketch_perf: the local work of the S2 Reducer's count sketch (the public scclCountSketch*
// building blocks) against the local work of the (index, value) exchange it replaces, on one
// block-sparse vector, with the payload each puts on the wire.
//
// Input: `count` elements in blocks of -B elements; each block is non-zero with probability -D
// (a function of (seed, block) only), its values Laplace(0, 1), every other block all zeros: the
// shape of an embedding gradient (row = block) or of a block-sparsified gradient.
// Timed, interleaved so that load from other processes hits all alike:
//   mark     scclCountSketchMarkBlocks: the bitmap of non-zero blocks;
//   encode   zero the r x c table, then scclCountSketchEncode of the marked blocks;
//   decode   scclCountSketchDecode: median over the rows into a dense output (zeros elsewhere);
//   pairs    the baseline: scclPartitionedSelect of every non-zero (threshold = the smallest
//            positive value) into (int64 index, value) pairs, then a zero-filled dense output and
//            a scatter of the pairs: what a rank does around an all-gather of pairs.
// Payload per rank and call (what one all-reduce or all-gather contribution holds):
//   sketch   r c value bytes (table) + ceil(count / B) bytes (bitmap);
//   pairs    nnz (8 + value bytes).
// The sketch is the same size on every rank whatever the overlap; an all-gather of pairs
// receives (n - 1) times its payload. c = max(1, ceil(lambda nnz)) for each lambda of -S.
// err = ||decode - x|| / ||x|| (collisions; exact recovery only when no marked elements share a
// bucket in a majority of the rows). Check (-c 1): the decoded vector equals, bit for bit, the
// independent scalar model of tests/support/sketch_reference.h (one rank, no error feedback);
// the pairs round trip equals x exactly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/data.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/team.h"
#include "common/timing.h"
#include "common/watchdog.h"
#include "sparsecoll/sparsecoll.h"
#include "support/sketch_reference.h"

namespace {

using namespace sccl_perf;

struct SketchSettings {
  size_t block = 64;                 // -B
  int rows = 3;                      // -K
  std::vector<double> lambdas{0.5};  // -S
};

struct Vectors {
  std::vector<unsigned char> x, out, table, pairs_out, pair_values;
  std::vector<int64_t> pair_indices;
  std::vector<uint8_t> bitmap;
};

struct Row {
  size_t count = 0, nnz = 0, blocks = 0, marked = 0;
  double density = 0, lambda = 0;
  uint64_t width = 0;
  Timing mark, encode, decode, pairs;
  double error = 0;
  size_t wrong = 0;
};

bool parseLambdas(const char* text, std::vector<double>* lambdas) {
  lambdas->clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const double lambda = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(lambda > 0 && lambda <= 64)) return false;
    lambdas->push_back(lambda);
  }
  return !lambdas->empty();
}

// Block b is non-zero with probability `density`, decided by (seed, b) alone.
bool blockIsNonZero(uint64_t seed, size_t block, double density) {
  const uint64_t mixed = sccl::sketchMix(seed ^ sccl::sketchMix(block + 0x5bd1e995u));
  return double(mixed >> 11) * 0x1.0p-53 < density;
}

// x = Laplace values in the non-zero blocks, zeros elsewhere; returns the non-zero count.
size_t fillBlockSparse(ThreadTeam& team, const PerfOptions& options, const SketchSettings& sk,
                       size_t count, double density, void* x) {
  fillLaplace(team, x, options.dtype, count, options.seed);
  const size_t width = dtypeSize(options.dtype);
  size_t nnz = 0;
  for (size_t b = 0, first = 0; first < count; ++b, first += sk.block) {
    const size_t last = std::min(count, first + sk.block);
    if (blockIsNonZero(options.seed, b, density)) {
      nnz += last - first;
    } else {
      std::memset(static_cast<unsigned char*>(x) + first * width, 0, (last - first) * width);
    }
  }
  return nnz;
}

// Elements whose bits differ between the library's decode and the scalar model.
template <typename T>
size_t countWrongDecode(const SketchSettings& sk, const PerfOptions& options, const Row& row,
                        const void* x, const void* decoded) {
  sccl_test::SketchModelConfig model;
  model.count = row.count;
  model.block = sk.block;
  model.rows = uint32_t(sk.rows);
  model.lambda = row.lambda;
  model.seed = options.seed;
  model.k = std::max<uint64_t>(1, row.nnz);
  model.nonzero = true;
  model.error_feedback = false;
  sccl_test::SketchReference<T> reference(model, 1);
  const T* values = static_cast<const T*>(x);
  const std::vector<std::vector<T>> grads = {std::vector<T>(values, values + row.count)};
  const sccl_test::SketchModelCall<T> expected = reference.step(grads, false);
  size_t wrong = 0;
  for (size_t i = 0; i < row.count; ++i) {
    T got;
    std::memcpy(&got, static_cast<const unsigned char*>(decoded) + i * sizeof(T), sizeof(T));
    if (std::memcmp(&got, &expected.output[i], sizeof(T)) != 0) ++wrong;
  }
  return wrong;
}

// ||decoded - x|| / ||x|| in double.
double relativeError(const PerfOptions& options, size_t count, const void* x, const void* decoded) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < count; ++i) {
    const double a = loadAsDouble(x, options.dtype, i), b = loadAsDouble(decoded, options.dtype, i);
    diff += (b - a) * (b - a);
    norm += a * a;
  }
  return norm > 0 ? std::sqrt(diff / norm) : 0;
}

bool measure(ThreadTeam& team, const PerfOptions& options, const SketchSettings& sk, Vectors& v,
             Row& row) {
  const size_t width = dtypeSize(options.dtype);
  const size_t table_bytes = size_t(sk.rows) * row.width * width;
  const size_t count = row.count;
  const double smallest = options.dtype == scclFloat64 ? std::numeric_limits<double>::denorm_min()
                                                       : std::numeric_limits<float>::denorm_min();
  scclResult_t status = scclSuccess;
  auto keep = [&](scclResult_t result) {
    if (status == scclSuccess) status = result;
  };
  size_t nselected = 0;
  auto mark = [&] {
    keep(scclCountSketchMarkBlocks(v.x.data(), count, options.dtype, sk.block, v.bitmap.data(),
                                   nullptr));
  };
  auto encode = [&] {
    std::memset(v.table.data(), 0, table_bytes);
    keep(scclCountSketchEncode(v.x.data(), count, options.dtype, sk.block, v.bitmap.data(), sk.rows,
                               row.width, options.seed, v.table.data(), nullptr));
  };
  auto decode = [&] {
    keep(scclCountSketchDecode(v.table.data(), options.dtype, sk.rows, row.width, options.seed,
                               count, sk.block, v.bitmap.data(), v.out.data(), nullptr));
  };
  auto pairs = [&] {
    keep(scclPartitionedSelect(v.x.data(), count, options.dtype, 0, count, smallest,
                               v.pair_indices.data(), v.pair_values.data(), count, &nselected,
                               nullptr));
    team.run([&](int thread, int nthreads) {
      const size_t begin = count * size_t(thread) / size_t(nthreads);
      const size_t end = count * size_t(thread + 1) / size_t(nthreads);
      std::memset(v.pairs_out.data() + begin * width, 0, (end - begin) * width);
    });
    for (size_t j = 0; j < nselected; ++j) {
      std::memcpy(v.pairs_out.data() + size_t(v.pair_indices[j]) * width,
                  v.pair_values.data() + j * width, width);
    }
  };
  std::vector<Timing> t =
      timeInterleaved(options.warmup, options.iters, mark, encode, decode, pairs);
  if (status != scclSuccess) {
    std::fprintf(stderr, "sketch_perf: %s\n", scclGetLastError(nullptr));
    return false;
  }
  row.mark = t[0];
  row.encode = t[1];
  row.decode = t[2];
  row.pairs = t[3];
  row.marked = size_t(std::count(v.bitmap.begin(), v.bitmap.begin() + long(row.blocks), 1));
  row.error = relativeError(options, count, v.x.data(), v.out.data());
  if (options.check) {
    row.wrong = options.dtype == scclFloat64
                    ? countWrongDecode<double>(sk, options, row, v.x.data(), v.out.data())
                    : countWrongDecode<float>(sk, options, row, v.x.data(), v.out.data());
    row.wrong += nselected == row.nnz ? 0 : 1;
    row.wrong += std::memcmp(v.pairs_out.data(), v.x.data(), count * width) == 0 ? 0 : 1;
  }
  return true;
}

std::vector<Column> tableColumns() {
  return {{"size(B)", "size_bytes", 11, -1},
          {"count", "count", 10, -1},
          {"type", "type", 6, 0},
          {"block", "block", 5, -1},
          {"density", "block_density", 7, 4},
          {"nnz", "nnz", 9, -1},
          {"rows", "rows", 4, -1},
          {"lambda", "lambda", 6, 3},
          {"width", "width", 9, -1},
          {"mark(us)", "mark_us", 9, 1},
          {"enc(us)", "encode_us", 9, 1},
          {"dec(us)", "decode_us", 9, 1},
          {"sketch(us)", "sketch_us", 10, 1},
          {"pairs(us)", "pairs_us", 9, 1},
          {"sk/pairs", "sketch_over_pairs", 8, 2},
          {"sketch(B)", "sketch_payload_bytes", 11, -1},
          {"pairs(B)", "pairs_payload_bytes", 11, -1},
          {"B ratio", "pairs_over_sketch_bytes", 7, 2},
          {"err", "decode_error", 7, 3},
          {"#wrong", "wrong", 6, -1}};
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = options.max_size = 16u << 20;  // 4M float32: the S2 results' embedding size
  options.densities = {0.01, 0.1};
  options.iters = 10;
  SketchSettings sk;
  std::vector<ExtraFlag> extra = {
      {'B', "N      block size in elements (an embedding row) [64]",
       [&](const char* text) { return parseSize(text, &sk.block) && sk.block > 0; }},
      {'K', "N      sketch rows r, 1..16 [3]",
       [&](const char* text) { return (sk.rows = std::atoi(text)) >= 1 && sk.rows <= 16; }},
      {'S', "LIST   sketch widths as lambda = c / nnz, comma separated [0.5]",
       [&](const char* text) { return parseLambdas(text, &sk.lambdas); }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "count-sketch encode/decode (S2) vs (index, value) pairs; -D is the fraction "
                    "of non-zero blocks",
                    extra, &options, &exit_code)) {
    return exit_code;
  }
  if (options.dtype != scclFloat32 && options.dtype != scclFloat64) {
    std::fprintf(stderr, "sketch_perf: the count sketch takes float or double (-d)\n");
    return 2;
  }
  const std::vector<size_t> counts = elementCounts(options);
  if (counts.empty()) return 2;
  ThreadTeam team(kernelThreads(options));
  ResultTable table(tableColumns());
  const KeyValues machine = machineDescription(options);
  const KeyValues settings = {
      {"iters", std::to_string(options.iters)},
      {"warmup", std::to_string(options.warmup)},
      {"block", std::to_string(sk.block)},
      {"rows", std::to_string(sk.rows)},
      {"seed", std::to_string(options.seed)},
      {"inputs", "blocks non-zero with probability -D, Laplace(0,1) values"}};
  std::printf("# sketch_perf: count-sketch encode/decode vs (index, value) pairs, one rank\n");
  printKeyValues(stdout, machine);
  printKeyValues(stdout, settings);
  std::printf(
      "# sketch = mark + encode + decode | pairs = select every non-zero + zero-fill + scatter | "
      "payload per rank: sketch r*c*value + bitmap, pairs nnz*(8+value) | times: median\n");
  table.printHeader(stdout);

  const size_t width = dtypeSize(options.dtype);
  const size_t max_count = counts.back();
  Vectors v;
  v.x.resize(max_count * width);
  v.out.resize(max_count * width);
  v.pairs_out.resize(max_count * width);
  v.pair_values.resize(max_count * width);
  v.pair_indices.resize(max_count);
  v.bitmap.resize((max_count + sk.block - 1) / sk.block);
  size_t total_wrong = 0;
  for (size_t count : counts) {
    for (double density : options.densities) {
      const size_t nnz = fillBlockSparse(team, options, sk, count, density, v.x.data());
      for (double lambda : sk.lambdas) {
        watchdogKick("sketch at " + std::to_string(count) + " elements, density " +
                     std::to_string(density) + ", lambda " + std::to_string(lambda));
        Row row;
        row.count = count;
        row.nnz = nnz;
        row.blocks = (count + sk.block - 1) / sk.block;
        row.density = density;
        row.lambda = lambda;
        row.width =
            std::max<uint64_t>(1, uint64_t(std::ceil(lambda * double(std::max<size_t>(1, nnz)))));
        v.table.assign(size_t(sk.rows) * row.width * width, 0);
        if (!measure(team, options, sk, v, row)) return 1;
        total_wrong += row.wrong;
        const double sketch_us = row.mark.median_us + row.encode.median_us + row.decode.median_us;
        const double sketch_bytes =
            double(sk.rows) * double(row.width) * double(width) + double(row.blocks);
        const double pair_bytes = double(nnz) * double(8 + width);
        table.addRow({double(count * width),
                      double(count),
                      dtypeName(options.dtype),
                      double(sk.block),
                      density,
                      double(nnz),
                      double(sk.rows),
                      lambda,
                      double(row.width),
                      row.mark.median_us,
                      row.encode.median_us,
                      row.decode.median_us,
                      sketch_us,
                      row.pairs.median_us,
                      row.pairs.median_us > 0 ? sketch_us / row.pairs.median_us : 0.0,
                      sketch_bytes,
                      pair_bytes,
                      pair_bytes / sketch_bytes,
                      row.error,
                      options.check ? Cell(double(row.wrong)) : Cell("N/A")},
                     stdout);
      }
    }
  }
  std::printf("# wrong entries: %zu %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
  if (!options.json_path.empty() &&
      !table.writeJson(options.json_path, "sketch_perf", machine, settings)) {
    std::fprintf(stderr, "cannot write %s\n", options.json_path.c_str());
    return 1;
  }
  return total_wrong ? 1 : 0;
}
