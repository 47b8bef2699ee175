#include "bench/app.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench/key_set.h"
#include "bench/parse.h"
#include "bench/replay.h"
#include "bench/report.h"
#include "bench/system_info.h"
#include "bench/workload.h"
#include <nlohmann/json.hpp>

namespace grove::bench {
namespace {

using nlohmann::json;

// A generous ceiling on operation rates, used only to reserve keys for inserts in phases that run
// for a duration. Too low, and inserts beyond the reserve become updates (reported as
// inserts_exhausted); too high only costs memory for keys never used.
constexpr double kAssumedMaxOpsPerSecond = 50000;

int Fail(const Status& s) {
  std::fprintf(stderr, "grove-bench: %s\n", s.ToString().c_str());
  return 2;
}

StatusOr<std::vector<WorkloadSpec>> ResolveWorkloads(const BenchOptions& o) {
  std::vector<WorkloadSpec> out;
  for (size_t i = 0; i < o.workloads.size(); ++i) {
    const std::string& name = o.workloads[i];
    WorkloadSpec w;
    if (name.rfind("trace:", 0) == 0) {
      w.name = name;
      w.trace = name.substr(6);
      if (w.trace.empty()) return Status::InvalidArgument("--workloads: trace: names no file");
      out.push_back(std::move(w));
      continue;
    }
    if (IsBuiltinWorkload(name)) {
      GROVE_ASSIGN_OR_RETURN(w, BuiltinWorkload(name));
    } else {
      GROVE_ASSIGN_OR_RETURN(w, LoadWorkloadFile(name));
    }
    if (w.is_load) {
      if (i != 0) return Status::InvalidArgument("--workloads: load must come first");
      out.push_back(w);
      continue;
    }
    std::vector<std::string> dists = o.distributions;
    if (dists.empty()) dists.push_back("");
    const size_t first_copy = out.size();
    for (const std::string& d : dists) {
      WorkloadSpec copy = w;
      for (PhaseSpec& p : copy.phases) {
        if (o.zipf_theta) p.distribution.theta = *o.zipf_theta;
        if (d.empty()) continue;
        using K = DistributionSpec::Kind;
        // YCSB D reads the latest keys by definition; an override to uniform or zipfian would
        // make it B with inserts, so phases on 'latest' keep it unless 'latest' is asked for.
        if (p.distribution.kind == K::kLatest && d != "latest") continue;
        if (d == "uniform") {
          p.distribution.kind = K::kUniform;
        } else if (d == "zipfian") {
          p.distribution.kind = K::kZipfian;
        } else if (d == "latest") {
          p.distribution.kind = K::kLatest;
        } else if (d == "hotspot") {
          p.distribution.kind = K::kHotspot;
        } else {
          return Status::InvalidArgument("--distribution: '" + d +
                                         "' is not uniform, zipfian, latest or hotspot");
        }
      }
      GROVE_RETURN_IF_ERROR(ValidateWorkload(copy));
      // A workload the override leaves unchanged (D keeps 'latest') runs once, not once per entry.
      const bool repeat = std::any_of(out.begin() + static_cast<std::ptrdiff_t>(first_copy),
                                      out.end(), [&](const WorkloadSpec& prev) {
                                        for (size_t p = 0; p < copy.phases.size(); ++p) {
                                          if (DistributionName(prev.phases[p].distribution) !=
                                              DistributionName(copy.phases[p].distribution)) {
                                            return false;
                                          }
                                        }
                                        return true;
                                      });
      if (!repeat) out.push_back(std::move(copy));
    }
  }
  return out;
}

uint64_t EstimateInserts(const BenchOptions& o, const std::vector<WorkloadSpec>& workloads) {
  double total = 0;
  for (const auto& w : workloads) {
    if (w.is_load || w.phases.empty()) continue;
    for (size_t i = 0; i < w.phases.size(); ++i) {
      const PhaseSpec& p = w.phases[i];
      const double share = p.mix[static_cast<int>(OpType::kInsert)];
      double ops = static_cast<double>(p.ops);
      if (p.seconds > 0) ops = p.seconds * kAssumedMaxOpsPerSecond;
      if (p.ops == 0 && p.seconds == 0) {
        ops = o.duration > 0 ? o.duration * kAssumedMaxOpsPerSecond : static_cast<double>(o.ops);
      }
      if (i == 0) {
        ops += static_cast<double>(o.warmup_ops) + o.warmup_seconds * kAssumedMaxOpsPerSecond;
      }
      total += share * ops;
    }
  }
  return static_cast<uint64_t>(total * 1.1);
}

std::string StatePath(const BenchOptions& o) {
  return o.target_options.dir + "/grove-bench-state.json";
}

json StateJson(const BenchOptions& o, const std::string& target, uint64_t capacity,
               uint64_t inserted) {
  return json{{"target", target},     {"keys", o.keys},           {"key_order", o.key_order},
              {"seed", o.seed},       {"records", o.records},     {"capacity", capacity},
              {"inserted", inserted}, {"value_min", o.value_min}, {"value_max", o.value_max}};
}

Status SaveState(const BenchOptions& o, const json& state) {
  const std::string tmp = StatePath(o) + ".tmp";
  {
    std::ofstream out(tmp);
    out << state.dump(2) << "\n";
    if (!out) return Status::FromErrno(errno, "write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, StatePath(o), ec);
  if (ec) return Status::Internal("rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

// Reads the state a previous LOAD left, checking it describes the same data.
Status LoadState(const BenchOptions& o, const std::string& target, uint64_t* capacity,
                 uint64_t* inserted) {
  std::ifstream in(StatePath(o));
  if (!in) {
    return Status::FailedPrecondition(
        "no loaded data in " + o.target_options.dir +
        " (no grove-bench-state.json): put 'load' first in --workloads");
  }
  json s = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (s.is_discarded()) return Status::DataLoss(StatePath(o) + ": not JSON");
  // The target's parameters may differ from the load's (prefetch, cache shares, ...): the engine
  // itself refuses to reopen with other layout parameters. The target and variant must match.
  auto base = [](const json& t) {
    const std::string text = t.is_string() ? t.get<std::string>() : t.dump();
    return json(text.substr(0, text.find('?')));
  };
  for (const char* field : {"keys", "key_order", "seed", "records", "target"}) {
    json mine = StateJson(o, target, 0, 0)[field];
    json theirs = s.contains(field) ? s[field] : json();
    if (std::string_view(field) == "target") {
      mine = base(mine);
      if (!theirs.is_null()) theirs = base(theirs);
    }
    if (theirs.is_null() || theirs != mine) {
      return Status::FailedPrecondition(StatePath(o) + ": the data was loaded with " + field + "=" +
                                        (s.contains(field) ? s[field].dump() : "?") +
                                        ", this run asks for " + mine.dump() +
                                        "; run load again or match the options");
    }
  }
  *capacity = s.value("capacity", o.records);
  *inserted = s.value("inserted", uint64_t{0});
  return Status::Ok();
}

int PrintTableFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(Status::FromErrno(errno, "open " + path));
  PrintTableHeader(stdout);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "grove-bench: %s: skipping a line that is not JSON\n", path.c_str());
      continue;
    }
    PrintTableRow(stdout, j);
  }
  return 0;
}

}  // namespace

int RunBench(const BenchOptions& o) {
  if (!o.print_table.empty()) return PrintTableFile(o.print_table);

  auto workloads = ResolveWorkloads(o);
  if (!workloads.ok()) return Fail(workloads.status());
  const bool has_load = !workloads->empty() && (*workloads)[0].is_load;

  std::error_code ec;
  std::filesystem::create_directories(o.target_options.dir, ec);
  if (ec) return Fail(Status::Internal("create " + o.target_options.dir + ": " + ec.message()));

  auto key_spec = ParseKeySetSpec(o.keys);
  if (!key_spec.ok()) return Fail(key_spec.status());
  key_spec->sorted_order = o.key_order == "sorted";

  const auto open_start = std::chrono::steady_clock::now();
  auto target = OpenTarget(o.target, o.target_options);
  if (!target.ok()) return Fail(target.status());
  const double open_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - open_start).count();
  const uint64_t open_peak_rss = ReadMemoryUse().peak_rss_bytes;  // before the keys are made
  const std::string uri = (*target)->Uri();
  const std::string scheme = uri.substr(0, uri.find_first_of(":?"));
  const bool stateless = scheme == "device" || scheme == "grpc-noop";

