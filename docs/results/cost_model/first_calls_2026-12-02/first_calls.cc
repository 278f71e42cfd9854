// The link probe's sequence on Open MPI alone (docs/results/cost_model/first_calls_2026-12-02/
// command.sh): 6 uint64 all-reduces, an optional warm-up exchange (argv[1]: none, ring, all,
// bulk64k), then 4 timed all-reduces of argv[2] float32 (65536: 256 KiB). Rank 0 prints the slowest
// rank's milliseconds of each phase.
#include <mpi.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* mode = argc > 1 ? argv[1] : "none";
  size_t elems = argc > 2 ? strtoul(argv[2], 0, 10) : 65536;
  uint64_t one = 1, res;
  double t0 = now();
  for (int i = 0; i < 6; ++i) MPI_Allreduce(&one, &res, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  double t1 = now();
  char b = 0, c[64];
  if (!strcmp(mode, "ring")) {
    MPI_Sendrecv(&b, 1, MPI_CHAR, (r + 1) % n, 0, c, 1, MPI_CHAR, (r + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&b, 1, MPI_CHAR, (r + n - 1) % n, 1, c, 1, MPI_CHAR, (r + 1) % n, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (!strcmp(mode, "all")) {
    std::vector<char> s(n), q(n);
    MPI_Alltoall(s.data(), 1, MPI_CHAR, q.data(), 1, MPI_CHAR, MPI_COMM_WORLD);
  } else if (!strcmp(mode, "bulk64k")) {
    std::vector<float> x(16384, 1.f), y(16384);
    MPI_Allreduce(x.data(), y.data(), 16384, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double t2 = now();
  std::vector<float> x(elems, 1.f), y(elems);
  double t[4];
  for (int i = 0; i < 4; ++i) {
    double a = now();
    MPI_Allreduce(x.data(), y.data(), int(elems), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t[i] = now() - a;
  }
  double mine[6] = {t1 - t0, t2 - t1, t[0], t[1], t[2], t[3]}, mx[6];
  MPI_Reduce(mine, mx, 6, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (r == 0) printf("%-8s n=%d small6 %.2f warm %.2f bulk %.2f %.2f %.2f %.2f ms total %.2f\n", mode, n, mx[0]*1e3, mx[1]*1e3, mx[2]*1e3, mx[3]*1e3, mx[4]*1e3, mx[5]*1e3, (mx[0]+mx[1]+mx[2]+mx[3]+mx[4])*1e3);
  MPI_Finalize();
}
