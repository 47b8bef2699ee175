#pragma once

// grovectl advise: which index variant fits a traced workload, measured on this machine
// (bench/advisor.h does the work; this prints it). No server is involved.

#include <ostream>

#include "bench/advisor.h"
#include "grovectl/commands.h"

namespace grove::grovectl {

// Prints the ranked table, a bar per candidate, why the first won and its `index:` block (or one
// JSON object with -o json). Progress goes to `err`.
int RunAdvise(const bench::AdvisorOptions& options, Output output, std::ostream& out,
              std::ostream& err);

}  // namespace grove::grovectl
