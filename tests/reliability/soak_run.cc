// Randomised soak: for a bounded time, in-process jobs of 1-4 ranks (the local transport) run a
// random mix of dense collectives (all-reduce sum on several dtypes, all-gather, broadcast)
// and sparse all-reduces (every preset, random sizes), with communicators and sparsifiers
// created and destroyed all along. Every result is checked:
//  - dense collectives against the exact value (inputs are small integers, exact in every type);
//  - gather-reduction presets without error feedback: every output entry is 0 or the exact sum
//    of the ranks' inputs there (nothing else can appear), and (from 100 elements) something was
//    selected (k' > 0);
//  - every sparse preset: all ranks bitwise identical.
// After a warm-up third of the time, heap in use (mallinfo2), open descriptors and threads are
// sampled; at the end they must be flat: no more descriptors or threads (within 5 s: the last
// job's bootstrap root closes asynchronously), heap within 8 MiB.
//   sccl_soak_run SECONDS [SEED]        prints the operations, the wrong results and the samples
#include <dirent.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace {

using Clock = std::chrono::steady_clock;

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

uint64_t heapInUse() {
  struct mallinfo2 info = mallinfo2();
  return uint64_t(info.uordblks) + uint64_t(info.hblkhd);
}

int inputValue(uint32_t seed, int rank, size_t i) {
  uint64_t h = (uint64_t(seed) * 0x9E3779B97F4A7C15ull) ^
               (uint64_t(rank + 1) * 0xBF58476D1CE4E5B9ull) ^ (uint64_t(i) * 0x94D049BB133111EBull);
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return int(h % 17) - 8;
}

struct Job {
  int nranks;
  int ops;
  uint32_t seed;
};

const char* const kPresets[] = {
    "topk",  "cltk", "hard_threshold", "micro",           "exdyna",
    "sidco", "s2",   "dense",          "micro_sync_free", "exdyna_sync_free"};

bool isGatherPreset(const std::string& p) {
  return p != "s2" && p != "dense" && p != "sidco";
}

// One job: nranks threads, `ops` random operations; returns the wrong results.
struct JobResult {
  uint64_t ops = 0;
  uint64_t wrong = 0;
  std::vector<std::string> messages;
};

