/* Four ranks as threads of one process: each selects the large entries of its gradient with
 * scclPartitionedSelect and all-reduces the gradient. Build: see examples/CMakeLists.txt. */
#include <pthread.h>
#include <stdio.h>

#include <sparsecoll/sparsecoll.h>

#define NRANKS 4
#define COUNT 1000

static scclUniqueId job_id;
static int rank_failed[NRANKS];

/* A rank thread reports failure by returning: exit() from several threads at once is undefined. */
#define CHECK(call)                                                          \
  do {                                                                       \
    scclResult_t r_ = (call);                                                \
    if (r_ != scclSuccess) {                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, scclGetErrorString(r_), \
              scclGetLastError(NULL));                                       \
      rank_failed[rank] = 1;                                                 \
      return NULL;                                                           \
    }                                                                        \
  } while (0)

static void* run_rank(void* arg) {
  int rank = (int)(size_t)arg;
  float grad[COUNT], sum[COUNT];
  int64_t idx[COUNT];
  size_t nselected = 0;
  scclComm_t comm;
  for (int i = 0; i < COUNT; ++i) grad[i] = (float)((i * 7 + rank) % 100) / 100.0f;
  CHECK(scclCommInitRank(&comm, NRANKS, job_id, rank));
  CHECK(scclPartitionedSelect(grad, COUNT, scclFloat32, 0, COUNT, 0.95, idx, NULL, COUNT,
                              &nselected, NULL));
  CHECK(scclAllReduce(grad, sum, COUNT, scclFloat32, scclSum, comm, NULL));
  printf("rank %d: %zu of %d entries >= 0.95, sum[0] = %.2f\n", rank, nselected, COUNT, sum[0]);
  CHECK(scclCommDestroy(comm));
  return NULL;
}

int main(void) {
  pthread_t threads[NRANKS];
  int failures = 0;
  if (scclGetUniqueId(&job_id) != scclSuccess) {
    fprintf(stderr, "scclGetUniqueId failed: %s\n", scclGetLastError(NULL));
    return 1;
  }
  for (int r = 0; r < NRANKS; ++r) pthread_create(&threads[r], NULL, run_rank, (void*)(size_t)r);
  for (int r = 0; r < NRANKS; ++r) pthread_join(threads[r], NULL);
  for (int r = 0; r < NRANKS; ++r) failures += rank_failed[r];
  return failures == 0 ? 0 : 1;
}
