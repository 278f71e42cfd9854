// Uses library internals (links sparsecoll_objects): the CPU kernels.
// memory_floor_perf: the memory traffic that any error-feedback sparse all-reduce must pay on
// this machine, measured, against the "read the gradient once" time the lower bound of the
// performance issue counts (docs/results/performance.md).
//
// With k << count, a call of scclSparseAllreduce (any preset with error feedback) must at least
// read the gradient, read the residual, write the new residual (residual + gradient, all
// entries change) and write the dense output (zeros except k entries): four vector-lengths of
// traffic per rank. Ranks on one machine share its memory bus. Per size, with -r ranks as
// threads, each owning its arrays (first touched by its own thread), started together:
//   read      one read of the gradient (the bound's t_read);
//   ef_floor  res[i] = res[i] + g[i]; out[i] = 0 in one fused pass: the four streams above.
//   pass      the library's pass of a MiCRO/ExDyna call (KernelBackend::accumulateSelect, the CPU
//             kernels): acc = residual + gradient into a second vector (the residual is double-
//             buffered) and this rank's partition (1/ranks of the vector)
//             counted into the density correction's 512 bins and selected above the window's
//             floor (about 3 % of the partition qualifies), on SCCL_CPU_THREADS threads per rank;
//   fused     pass, then the output written (writeDense; zeros here): a call's passes, the
//             exchange left out.
// The time of a round is the slowest rank's; the table reports the median over -n rounds
// (interleaved, so both rows see the same load), GB/s over all ranks, and ef_floor / read: the
// factor by which the bound undercounts the data path's unavoidable traffic.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "common/team.h"
#include "common/timing.h"
#include "kernels/kernels.h"

namespace {

using namespace sccl_perf;

// One rank's vectors, allocated and first touched by the thread that uses them.
struct RankArrays {
  std::unique_ptr<float[]> grad, residual, out;
  // 64-byte aligned as the sparsifier's (core/aligned_buffer.h), for the streaming stores.
  struct AlignedFree {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], AlignedFree> acc;
  std::unique_ptr<float[]> fused_residual;  // the fused row's own, never written (the floor's grows)
  std::vector<int64_t> idx;
  std::vector<float> val;
  std::vector<uint64_t> counts;
};

void touch(RankArrays& a, size_t count, int rank) {
  a.grad.reset(new float[count]);
  a.residual.reset(new float[count]);
  a.out.reset(new float[count]);
  a.acc.reset(static_cast<float*>(std::aligned_alloc(64, (count * 4 + 63) / 64 * 64)));
  a.fused_residual.reset(new float[count]);
  for (size_t i = 0; i < count; ++i) {
    a.acc[i] = 0;
    a.fused_residual[i] = 0;
    a.grad[i] = float((i * 2654435761u + unsigned(rank)) % 1000) * 1e-3f;
    a.residual[i] = 0;
    a.out[i] = 0;
  }
}

// One read of the gradient; the bits are OR-ed (vectorises without reassociating floats) and
// kept, so the compiler cannot drop the loop.
uint32_t readOnce(const float* g, size_t count) {
  uint32_t acc = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, g + i, 4);
    acc |= bits;
  }
  return acc;
}

// The four streams of an error-feedback call with nothing selected.
void errorFeedbackFloor(const float* g, float* residual, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    residual[i] = residual[i] + g[i];
    out[i] = 0.0f;
  }
}

