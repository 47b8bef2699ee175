#pragma once

// Number parsing for the command line, URI parameters and workload files.

#include <cstdint>
#include <string>

#include "grove/status.h"

namespace grove::bench {

// "4096", "64KiB", "1.5GiB" (binary suffixes), "10M", "2G", "1e6" (decimal suffixes and
// exponents): what users type for byte sizes and counts alike. `what` names the field in errors.
StatusOr<uint64_t> ParseSize(const std::string& text, const std::string& what);

// "true/false/on/off/1/0/yes/no".
StatusOr<bool> ParseBool(const std::string& text, const std::string& what);

// "1.5 GiB", "512 B": for tables and logs.
std::string HumanBytes(double bytes);

}  // namespace grove::bench