  // A replay with exact keys runs on whatever the target holds; everything else runs on what a
  // LOAD of this or an earlier grove-bench left (its state file says what that was).
  const bool needs_state =
      std::any_of(workloads->begin(), workloads->end(), [&](const WorkloadSpec& w) {
        return !w.is_load && (w.trace.empty() || o.replay.keys != ReplayOptions::Keys::kExact);
      });
  for (const WorkloadSpec& w : *workloads) {
    if (!w.trace.empty() && scheme == "device") {
      return Fail(Status::InvalidArgument("--workloads " + w.name +
                                          ": the device target has no keys to replay a trace on"));
    }
  }
  uint64_t capacity = 0;
  uint64_t inserted = 0;
  const uint64_t budget =
      o.insert_budget ? *o.insert_budget : EstimateInserts(o, *workloads) + o.records / 10;
  bool has_state = !stateless;
  if (has_load || stateless) {
    capacity = o.records + budget;
  } else if (!needs_state) {
    capacity = o.records;
    has_state = false;  // nothing loaded by grove-bench here: write no state file either
  } else if (Status s = LoadState(o, uri, &capacity, &inserted); !s.ok()) {
    return Fail(s);
  }

  std::fprintf(stderr, "grove-bench: %s: %llu %s keys (%llu reserved for inserts), %s values\n",
               uri.c_str(), static_cast<unsigned long long>(o.records), o.keys.c_str(),
               static_cast<unsigned long long>(capacity - o.records),
               o.value_min == o.value_max
                   ? std::to_string(o.value_min).c_str()
                   : (std::to_string(o.value_min) + "-" + std::to_string(o.value_max)).c_str());
  std::unique_ptr<KeySpace> space_owner;
  if (key_spec->shape == KeyShape::kGapped) {
    space_owner = std::make_unique<KeySpace>(
        GappedKeys(o.records, capacity, key_spec->sorted_order, o.seed), o.records, inserted);
  } else {
    auto keys = MakeKeySet(*key_spec, capacity, o.seed);
    if (!keys.ok()) return Fail(keys.status());
    if (keys->size() < o.records) {
      return Fail(Status::InvalidArgument("--records " + std::to_string(o.records) +
                                          ": the key set " + o.keys + " has only " +
                                          std::to_string(keys->size()) + " unique keys"));
    }
    capacity = keys->size();
    space_owner = std::make_unique<KeySpace>(std::move(keys).value(), o.records, inserted);
  }
  KeySpace& space = *space_owner;
  const ValueGen values(o.value_min, o.value_max, o.seed);