JobResult runJob(const Job& job) {
  JobResult result;
  std::mutex mutex;
  auto report = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    ++result.wrong;
    if (result.messages.size() < 10) result.messages.push_back(what);
  };
  scclUniqueId id;
  if (scclGetUniqueId(&id) != scclSuccess) {
    report("scclGetUniqueId failed");
    return result;
  }
  // Every rank draws the same operation sequence from the job seed.
  std::vector<std::vector<float>> sparse_out(size_t(job.nranks));
  std::vector<std::thread> threads;
  std::vector<uint64_t> done(size_t(job.nranks), 0);
  for (int rank = 0; rank < job.nranks; ++rank) {
    threads.emplace_back([&, rank] {
      scclComm_t comm = nullptr;
      if (scclCommInitRank(&comm, job.nranks, id, rank) != scclSuccess) {
        report("init failed: " + std::string(scclGetLastError(nullptr)));
        return;
      }
      std::mt19937 random(job.seed);
      for (int op = 0; op < job.ops; ++op) {
        const uint32_t seed = uint32_t(random());
        const int kind = int(random() % 5);
        const size_t count = 1 + random() % (kind == 4 ? 60000 : 5000);
        if (kind == 0 || kind == 1) {  // all-reduce sum, float32 or int32 or float64
          const int type = int(random() % 3);
          const scclDataType_t dtype = type == 0   ? scclFloat32
                                       : type == 1 ? scclInt32
                                                   : scclFloat64;
          const scclRedOp_t red = scclSum;  // the public API's other op (avg) is not exact
          std::vector<double> expect(count);
          for (size_t i = 0; i < count; ++i) {
            double acc = inputValue(seed, 0, i);
            for (int r = 1; r < job.nranks; ++r) {
              double v = inputValue(seed, r, i);
              acc += v;
            }
            expect[i] = acc;
          }
          bool ok = true;
          auto run = [&](auto zero) {
            using T = decltype(zero);
            std::vector<T> in(count), out(count);
            for (size_t i = 0; i < count; ++i) in[i] = T(inputValue(seed, rank, i));
            if (scclAllReduce(in.data(), out.data(), count, dtype, red, comm, nullptr) !=
                scclSuccess)
              return false;
            for (size_t i = 0; i < count; ++i)
              if (double(out[i]) != expect[i]) return false;
            return true;
          };
          ok = type == 0 ? run(0.0f) : type == 1 ? run(int32_t(0)) : run(0.0);
          if (!ok)
            report("all-reduce op " + std::to_string(op) + " count " + std::to_string(count));
        } else if (kind == 2) {  // all-gather
          std::vector<int32_t> in(count), out(count * size_t(job.nranks));
          for (size_t i = 0; i < count; ++i) in[i] = inputValue(seed, rank, i);
          bool ok =
              scclAllGather(in.data(), out.data(), count, scclInt32, comm, nullptr) == scclSuccess;
          for (int r = 0; ok && r < job.nranks; ++r)
            for (size_t i = 0; ok && i < count; ++i)
              ok = out[size_t(r) * count + i] == inputValue(seed, r, i);
          if (!ok) report("all-gather op " + std::to_string(op));
        } else if (kind == 3) {  // broadcast
          const int root = int(random() % uint32_t(job.nranks));
          std::vector<float> buf(count);
          for (size_t i = 0; i < count; ++i) buf[i] = float(inputValue(seed, rank, i));
          bool ok = scclBroadcast(buf.data(), buf.data(), count, scclFloat32, root, comm,
                                  nullptr) == scclSuccess;
          for (size_t i = 0; ok && i < count; ++i) ok = buf[i] == float(inputValue(seed, root, i));
          if (!ok) report("broadcast op " + std::to_string(op));
        } else {  // sparse all-reduce, a fresh sparsifier for 1-3 calls
          const std::string preset = kPresets[random() % (sizeof(kPresets) / sizeof(kPresets[0]))];
          const int calls = 1 + int(random() % 3);
          scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
          config.algorithm = preset.c_str();
          config.density = 0.001 + double(random() % 100) / 1000.0;
          config.errorFeedback = isGatherPreset(preset) ? 0 : 1;
          scclSparsifier_t sp = nullptr;
          if (scclSparsifierCreate(&sp, comm, count, scclFloat32, &config) != scclSuccess) {
            report("sparsifier " + preset + ": " + scclGetLastError(comm));
            continue;
          }
          std::vector<float> in(count);
          std::vector<float>& out = sparse_out[size_t(rank)];
          out.assign(count, 0);
          for (int c = 0; c < calls; ++c) {
            for (size_t i = 0; i < count; ++i)
              in[i] = float(inputValue(seed + uint32_t(c), rank, i));
            if (scclSparseAllreduce(in.data(), out.data(), count, scclFloat32, scclSum, sp, comm,
                                    nullptr) != scclSuccess) {
              report("sparse " + preset + ": " + scclGetLastError(comm));
              break;
            }
            if (isGatherPreset(preset)) {
              bool any = false, ok = true;
              size_t bad = 0;
              float want = 0;
              for (size_t i = 0; i < count && ok; ++i) {
                if (out[i] == 0) continue;
                float sum = 0;
                for (int r = 0; r < job.nranks; ++r)
                  sum += float(inputValue(seed + uint32_t(c), r, i));
                ok = out[i] == sum;
                any = true;
                bad = i;
                want = sum;
              }
              // Selected entries may all sum to 0 (ranks' values cancel): ask k' instead.
              scclSparseStats_t stats{};
              stats.size = sizeof stats;
              scclSparsifierGetStats(sp, &stats);
              any = stats.kGlobal > 0;
              if (!ok || (!any && count >= 100)) {
                report("sparse " + preset + " (job seed " + std::to_string(job.seed) + ", " +
                       std::to_string(job.nranks) + " ranks, op " + std::to_string(op) + ", call " +
                       std::to_string(c) + ", count " + std::to_string(count) + ", density " +
                       std::to_string(config.density) + "): " +
                       (ok ? std::string("nothing selected")
                           : "entry " + std::to_string(bad) + " is " + std::to_string(out[bad]) +
                                 ", the inputs sum to " + std::to_string(want)));
              }
            }
            // Ranks compare their outputs through an all-gather of a hash.
            uint64_t hash = 1469598103934665603ull;
            for (float v : out) {
              uint32_t bits;
              std::memcpy(&bits, &v, 4);
              hash = (hash ^ bits) * 1099511628211ull;
            }
            std::vector<uint64_t> hashes(size_t(job.nranks));
            if (scclAllGather(&hash, hashes.data(), 1, scclUint64, comm, nullptr) != scclSuccess ||
                std::any_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h != hash; }))
              report("sparse " + preset + ": ranks differ");
          }
          scclSparsifierDestroy(sp);
        }
        ++done[size_t(rank)];
      }
      if (scclCommDestroy(comm) != scclSuccess) report("destroy failed");
    });
  }
  for (auto& t : threads) t.join();
  result.ops = done[0];
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60;
  const uint32_t seed = argc > 2 ? uint32_t(std::atoi(argv[2])) : 1;
  std::mt19937 random(seed);
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  uint64_t jobs = 0, ops = 0, wrong = 0;
  bool sampled = false;
  int fds_warm = 0, threads_warm = 0;
  uint64_t heap_warm = 0;
  if (argc > 5) {  // replays one job: SECONDS SEED JOB_SEED NRANKS OPS
    Job job{std::atoi(argv[4]), std::atoi(argv[5]), uint32_t(std::strtoul(argv[3], nullptr, 10))};
    JobResult r = runJob(job);
    for (const std::string& m : r.messages) std::printf("wrong: %s\n", m.c_str());
    std::printf("replay: %llu wrong\n", static_cast<unsigned long long>(r.wrong));
    return r.wrong == 0 ? 0 : 1;
  }
  while (elapsed() < seconds) {
    Job job{1 + int(random() % 4), 5 + int(random() % 20), uint32_t(random())};
    JobResult r = runJob(job);
    ++jobs;
    ops += r.ops;
    wrong += r.wrong;
    for (const std::string& m : r.messages) std::printf("wrong: %s\n", m.c_str());
    if (!sampled && elapsed() >= seconds / 3) {
      // The bootstrap root of the job just ended may still be closing its sockets and thread:
      // the baseline is the least seen over one second.
      sampled = true;
      fds_warm = countEntries("/proc/self/fd");
      threads_warm = countEntries("/proc/self/task");
      for (int poll = 0; poll < 50; ++poll) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        fds_warm = std::min(fds_warm, countEntries("/proc/self/fd"));
        threads_warm = std::min(threads_warm, countEntries("/proc/self/task"));
      }
      heap_warm = heapInUse();
    }
  }
  // At the end likewise: back to the baseline within 5 s, or a leak.
  int fds_end = countEntries("/proc/self/fd");
  int threads_end = countEntries("/proc/self/task");
  for (int poll = 0; poll < 250 && (fds_end > fds_warm || threads_end > threads_warm); ++poll) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fds_end = countEntries("/proc/self/fd");
    threads_end = countEntries("/proc/self/task");
  }
  const uint64_t heap_end = heapInUse();
  const double heap_growth_mib = (double(heap_end) - double(heap_warm)) / 1048576.0;
  std::printf(
      "soak: %.0f s, %llu jobs (communicators created and destroyed), %llu operations "
      "per rank, %llu wrong results; after warm-up: descriptors %d -> %d, threads %d -> "
      "%d, heap %.2f MiB -> %.2f MiB (%+.2f MiB)\n",
      elapsed(), static_cast<unsigned long long>(jobs), static_cast<unsigned long long>(ops),
      static_cast<unsigned long long>(wrong), fds_warm, fds_end, threads_warm, threads_end,
      double(heap_warm) / 1048576.0, double(heap_end) / 1048576.0, heap_growth_mib);
  bool flat = fds_end <= fds_warm && threads_end <= threads_warm && heap_growth_mib < 8.0;
  if (wrong == 0 && flat) std::printf("soak passed\n");
  return wrong == 0 && flat ? 0 : 1;
}
