// grove-bench: see app.h and docs/grove-bench.md.

#include "bench/app.h"
#include "bench/bench_options.h"

int main(int argc, char** argv) {
  int exit_code = 0;
  auto options = grove::bench::ParseCommandLine(argc, argv, &exit_code);
  if (!options) return exit_code;
  return grove::bench::RunBench(*options);
}
