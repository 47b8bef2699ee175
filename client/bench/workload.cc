#include "bench/workload.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace grove::bench {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

PhaseSpec YcsbPhase(std::array<double, kNumOpTypes> mix, DistributionSpec::Kind kind) {
  PhaseSpec p;
  p.name = "run";
  p.mix = mix;
  p.distribution.kind = kind;
  return p;
}

std::string Percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g%%", f * 100);
  return buf;
}

}  // namespace

const char* OpTypeName(OpType type) {
  switch (type) {
    case OpType::kRead:
      return "read";
    case OpType::kUpdate:
      return "update";
    case OpType::kInsert:
      return "insert";
    case OpType::kScan:
      return "scan";
    case OpType::kRmw:
      return "rmw";
    case OpType::kDelete:
      return "delete";
    case OpType::kBatchRead:
      return "batch_read";
    case OpType::kBatchWrite:
      return "batch_write";
    case OpType::kDeleteRange:
      return "delete_range";
  }
  return "?";
}

std::string DistributionName(const DistributionSpec& d) {
  char buf[96];
  switch (d.kind) {
    case DistributionSpec::Kind::kUniform:
      return "uniform";
    case DistributionSpec::Kind::kZipfian:
      std::snprintf(buf, sizeof(buf), "zipfian(%g%s)", d.theta, d.scrambled ? "" : ",ordered");
      return buf;
    case DistributionSpec::Kind::kLatest:
      std::snprintf(buf, sizeof(buf), "latest(%g)", d.theta);
      return buf;
    case DistributionSpec::Kind::kHotspot:
      return "hotspot(" + Percent(d.hot_data_fraction) + "," + Percent(d.hot_op_fraction) + ")";
  }
  return "?";
}

bool IsBuiltinWorkload(std::string_view name) {
  const std::string n = Lower(name);
  return n == "load" || (n.size() == 1 && n[0] >= 'a' && n[0] <= 'f');
}

StatusOr<WorkloadSpec> BuiltinWorkload(std::string_view name) {
  using K = DistributionSpec::Kind;
  const std::string n = Lower(name);
  WorkloadSpec w;
  w.name = n;
  // mix order: read, update, insert, scan, rmw
  if (n == "load") {
    w.is_load = true;
    w.description = "LOAD: insert every record once";
  } else if (n == "a") {
    w.description = "YCSB A: 50% read / 50% update";
    w.phases.push_back(YcsbPhase({0.5, 0.5, 0, 0, 0}, K::kZipfian));
  } else if (n == "b") {
    w.description = "YCSB B: 95% read / 5% update";
    w.phases.push_back(YcsbPhase({0.95, 0.05, 0, 0, 0}, K::kZipfian));
  } else if (n == "c") {
    w.description = "YCSB C: 100% read";
    w.phases.push_back(YcsbPhase({1, 0, 0, 0, 0}, K::kZipfian));
  } else if (n == "d") {
    w.description = "YCSB D: 95% read latest / 5% insert";
    w.phases.push_back(YcsbPhase({0.95, 0, 0.05, 0, 0}, K::kLatest));
  } else if (n == "e") {
    w.description = "YCSB E: 95% scan (length uniform 1..100) / 5% insert";
    w.phases.push_back(YcsbPhase({0, 0, 0.05, 0.95, 0}, K::kZipfian));
  } else if (n == "f") {
    w.description = "YCSB F: 50% read / 50% read-modify-write";
    w.phases.push_back(YcsbPhase({0.5, 0, 0, 0, 0.5}, K::kZipfian));
  } else {
    return Status::InvalidArgument("unknown workload '" + std::string(name) +
                                   "' (built-ins: load, a, b, c, d, e, f; or a YAML file)");
  }
  return w;
}

Status ValidateWorkload(const WorkloadSpec& w) {
  if (w.is_load) return Status::Ok();
  if (w.phases.empty()) return Status::InvalidArgument(w.name + ": no phases");
  for (size_t i = 0; i < w.phases.size(); ++i) {
    const PhaseSpec& p = w.phases[i];
    const std::string where = w.name + ": phase " + std::to_string(i + 1) + " (" + p.name + ")";
    double sum = 0;
    for (double f : p.mix) {
      if (f < 0 || !std::isfinite(f)) return Status::InvalidArgument(where + ": mix: negative");
      sum += f;
    }
    if (std::abs(sum - 1.0) > 1e-6) {
      return Status::InvalidArgument(where + ": mix proportions sum to " + std::to_string(sum) +
                                     ", not 1");
    }
    if (p.ops > 0 && p.seconds > 0) {
      return Status::InvalidArgument(where + ": give ops or duration, not both");
    }
    if (p.seconds < 0) return Status::InvalidArgument(where + ": duration: negative");
    const DistributionSpec& d = p.distribution;
    if (!(d.theta > 0 && d.theta < 1)) {
      return Status::InvalidArgument(where + ": distribution.theta must be in (0, 1)");
    }
    if (d.kind == DistributionSpec::Kind::kHotspot) {
      if (!(d.hot_data_fraction > 0 && d.hot_data_fraction <= 1)) {
        return Status::InvalidArgument(where + ": distribution.data_fraction must be in (0, 1]");
      }
      if (!(d.hot_op_fraction >= 0 && d.hot_op_fraction <= 1)) {
        return Status::InvalidArgument(where + ": distribution.op_fraction must be in [0, 1]");
      }
      if (d.hot_start >= 1) {
        return Status::InvalidArgument(where + ": distribution.start must be in [0, 1)");
      }
    }
    const ScanSpec& s = p.scan;
    if (s.width == 0 && (s.min < 1 || s.max < s.min)) {
      return Status::InvalidArgument(where + ": scan: need 1 <= min <= max");
    }
  }
  return Status::Ok();
}

}  // namespace grove::bench
