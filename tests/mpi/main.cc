// Entry point of the multi-process tests: every rank of `mpiexec -n N` runs the same Catch2
// session, and the ranks agree on the outcome (the worst exit code) before MPI_Finalize, so that
// mpiexec fails when any rank failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpi.h>

int main(int argc, char** argv) {
  // MULTIPLE, as frameworks that drive communication from helper threads request it; the
  // transport also works with less (docs/transports/mpi.md).
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int result = Catch::Session().run(argc, argv);
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
