// One fresh run of every sparse all-reduce preset on in-process ranks, for the determinism check
// (check_determinism.sh runs this program many times in fresh processes and compares the output).
//
//   sccl_determinism_run [ranks] [count] [calls]
//
// For each preset: `calls` calls of scclSparseAllreduce (sum) on seeded Laplace gradients (the
// same in every run), error feedback on, density 0.01. Prints one line per preset with an FNV-1a
// 64 hash over every call's output; exits 1 if two ranks' outputs ever differ (bitwise) or a
// call fails. The kernel thread count comes from SCCL_CPU_THREADS, which the driver varies.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/laplace_streams.h"
#include "support/local_ranks.h"

namespace {

uint64_t fnv1a(uint64_t hash, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? std::atoi(argv[1]) : 4;
  const size_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10007;
  const int calls = argc > 3 ? std::atoi(argv[3]) : 12;
  if (nranks < 1 || count < 1 || calls < 1) {
    std::fprintf(stderr, "usage: %s [ranks >= 1] [count >= 1] [calls >= 1]\n", argv[0]);
    return 2;
  }
  const char* presets[] = {"dense", "topk",   "cltk",  "hard_threshold",
                           "micro", "exdyna", "sidco", "s2"};
  int status = 0;
  for (const char* preset : presets) {
    std::vector<uint64_t> hashes(size_t(nranks), 0xcbf29ce484222325ull);
    auto failures =
        sccl_test::runLocalRanks(nranks, [&](int rank, scclComm_t comm, sccl_test::RankLog& log) {
          scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
          config.algorithm = preset;
          config.density = 0.01;
          scclSparsifier_t sp = nullptr;
          if (!log.checkResult(scclSparsifierCreate(&sp, comm, count, scclFloat32, &config),
                               scclSuccess, "create"))
            return;
          std::vector<float> grad(count), out(count);
          const float scale = float(sccl_test::laplaceScaleFor(count, 0.01));
          for (int t = 0; t < calls; ++t) {
            sccl_test::fillLaplace(77, rank, uint64_t(t), grad.data(), count, scale);
            if (!log.checkResult(scclSparseAllreduce(grad.data(), out.data(), count, scclFloat32,
                                                     scclSum, sp, comm, nullptr),
                                 scclSuccess, "call " + std::to_string(t)))
              break;
            hashes[size_t(rank)] = fnv1a(hashes[size_t(rank)], out.data(), count * sizeof(float));
          }
          scclSparsifierDestroy(sp);
        });
    for (const std::string& failure : failures)
      std::fprintf(stderr, "%s: %s\n", preset, failure.c_str());
    bool same = true;
    for (uint64_t h : hashes) same = same && h == hashes[0];
    if (!failures.empty() || !same) {
      std::fprintf(stderr, "%s: %s\n", preset, same ? "a call failed" : "ranks differ");
      status = 1;
    }
    std::printf("%-15s %016llx\n", preset, static_cast<unsigned long long>(hashes[0]));
  }
  return status;
}
