/* The NCCL way to create communicators, as a program ported from NCCL does it: rank 0 makes a
 * unique id, MPI_Bcast shares it, every rank calls scclCommInitRank. No config and no
 * SCCL_TRANSPORT: the library picks the transport from where the ranks are (local for threads of
 * one process, UCX or else MPI across processes; docs/transports.md). Then a dense all-reduce
 * and a sparse all-reduce (MiCRO at 1 %) with their statistics, each checked.
 *
 *   mpirun -np 4 init_rank            one rank per process, the id through MPI_Bcast
 *   init_rank --threads 4             four ranks as threads of this process (no MPI call at all)
 *
 * Exit status 0 when every rank's results are right. Build: examples/CMakeLists.txt. */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sparsecoll/sparsecoll.h>

#define COUNT 100000
#define STEPS 8
#define MAX_THREADS 64

static scclUniqueId shared_id; /* threads mode: every thread reads the one id */
static int nranks_total;

#define CHECK(call)                                                                    \
  do {                                                                                 \
    scclResult_t r_ = (call);                                                          \
    if (r_ != scclSuccess) {                                                           \
      fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call,                    \
              scclGetErrorString(r_), scclGetLastError(NULL));                         \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

/* Rank r's gradient entry i at step t: a hash spread over [-0.5, 0.5), so any rank can compute
 * every other rank's value and check the sum. */
static float value(int rank, int i, int step) {
  unsigned h = (unsigned)i * 2654435761u ^ ((unsigned)rank * 40503u + (unsigned)step * 977u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (float)(h & 0xffffu) / 65536.0f - 0.5f;
}

static int run_rank(int rank, int nranks, scclUniqueId id) {
  float* grad = malloc(COUNT * sizeof(float));
  float* sum = malloc(COUNT * sizeof(float));
  if (grad == NULL || sum == NULL) return 1;
  for (int i = 0; i < COUNT; ++i) grad[i] = value(rank, i, 0);

  scclComm_t comm;
  CHECK(scclCommInitRank(&comm, nranks, id, rank));
  const char* transport = NULL;
  CHECK(scclCommTransportName(comm, &transport));

  CHECK(scclAllReduce(grad, sum, COUNT, scclFloat32, scclSum, comm, NULL));
  int wrong = 0;
  for (int i = 0; i < COUNT && !wrong; ++i) {
    float expected = 0;
    for (int r = 0; r < nranks; ++r) expected += value(r, i, 0);
    wrong = fabsf(sum[i] - expected) > 1e-3f * (1.0f + fabsf(expected));
  }

  /* Sparse all-reduce, one call per training step: about 1 % of the entries cross the network
   * once MiCRO's threshold has adapted to the gradients' scale (the first calls start from the
   * paper's 1/(2 sqrt(k)) and send more; docs/algorithms/micro.md). */
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = "micro";
  config.density = 0.01;
  scclSparsifier_t sp;
  CHECK(scclSparsifierCreate(&sp, comm, COUNT, scclFloat32, &config));
  for (int step = 0; step < STEPS; ++step) {
    for (int i = 0; i < COUNT; ++i) grad[i] = value(rank, i, step);
    CHECK(scclSparseAllreduce(grad, sum, COUNT, scclFloat32, scclSum, sp, comm, NULL));
  }
  /* The statistics struct: zero it and set size first (a smaller size is scclInvalidArgument). */
  scclSparseStats_t stats;
  memset(&stats, 0, sizeof(stats));
  stats.size = sizeof(stats);
  CHECK(scclSparsifierGetStats(sp, &stats));
  size_t nonzero = 0;
  for (int i = 0; i < COUNT; ++i) nonzero += sum[i] != 0.0f;
  /* The aggregate holds the k' selected entries and nothing else. */
  if (nonzero > stats.kGlobal || stats.kGlobal == 0) wrong = 1;
  printf("rank %d/%d: transport %s, dense all-reduce %s, sparse step %d: %llu of %d entries "
         "aggregated (density %.4f), %llu bytes sent\n",
         rank, nranks, transport, wrong ? "WRONG" : "right", STEPS,
         (unsigned long long)stats.kGlobal, COUNT, stats.density,
         (unsigned long long)stats.bytesSent);
  CHECK(scclSparsifierDestroy(sp));
  CHECK(scclCommDestroy(comm));
  free(grad);
  free(sum);
  return wrong;
}

struct ThreadRank {
  int rank;
  int failed;
};

static void* thread_main(void* arg) {
  struct ThreadRank* t = arg;
  t->failed = run_rank(t->rank, nranks_total, shared_id);
  return NULL;
}

static int run_threads(int nthreads) {
  pthread_t threads[MAX_THREADS];
  struct ThreadRank ranks[MAX_THREADS];
  int rank = 0; /* for CHECK's message */
  CHECK(scclGetUniqueId(&shared_id));
  nranks_total = nthreads;
  for (int r = 0; r < nthreads; ++r) {
    ranks[r].rank = r;
    ranks[r].failed = 1;
    if (pthread_create(&threads[r], NULL, thread_main, &ranks[r]) != 0) return 1;
  }
  int failed = 0;
  for (int r = 0; r < nthreads; ++r) {
    pthread_join(threads[r], NULL);
    failed |= ranks[r].failed;
  }
  return failed;
}

static int run_mpi(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  scclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (rank == 0 && scclGetUniqueId(&id) != scclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  int failed = run_rank(rank, nranks, id);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--threads") == 0) {
    int n = atoi(argv[2]);
    if (n < 1 || n > MAX_THREADS) {
      fprintf(stderr, "--threads takes 1 .. %d\n", MAX_THREADS);
      return 2;
    }
    return run_threads(n);
  }
  if (argc != 1) {
    fprintf(stderr, "usage: mpirun -np N %s | %s --threads N\n", argv[0], argv[0]);
    return 2;
  }
  return run_mpi(argc, argv);
}
