#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "support/sparse_runs.h"
#include "support/sparse_streams.h"

using namespace sccl_test;

TEST_CASE("explore density", "[.explore]") {
  const size_t count = 131072;
  for (double density : {0.01, 0.001}) {
    const double k = std::floor(density * count);
    const double delta0 = 1 / (2 * std::sqrt(k));
    const double b = delta0 * 1.1 / std::log(1 / density);
    for (int ef : {1, 0}) {
      for (int drift : {0, 1, 2}) {
        for (const char* alg : {"micro", "exdyna"}) {
          auto config = sparseConfig(alg, density);
          config.errorFeedback = ef;
          GradientFill fill = [&](int r, uint64_t t, float* g) {
            double s = drift == 0 ? 1.0 : drift == 1 ? std::pow(1.002, double(t)) : 1 + 0.2 * std::sin(2 * M_PI * t / 200.0);
            float scale = float(s * b / 0.01);
            for (size_t i = 0; i < count; ++i) g[i] = gradientValue(17, r, t, i) * scale;
          };
          StreamRun run = runSparseStream(4, count, config, 300, fill);
          REQUIRE_NO_RANK_FAILURES(run.failures);
          std::printf("d=%g ef=%d drift=%d %-6s err[0,50)=%.4f [50,100)=%.4f [100,200)=%.4f [200,300)=%.4f ratio[50,100)=%.4f thr0=%.5g thr50=%.5g thr100=%.5g thr299=%.5g\n",
                      density, ef, drift, alg, meanAbsDensityError(run, 0, 50), meanAbsDensityError(run, 50, 100),
                      meanAbsDensityError(run, 100, 200), meanAbsDensityError(run, 200, 300), meanDensityRatio(run, 50, 100),
                      run.calls[0][0].stats.threshold, run.calls[50][0].stats.threshold,
                      run.calls[100][0].stats.threshold, run.calls[299][0].stats.threshold);
          std::fflush(stdout);
        }
      }
    }
  }
}