  ReportContext ctx;
  ctx.options = &o;
  ctx.target_uri = uri;
  ctx.machine = DescribeMachine(o.target_options.dir);
  ctx.data_bytes = DataBytes(o);
  ctx.cache_bytes = o.target_options.cache_bytes;
  ctx.key_capacity = capacity;
  ctx.open_seconds = open_seconds;
  ctx.open_peak_rss_bytes = open_peak_rss;

  RunSettings settings;
  settings.threads = o.threads;
  settings.default_ops = o.duration > 0 ? 0 : o.ops;
  settings.default_seconds = o.duration;
  settings.warmup_ops = o.warmup_ops;
  settings.warmup_seconds = o.warmup_seconds;
  settings.rate = o.rate;
  settings.timeline_interval = o.timeline_interval;
  settings.timeline_counters = o.timeline_counters;
  settings.progress = o.progress == "on";
  settings.seed = o.seed;
  settings.load_method = o.load_method;
  settings.batch_size = o.batch_size;
  settings.settle_after_load = o.settle_after_load;
  RunSettings load_settings = settings;
  load_settings.threads = o.load_threads > 0 ? o.load_threads : o.threads;
  Runner load_runner(target->get(), &space, &values, load_settings);
  Runner runner(target->get(), &space, &values, settings);