// One rank's fused pass as a MiCRO call makes it, on its partition of `nranks`.
void fusedPass(RankArrays& a, size_t count, int rank, int nranks, bool write_output) {
  const size_t begin = count * size_t(rank) / size_t(nranks);
  const size_t end = count * size_t(rank + 1) / size_t(nranks);
  if (a.idx.empty()) {
    a.idx.resize((end - begin) / 8 + 1);
    a.val.resize(a.idx.size());
    a.counts.resize(513);
  }
  // The gradient is uniform in [0, 1) and the residual 0: about 3 % of |acc| lie above 0.97.
  const float floor_value = 0.97f;
  uint32_t floor_bits;
  std::memcpy(&floor_bits, &floor_value, 4);
  uint64_t nonfinite = 0;
  size_t ncandidates = 0;
  sccl::AccumulateSelectArgs args;
  args.acc = a.acc.get();
  args.residual = a.fused_residual.get();
  args.grad = a.grad.get();
  args.count = count;
  args.nonfinite = &nonfinite;
  args.begin = begin;
  args.end = end;
  args.floor = floor_value;
  args.idx = a.idx.data();
  args.val = a.val.data();
  args.capacity = a.idx.size();
  args.ncandidates = &ncandidates;
  args.base_bits = floor_bits;
  args.shift = 16;
  args.bins = 512;
  args.counts = a.counts.data();
  if (sccl::cpuKernels().accumulateSelect(args, nullptr) != scclSuccess ||
      ncandidates > a.idx.size() || ncandidates == 0) {
    std::fprintf(stderr, "memory_floor_perf: the fused pass failed (%zu candidates)\n",
                 ncandidates);
    std::exit(1);
  }
  // The output, written once after the exchange (zeros here: no entries).
  if (write_output && sccl::cpuKernels().writeDense(a.out.get(), scclFloat32, count, nullptr, nullptr,
                                    scclFloat32, 0, 1.0, nullptr) != scclSuccess) {
    std::fprintf(stderr, "memory_floor_perf: writeDense failed\n");
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = options.max_size = 25000000;
  options.sizes_are_elements = true;
  options.iters = 20;
  options.warmup = 3;
  int nranks = 4;
  std::vector<ExtraFlag> extra = {
      {'r', "ranks (threads, each with its own vectors; default 4)", [&](const char* value) {
         nranks = std::atoi(value);
         return nranks >= 1 && nranks <= 256;
       }}};
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "memory traffic floor of an error-feedback sparse all-reduce against one read",
                    extra, &options, &exit_code))
    return exit_code;
  KeyValues machine = machineDescription(options);
  printKeyValues(stdout, machine);
  std::printf(
      "# ranks: %d threads; read = one pass over the gradient; ef_floor = read gradient "
      "and residual, write residual and output\n",
      nranks);
  ResultTable table({{"count", "count", 10, -1},
                     {"ranks", "ranks", 5, -1},
                     {"op", "op", 8, 0},
                     {"time(ms)", "time_ms", 9, 2},
                     {"min(ms)", "min_ms", 9, 2},
                     {"GB/s", "gbps", 7, 1},
                     {"vs read", "vs_read", 7, 2}});
  table.printHeader(stdout);
  ThreadTeam team(nranks);
  volatile uint32_t sink = 0;
  for (size_t count : elementCounts(options)) {
    std::vector<RankArrays> arrays(static_cast<size_t>(nranks));
    team.run([&](int rank, int) { touch(arrays[size_t(rank)], count, rank); });
    std::vector<uint32_t> bits(static_cast<size_t>(nranks));
    auto read = [&] {
      team.run([&](int rank, int) {
        bits[size_t(rank)] = readOnce(arrays[size_t(rank)].grad.get(), count);
      });
      sink = sink | bits[0];
    };
    auto floor = [&] {
      team.run([&](int rank, int) {
        RankArrays& a = arrays[size_t(rank)];
        errorFeedbackFloor(a.grad.get(), a.residual.get(), a.out.get(), count);
      });
    };
    auto pass = [&] {
      team.run(
          [&](int rank, int) { fusedPass(arrays[size_t(rank)], count, rank, nranks, false); });
    };
    auto fused = [&] {
      team.run([&](int rank, int) { fusedPass(arrays[size_t(rank)], count, rank, nranks, true); });
    };
    std::vector<Timing> t =
        timeInterleaved(options.warmup, options.iters, read, floor, pass, fused);
    const double vector_bytes = double(count) * 4.0 * nranks;
    table.addRow({double(count), double(nranks), "read", t[0].median_us / 1e3, t[0].min_us / 1e3,
                  gigabytesPerSecond(vector_bytes, t[0].median_us), 1.0},
                 stdout);
    table.addRow(
        {double(count), double(nranks), "ef_floor", t[1].median_us / 1e3, t[1].min_us / 1e3,
         gigabytesPerSecond(4 * vector_bytes, t[1].median_us), t[1].median_us / t[0].median_us},
        stdout);
    table.addRow(
        {double(count), double(nranks), "pass", t[2].median_us / 1e3, t[2].min_us / 1e3,
         gigabytesPerSecond(3 * vector_bytes, t[2].median_us), t[2].median_us / t[0].median_us},
        stdout);
    table.addRow(
        {double(count), double(nranks), "fused", t[3].median_us / 1e3, t[3].min_us / 1e3,
         gigabytesPerSecond(4 * vector_bytes, t[3].median_us), t[3].median_us / t[0].median_us},
        stdout);
  }
  if (!options.json_path.empty() &&
      !table.writeJson(
          options.json_path, "memory_floor_perf", machine,
          {{"ranks", std::to_string(nranks)}, {"iters", std::to_string(options.iters)}}))
    return 1;
  return 0;
}
