// Several PROCESSES on one GPU (CTest gpu_multiprocess_npN, gpu_mpirun_multiprocess_npN; the GPU
// bundle's run.sh), launched one of two ways:
//   sccl_gpu_multiprocess --ranks N [--transport ucx] [--calls K]
//     the parent starts N copies of itself through the library's own bootstrap (no launcher
//     needed: the GPU machines have no Open MPI of their own), communicator over `transport`;
//   mpirun -np N sccl_gpu_multiprocess --launcher mpi [--calls K]
//     each process is a rank of MPI_COMM_WORLD, communicator by scclCommInitMpi over the mpi
//     transport (the bundle carries a relocated Open MPI for this).
// Every rank is on device 0 with its own stream; the device buffers go through the transport's
// pinned host staging. Each rank runs
// every sparse preset with a device path, float32 and float16 gradients, on two sparsifiers of the
// same communicator: one with host buffers, one with device buffers, call by call, and compares
// the device call with the host call bit for bit (output, residual, counts, threshold, bytes).
// Exit 0: every rank agreed with its host run; 1: a difference (printed briefly); 77: no GPU.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../multirank_runs.h"
#include "../run_comparison.h"
#include "support/rank_processes.h"
#include "support/sparse_runs.h"

#if SCCL_GPU_TEST_WITH_MPI
#include <mpi.h>
#endif

