#pragma once

// Runs grovectl in the test process (grovectl::RunGrovectl) with `args` after the program name:
// returns its exit code, with standard output and error together in *out.

#include <sstream>
#include <string>
#include <vector>

#include "grovectl/app.h"

namespace grove::testing {

inline int RunGrovectlInProcess(const std::vector<std::string>& args, std::string* out) {
  std::vector<const char*> argv = {"grovectl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::istringstream in;
  std::ostringstream o, e;
  const int code = grovectl::RunGrovectl(static_cast<int>(argv.size()), argv.data(), in, o, e);
  *out = o.str() + e.str();
  return code;
}

}  // namespace grove::testing
