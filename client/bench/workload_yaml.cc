// YAML workload files. The format (docs/grove-bench.md, "Workload files"):
//
//   name: oscillate
//   description: "90% scan / 10% update <-> 10% / 90%"
//   repeat: 2                       # the phase list runs this many times (default 1)
//   phases:
//     - name: read-heavy
//       mix: {scan: 0.9, update: 0.1}
//       distribution: {kind: hotspot, data_fraction: 0.01, op_fraction: 1.0, start: random}
//       scan: {width: 1000000}      # or {length: uniform, min: 1, max: 100}
//       duration: 60                # seconds; or ops: 1000000
//
// `distribution` is a name (uniform, zipfian, latest, hotspot) or a map with `kind` and its
// parameters (theta, scrambled, data_fraction, op_fraction, start). yaml-cpp reports problems
// with exceptions; they are caught here and become InvalidArgument naming the file and field.

#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "bench/workload.h"

namespace grove::bench {
namespace {

Status Unknown(const YAML::Node& map, const std::set<std::string>& known,
               const std::string& where) {
  for (const auto& kv : map) {
    const std::string k = kv.first.as<std::string>();
    if (!known.count(k)) return Status::InvalidArgument(where + ": unknown field '" + k + "'");
  }
  return Status::Ok();
}

StatusOr<DistributionSpec> ParseDistribution(const YAML::Node& n, const std::string& where) {
  using K = DistributionSpec::Kind;
  DistributionSpec d;
  std::string kind;
  if (n.IsScalar()) {
    kind = n.as<std::string>();
  } else if (n.IsMap()) {
    GROVE_RETURN_IF_ERROR(
        Unknown(n, {"kind", "theta", "scrambled", "data_fraction", "op_fraction", "start"}, where));
    if (!n["kind"]) return Status::InvalidArgument(where + ".kind: missing");
    kind = n["kind"].as<std::string>();
    if (n["theta"]) d.theta = n["theta"].as<double>();
    if (n["scrambled"]) d.scrambled = n["scrambled"].as<bool>();
    if (n["data_fraction"]) d.hot_data_fraction = n["data_fraction"].as<double>();
    if (n["op_fraction"]) d.hot_op_fraction = n["op_fraction"].as<double>();
    if (n["start"]) {
      const std::string s = n["start"].as<std::string>();
      d.hot_start = s == "random" ? -1 : n["start"].as<double>();
    }
  } else {
    return Status::InvalidArgument(where + ": expected a name or a map");
  }
  if (kind == "uniform") {
    d.kind = K::kUniform;
  } else if (kind == "zipfian") {
    d.kind = K::kZipfian;
  } else if (kind == "latest") {
    d.kind = K::kLatest;
  } else if (kind == "hotspot") {
    d.kind = K::kHotspot;
  } else {
    return Status::InvalidArgument(where + ": '" + kind +
                                   "' is not uniform, zipfian, latest or hotspot");
  }
  return d;
}

StatusOr<ScanSpec> ParseScan(const YAML::Node& n, const std::string& where) {
  ScanSpec s;
  if (!n.IsMap()) return Status::InvalidArgument(where + ": expected a map");
  GROVE_RETURN_IF_ERROR(Unknown(n, {"length", "min", "max", "width"}, where));
  if (n["width"]) s.width = n["width"].as<uint64_t>();
  if (n["length"]) {
    const std::string k = n["length"].as<std::string>();
    if (k == "uniform") {
      s.kind = ScanSpec::Kind::kUniform;
    } else if (k == "zipfian") {
      s.kind = ScanSpec::Kind::kZipfian;
    } else if (k == "constant") {
      s.kind = ScanSpec::Kind::kConstant;
    } else {
      return Status::InvalidArgument(where + ".length: '" + k +
                                     "' is not uniform, zipfian or constant");
    }
  }
  if (n["min"]) s.min = n["min"].as<uint32_t>();
  if (n["max"]) s.max = n["max"].as<uint32_t>();
  if (s.kind == ScanSpec::Kind::kConstant) {
    const uint32_t length = n["max"] ? s.max : s.min;  // either field names the one length
    s.min = s.max = length;
  }
  return s;
}

StatusOr<PhaseSpec> ParsePhase(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap()) return Status::InvalidArgument(where + ": expected a map");
  GROVE_RETURN_IF_ERROR(
      Unknown(n, {"name", "mix", "distribution", "scan", "ops", "duration"}, where));
  PhaseSpec p;
  p.name = n["name"] ? n["name"].as<std::string>() : "run";
  if (!n["mix"] || !n["mix"].IsMap()) return Status::InvalidArgument(where + ".mix: missing");
  for (const auto& kv : n["mix"]) {
    const std::string op = kv.first.as<std::string>();
    int index = -1;
    for (int t = 0; t < kNumMixOpTypes; ++t) {
      if (op == OpTypeName(static_cast<OpType>(t))) index = t;
    }
    if (index < 0) {
      return Status::InvalidArgument(where + ".mix: '" + op +
                                     "' is not read, update, insert, scan, rmw or delete");
    }
    p.mix[index] = kv.second.as<double>();
  }
  if (n["distribution"]) {
    GROVE_ASSIGN_OR_RETURN(p.distribution,
                           ParseDistribution(n["distribution"], where + ".distribution"));
  }
  if (n["scan"]) {
    GROVE_ASSIGN_OR_RETURN(p.scan, ParseScan(n["scan"], where + ".scan"));
  }
  if (n["ops"]) p.ops = n["ops"].as<uint64_t>();
  if (n["duration"]) p.seconds = n["duration"].as<double>();
  return p;
}

StatusOr<WorkloadSpec> ParseDocument(const YAML::Node& root, const std::string& origin) {
  if (!root.IsMap()) return Status::InvalidArgument(origin + ": expected a map at the top");
  GROVE_RETURN_IF_ERROR(Unknown(root, {"name", "description", "repeat", "load", "phases"}, origin));
  WorkloadSpec w;
  w.name = root["name"] ? root["name"].as<std::string>() : origin;
  if (root["description"]) w.description = root["description"].as<std::string>();
  if (root["load"] && root["load"].as<bool>()) {
    w.is_load = true;
    return w;
  }
  const int repeat = root["repeat"] ? root["repeat"].as<int>() : 1;
  if (repeat < 1) return Status::InvalidArgument(origin + ".repeat: must be at least 1");
  if (!root["phases"] || !root["phases"].IsSequence()) {
    return Status::InvalidArgument(origin + ".phases: missing (a list of phases)");
  }
  std::vector<PhaseSpec> once;
  for (size_t i = 0; i < root["phases"].size(); ++i) {
    GROVE_ASSIGN_OR_RETURN(
        PhaseSpec p, ParsePhase(root["phases"][i], origin + ".phases[" + std::to_string(i) + "]"));
    once.push_back(std::move(p));
  }
  for (int r = 0; r < repeat; ++r) w.phases.insert(w.phases.end(), once.begin(), once.end());
  GROVE_RETURN_IF_ERROR(ValidateWorkload(w));
  return w;
}

}  // namespace

StatusOr<WorkloadSpec> ParseWorkloadYaml(const std::string& text, const std::string& origin) {
  try {
    return ParseDocument(YAML::Load(text), origin);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(origin + ": " + e.what());
  }
}

StatusOr<WorkloadSpec> LoadWorkloadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::FromErrno(errno, "open workload file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseWorkloadYaml(text.str(), path);
}

}  // namespace grove::bench