namespace {

using namespace sccl_gpu_test;

constexpr const char* kEnvPrefix = "SCCL_GPU_TEST";
constexpr size_t kCount = 30011;
const HeadHeavyGradient kGradient{31, kCount, 5};

struct Options {
  int ranks = 0;
  const char* transport = "ucx";
  int calls = 4;
  bool mpi_launcher = false;
};

constexpr const char* kUsage =
    "usage: %s --ranks N [--transport ucx] [--calls K]\n"
    "       mpirun -np N %s --launcher mpi [--calls K]\n";

// One preset and gradient type on this rank: "" when every device call equals its host call.
std::string compareOnRank(scclComm_t comm, int rank, int nranks, const char* preset,
                          scclDataType_t dtype, int calls) {
  const scclSparseConfig_t config = sccl_test::sparseConfig(preset, 0.01);
  scclSparsifier_t host_raw = nullptr, device_raw = nullptr;
  if (scclSparsifierCreate(&host_raw, comm, kCount, dtype, &config) != scclSuccess)
    return std::string("create: ") + scclGetLastError(comm);
  Sparsifier host_sp{host_raw, &scclSparsifierDestroy};
  if (scclSparsifierCreate(&device_raw, comm, kCount, dtype, &config) != scclSuccess)
    return std::string("create: ") + scclGetLastError(comm);
  Sparsifier device_sp{device_raw, &scclSparsifierDestroy};
  const size_t bytes = kCount * sccl::dataTypeSize(dtype);
  const Stream stream;
  DeviceBuffer<unsigned char> d_grad(bytes), d_out(bytes);
  std::vector<unsigned char> host_out(bytes);
  for (int t = 0; t < calls; ++t) {
    const std::vector<unsigned char> grad = gradientBytes(kGradient, dtype, rank, uint64_t(t));
    RankCallRecord want, got;
    want.result = scclSparseAllreduce(grad.data(), host_out.data(), kCount, dtype, scclSum,
                                      host_sp.get(), comm, nullptr);
    if (want.result != scclSuccess) return std::string("host call: ") + scclGetLastError(comm);
    recordCall(host_sp.get(), nranks, host_out.data(), Buffers::Host, kCount, dtype, &want);
    upload(d_grad.get(), grad.data(), bytes, "gradient");
    got.result = scclSparseAllreduce(d_grad.get(), d_out.get(), kCount, dtype, scclSum,
                                     device_sp.get(), comm, stream.get());
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
    if (got.result != scclSuccess) return std::string("device call: ") + scclGetLastError(comm);
    recordCall(device_sp.get(), nranks, d_out.get(), Buffers::Device, kCount, dtype, &got);
    const std::string d = differenceBetween(want, got, "call " + std::to_string(t),
                                            !exchangesDifferFromHost(preset));
    if (!d.empty()) return d;
  }
  return "";
}

// Every preset and type on this rank's communicator; the ranks agree on the outcome. Returns the
// exit code and destroys (or, when the ranks could not agree, aborts) the communicator.
int compareEverything(scclComm_t comm, int rank, int nranks, const char* transport,
                      const Options& options) {
  int failed = 0, failures = 0, compared = 0;
  bool agreed = true;
  for (const char* preset : {"micro", "exdyna", "topk", "cltk", "hard_threshold", "s2",
                             "micro_sync_free", "exdyna_sync_free"}) {
    for (scclDataType_t dtype : {scclFloat32, scclFloat16}) {
      std::string difference;
      try {
        difference = compareOnRank(comm, rank, nranks, preset, dtype, options.calls);
      } catch (const std::exception& e) {
        difference = e.what();
      }
      ++compared;
      if (!difference.empty()) {
        failed = 1;
        std::fprintf(stderr, "rank %d: %s %s: %s\n", rank, preset,
                     dtype == scclFloat16 ? "float16" : "float32", difference.c_str());
      }
      // The ranks agree after every case, so that all stop at the first failure together
      // rather than run different collectives.
      if (scclAllReduce(&failed, &failures, 1, scclInt32, scclSum, comm, nullptr) !=
          scclSuccess) {
        agreed = false;
        failures = 1;
      }
      if (failures > 0) break;
    }
    if (failures > 0) break;
  }
  if (rank == 0 && failures == 0)
    std::printf("PASS: %d processes on one GPU over %s: %d preset/type runs of %d calls equal "
                "the host run bit for bit\n",
                nranks, transport, compared, options.calls);
  if (agreed) {
    scclCommDestroy(comm);
  } else {
    scclCommAbort(comm);
  }
  return failures == 0 ? 0 : 1;
}

// A rank started by the bootstrap launcher.
int runBootstrapRank(const sccl_test::RankProcess& process, const Options& options) {
  if (cudaSetDevice(0) != cudaSuccess) {
    std::fprintf(stderr, "rank %d: cudaSetDevice(0) failed\n", process.rank);
    return 1;
  }
  scclConfig_t config = transportConfig(options.transport);
  scclComm_t comm = nullptr;
  if (scclCommInitRankConfig(&comm, process.nranks, process.id, process.rank, &config) !=
      scclSuccess) {
    std::fprintf(stderr, "rank %d: communicator over %s failed: %s\n", process.rank,
                 options.transport, scclGetLastError(nullptr));
    return 1;
  }
  return compareEverything(comm, process.rank, process.nranks, options.transport, options);
}

// A rank started by mpirun. Exit 77 when no GPU (every rank sees the same machine).
int runMpiRank(int argc, char** argv, const Options& options) {
#if SCCL_GPU_TEST_WITH_MPI
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int devices = 0;
  int code = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    if (rank == 0) std::printf("SKIP: no usable CUDA device; the mpirun GPU test did not run\n");
    code = 77;
  } else if (cudaSetDevice(0) != cudaSuccess) {
    code = 1;
  } else {
    scclConfig_t config = transportConfig("mpi");
    scclComm_t comm = nullptr;
    if (scclCommInitMpi(&comm, nullptr, &config) != scclSuccess) {
      std::fprintf(stderr, "rank %d: scclCommInitMpi failed: %s\n", rank,
                   scclGetLastError(nullptr));
      code = 1;
    } else {
      code = compareEverything(comm, rank, nranks, "mpi", options);
    }
  }
  MPI_Finalize();
  return code;
#else
  (void)argc;
  (void)options;
  std::fprintf(stderr, "%s: built without MPI; use --ranks N\n", argv[0]);
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
      options.ranks = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--transport") == 0 && i + 1 < argc) {
      options.transport = argv[++i];
    } else if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      options.calls = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--launcher") == 0 && i + 1 < argc &&
               std::strcmp(argv[i + 1], "mpi") == 0) {
      options.mpi_launcher = true;
      ++i;
    } else {
      std::fprintf(stderr, kUsage, argv[0], argv[0]);
      return 2;
    }
  }
  if (options.calls < 1) {
    std::fprintf(stderr, kUsage, argv[0], argv[0]);
    return 2;
  }
  if (options.mpi_launcher) return runMpiRank(argc, argv, options);
  const sccl_test::RankProcess process = sccl_test::rankProcessFromEnvironment(kEnvPrefix);
  if (process.valid) return runBootstrapRank(process, options);
  if (options.ranks < 1) {
    std::fprintf(stderr, kUsage, argv[0], argv[0]);
    return 2;
  }
  // The parent only launches; it checks for a GPU first (its children exec afresh, so the CUDA
  // state of this process does not reach them).
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices < 1) {
    std::printf("SKIP: no usable CUDA device (cudaGetDeviceCount: %s); the multi-process GPU test "
                "did not run\n",
                status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return 77;
  }
  return sccl_test::launchRankProcesses(kEnvPrefix, options.ranks, argv, 240);
}
