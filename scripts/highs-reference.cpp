// Solves the LP relaxation of each model file named on the command line with the options of
// the Go BenchmarkLPFile (./solver) and prints, per file, the objective, the simplex
// iterations and the time Highs::run took by a steady clock (HiGHS's own run time has 10 ms
// steps). Built and run by highs-reference.sh against a native build of HiGHS.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "Highs.h"

int main(int argc, char** argv) {
  const char* presolve = std::getenv("PRESOLVE");
  for (int a = 1; a < argc; a++) {
    Highs h;
    h.setOptionValue("output_flag", false);
    h.setOptionValue("threads", 1);
    h.setOptionValue("parallel", "off");
    h.setOptionValue("presolve", presolve != nullptr && *presolve != 0 ? presolve : "off");
    h.setOptionValue("solver", "simplex");
    h.setOptionValue("solve_relaxation", true);
    if (h.readModel(argv[a]) == HighsStatus::kError) {
      std::fprintf(stderr, "%s: HiGHS cannot read the model\n", argv[a]);
      return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    HighsStatus st = h.run();
    auto t1 = std::chrono::steady_clock::now();
    if (st == HighsStatus::kError) {
      std::fprintf(stderr, "%s: HiGHS run failed\n", argv[a]);
      return 1;
    }
    const HighsInfo& info = h.getInfo();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    std::printf("%s: objective %.10g, %d iterations, run %.1f ms, %.2f µs/iter\n", argv[a],
                info.objective_function_value, info.simplex_iteration_count, ms,
                1e3 * ms / (info.simplex_iteration_count > 0 ? info.simplex_iteration_count : 1));
  }
  return 0;
}
