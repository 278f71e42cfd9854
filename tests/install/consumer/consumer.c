/* Links against an installed sparsecoll and runs a one-rank all-reduce. */
#include <sparsecoll/sparsecoll.h>
#include <stdio.h>

int main(void) {
  scclUniqueId id;
  scclComm_t comm;
  float x[3] = {1.0f, 2.0f, 3.0f}, y[3] = {0};
  int version = 0;
  if (scclGetVersion(&version) != scclSuccess) return 1;
  if (scclGetUniqueId(&id) != scclSuccess) return 2;
  if (scclCommInitRank(&comm, 1, id, 0) != scclSuccess) return 3;
  if (scclAllReduce(x, y, 3, scclFloat32, scclSum, comm, NULL) != scclSuccess) return 4;
  if (scclCommDestroy(comm) != scclSuccess) return 5;
  if (y[0] != 1.0f || y[2] != 3.0f) return 6;
  printf("consumer: sparsecoll %d installed and working\n", version);
  return 0;
}