  FILE* json_out = nullptr;
  std::unique_ptr<FILE, int (*)(FILE*)> json_file(nullptr, &std::fclose);
  if (o.json_path == "-") {
    json_out = stdout;
  } else if (!o.json_path.empty()) {
    json_file.reset(std::fopen(o.json_path.c_str(), "a"));
    if (!json_file) return Fail(Status::FromErrno(errno, "open --json " + o.json_path));
    json_out = json_file.get();
  }
  FILE* table_out = json_out == stdout ? stderr : stdout;
  if (o.table) PrintTableHeader(table_out);

  int exit_code = 0;
  std::vector<const WorkloadSpec*> runs;
  for (const WorkloadSpec& w : *workloads) {
    runs.push_back(&w);
    if (w.is_load && o.age_updates > 0 && !stateless) runs.push_back(nullptr);  // AGE
  }
  if (o.age_updates > 0 && !has_load) {
    return Fail(
        Status::InvalidArgument("--age: ages what LOAD loaded; put 'load' first in "
                                "--workloads"));
  }
  for (const WorkloadSpec* wp : runs) {
    const bool age = wp == nullptr;
    const WorkloadSpec& w = age ? (*workloads)[0] : *wp;
    StatusOr<RunResult> run = Status::Internal("not run");
    const bool peak_reset = ResetPeakRss();
    if (age) {
      ctx.threads = load_settings.threads;
      run = load_runner.RunAge(o.age_updates);
    } else if (w.is_load) {
      if (Status s = (*target)->Reset(); !s.ok()) return Fail(s);
      if (!stateless) std::filesystem::remove(StatePath(o), ec);
      ctx.threads = load_settings.threads;
      run = load_runner.RunLoad();
    } else if (!w.trace.empty()) {
      ctx.threads = settings.threads;
      if (o.replay.keys != ReplayOptions::Keys::kExact) space.BuildSorted();
      StatusOr<ReplayPlan> plan = LoadReplay(w.trace, o.replay, space.sorted_loaded());
      if (!plan.ok()) return Fail(plan.status());
      run = runner.RunReplay(*plan);
    } else {
      ctx.threads = settings.threads;
      run = runner.RunWorkload(w);
    }
    if (!run.ok()) return Fail(run.status());
    const MemoryUse memory = ReadMemoryUse();
    run->rss_bytes = memory.rss_bytes;
    run->peak_rss_bytes = memory.peak_rss_bytes;
    run->peak_rss_reset = peak_reset;
    ctx.target_config = (*target)->Config();
    const json j = RunToJson(*run, ctx);
    if (json_out != nullptr) {
      std::fprintf(json_out, "%s\n", j.dump().c_str());
      std::fflush(json_out);
    }
    if (o.table) {
      PrintTableRow(table_out, j);
      std::fflush(table_out);
    }
    if (run->errors > 0) {
      exit_code = 1;
      std::fprintf(stderr, "grove-bench: %s: %llu operations failed; the first: %s\n",
                   age ? "age" : w.name.c_str(), static_cast<unsigned long long>(run->errors),
                   run->first_error.c_str());
      if (w.is_load || age) {
        // Every later figure would measure a partial data set (reads of keys never loaded are
        // misses, and fast ones). No state is saved, so a later run without load refuses too.
        std::fprintf(stderr,
                     "grove-bench: the load failed, so the workloads after it are not run\n");
        (void)(*target)->Close();
        return 1;
      }
    }
    if (run->inserts_exhausted > 0) {
      std::fprintf(stderr,
                   "grove-bench: %llu inserts ran out of reserved keys and became updates; raise "
                   "--insert-budget at load time\n",
                   static_cast<unsigned long long>(run->inserts_exhausted));
    }
    if (has_state) {
      if (Status s = SaveState(o, StateJson(o, uri, capacity, space.inserted())); !s.ok()) {
        return Fail(s);
      }
    }
  }
  if (Status s = (*target)->Close(); !s.ok()) return Fail(s);
  return exit_code;
}

}  // namespace grove::bench
