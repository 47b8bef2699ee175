#include "bench/parse.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace grove::bench {

StatusOr<uint64_t> ParseSize(const std::string& text, const std::string& what) {
  struct Suffix {
    const char* name;
    double factor;
  };
  static constexpr Suffix kSuffixes[] = {
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"K", 1e3},
      {"M", 1e6},
      {"G", 1e9},
      {"T", 1e12},
      {"k", 1e3},
      {"B", 1.0},
      {"", 1.0},
  };
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) {
    return Status::InvalidArgument(what + ": '" + text + "' is not a size or count");
  }
  const std::string suffix(end);
  for (const auto& s : kSuffixes) {
    if (suffix == s.name) {
      const double v = value * s.factor;
      if (v >= 1.8e19) return Status::InvalidArgument(what + ": '" + text + "' is too large");
      return static_cast<uint64_t>(v + 0.5);
    }
  }
  return Status::InvalidArgument(what + ": unknown suffix '" + suffix + "' in '" + text +
                                 "' (use KiB, MiB, GiB, K, M, G)");
}

StatusOr<bool> ParseBool(const std::string& text, const std::string& what) {
  if (text == "true" || text == "on" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "off" || text == "0" || text == "no") return false;
  return Status::InvalidArgument(what + ": '" + text + "' is not true or false");
}

std::string HumanBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace grove::bench
