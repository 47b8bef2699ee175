#include "bench/report.h"

#include <chrono>
#include <cmath>
#include <ctime>

#include "bench/key_set.h"

namespace grove::bench {
namespace {

using nlohmann::json;

double Round(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

double Us(uint64_t nanos) { return Round(static_cast<double>(nanos) / 1000.0, 2); }

json OpJson(const OpStats& s, double seconds) {
  json j;
  j["count"] = s.count();
  j["ok"] = s.ok;
  j["not_found"] = s.not_found;
  j["errors"] = s.errors;
  if (s.scan_entries > 0) j["scan_entries"] = s.scan_entries;
  j["throughput"] = seconds > 0 ? Round(static_cast<double>(s.count()) / seconds, 1) : 0;
  j["mean_us"] = Round(s.latency.Mean() / 1000.0, 2);
  j["p50_us"] = Us(s.latency.Percentile(50));
  j["p95_us"] = Us(s.latency.Percentile(95));
  j["p99_us"] = Us(s.latency.Percentile(99));
  j["p999_us"] = Us(s.latency.Percentile(99.9));
  j["max_us"] = Us(s.latency.max());
  return j;
}

json PhaseJson(const PhaseResult& p) {
  json j;
  j["name"] = p.name;
  j["distribution"] = p.distribution;
  j["ops"] = p.ops;
  j["seconds"] = Round(p.seconds, 3);
  j["throughput"] = p.seconds > 0 ? Round(static_cast<double>(p.ops) / p.seconds, 1) : 0;
  OpStats all;
  json per_op = json::object();
  for (int i = 0; i < kNumOpTypes; ++i) {
    if (p.per_op[i].count() == 0) continue;
    per_op[OpTypeName(static_cast<OpType>(i))] = OpJson(p.per_op[i], p.seconds);
    all.Merge(p.per_op[i]);
  }
  j["ops_by_type"] = per_op;
  j["all"] = OpJson(all, p.seconds);
  return j;
}

// NaN (a counter the target does not have) becomes null in JSON.
json Num(double v, int digits = 4) {
  return std::isnan(v) ? json(nullptr) : json(Round(v, digits));
}

std::string NowIso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Fmt(const char* format, double v) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

double Get(const json& j, const char* a, const char* b = nullptr, const char* c = nullptr) {
  const json* p = &j;
  for (const char* k : {a, b, c}) {
    if (k == nullptr) break;
    if (!p->is_object() || !p->contains(k)) return NAN;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : NAN;
}

}  // namespace

nlohmann::json RunToJson(const RunResult& run, const ReportContext& ctx) {
  const BenchOptions& o = *ctx.options;
  json j;
  j["schema"] = "grove-bench/1";
  j["time"] = NowIso();
  if (!o.label.empty()) j["label"] = o.label;
  j["target"] = ctx.target_uri;
  j["target_config"] = ctx.target_config;
  j["workload"] = run.workload;
  j["description"] = run.description;
  j["distribution"] = run.distribution;
  json cfg;
  cfg["threads"] = ctx.threads;
  cfg["records"] = o.records;
  cfg["key_set"] = o.keys;
  cfg["key_order"] = o.key_order;
  cfg["key_capacity"] = ctx.key_capacity;
  cfg["key_bytes"] = 8;
  cfg["value_bytes"] = o.value_min == o.value_max
                           ? json(o.value_min)
                           : json(std::to_string(o.value_min) + "-" + std::to_string(o.value_max));
  cfg["data_bytes"] = ctx.data_bytes;
  cfg["cache_bytes"] = ctx.cache_bytes;
  cfg["cache_fraction_of_data"] = Round(static_cast<double>(ctx.cache_bytes) / ctx.data_bytes, 4);
  cfg["direct_io"] = o.target_options.direct_io;
  cfg["io_backend"] = o.target_options.io_backend;
  cfg["wal_sync"] = o.target_options.wal_sync;
  cfg["seed"] = o.seed;
  cfg["ops_per_phase"] = o.duration > 0 ? json(nullptr) : json(o.ops);
  cfg["seconds_per_phase"] = o.duration > 0 ? json(o.duration) : json(nullptr);
  cfg["warmup_seconds"] = o.warmup_seconds;
  cfg["warmup_ops"] = o.warmup_ops;
  cfg["rate"] = o.rate;
  if (run.is_load) {
    cfg["load_method"] = run.load_method;
    if (run.load_method == "batch") cfg["batch_size"] = o.batch_size;
  }
  cfg["command"] = o.command_line;
  j["config"] = cfg;
  j["machine"] = ctx.machine;

  const double ops = static_cast<double>(run.total.ops);
  const double seconds = run.total.seconds + run.settle_seconds;
  j["ops"] = run.total.ops;
  j["seconds"] = Round(seconds, 3);
  j["throughput"] = seconds > 0 ? Round(ops / seconds, 1) : 0;
  if (run.is_load) {
    // The headline includes the settle (checkpoint, or flush + compactions): deferred work is
    // part of the load's cost. The figure without it is kept for reference.
    j["settle_seconds"] = Round(run.settle_seconds, 3);
    j["throughput_before_settle"] = run.total.seconds > 0 ? Round(ops / run.total.seconds, 1) : 0;
    if (run.load_method == "batch") j["latency_unit"] = "batch";
  }
  j["memory"] = json{{"rss_bytes", run.rss_bytes},
                     {"peak_rss_bytes", run.peak_rss_bytes},
                     {"peak_of", run.peak_rss_reset ? "run" : "process"}};
  j["target_open"] =
      json{{"seconds", Round(ctx.open_seconds, 3)}, {"peak_rss_bytes", ctx.open_peak_rss_bytes}};
  json phase = PhaseJson(run.total);
  j["latency_us"] = phase["all"];
  j["ops_by_type"] = phase["ops_by_type"];
  if (run.phases.size() > 1) {
    json phases = json::array();
    for (const auto& p : run.phases) phases.push_back(PhaseJson(p));
    j["phases"] = phases;
  }

  if (run.replay) {
    const ReplayFacts& f = *run.replay;
    j["replay"] = json{{"file", f.file},
                       {"keys", f.keys},
                       {"timing", f.timing},
                       {"speed", f.speed},
                       {"loops", f.loops},
                       {"sample", static_cast<double>(f.sample_ppm) / 1e6},
                       {"traced_records", f.traced_records},
                       {"skipped", f.skipped},
                       {"calls", f.calls},
                       {"distinct_keys", f.distinct_keys},
                       {"absent_keys", f.absent_keys},
                       {"varied_keys", f.varied_keys},
                       {"truncated", f.truncated}};
  }

  const TargetStats& b = run.before;
  const TargetStats& a = run.after;
  auto per_op = [&](const std::string& name) {
    return ops > 0 ? CounterDelta(b, a, name) / ops : NAN;
  };
  json io;
  io["page_reads_per_op"] = Num(per_op("page_reads"));
  io["page_writes_per_op"] = Num(per_op("page_writes"));
  io["bytes_read_per_op"] = Num(per_op("device_read_bytes"), 1);
  io["bytes_written_per_op"] = Num(per_op("device_write_bytes"), 1);
  j["io"] = io;
  const double hits = CounterDelta(b, a, "cache_hits");
  const double misses = CounterDelta(b, a, "cache_misses");
  j["cache_hit_ratio"] = Num(hits + misses > 0 ? hits / (hits + misses) : NAN);

  json index;
  for (const char* g :
       {"index_height", "index_inner_pages", "index_leaf_pages", "index_inner_bytes",
        "index_model_bytes", "index_filter_bytes", "index_entries"}) {
    const double v = GaugeValue(a, g);
    if (!std::isnan(v)) index[std::string(g).substr(6)] = v;
  }
  double memory = 0;
  for (const char* g : {"index_inner_bytes", "index_model_bytes", "index_filter_bytes"}) {
    const double v = GaugeValue(a, g);
    if (!std::isnan(v)) memory += v;
  }
  index["memory_bytes"] = memory;
  j["index"] = index;

  json counters = json::object();
  for (const auto& [name, v] : a.counters) counters[name] = Num(CounterDelta(b, a, name), 1);
  j["counters"] = counters;
  json gauges = json::object();
  for (const auto& [name, v] : a.gauges) gauges[name] = Num(v, 6);
  j["gauges"] = gauges;

  if (!run.timeline.empty()) {
    json tl = json::array();
    for (const auto& p : run.timeline)
      tl.push_back({Round(p.t, 2), Round(p.ops_per_sec, 1), p.phase});
    j["timeline"] = tl;  // [seconds, ops/s, phase index]
    json detail = json::array();
    for (const auto& p : run.timeline) {
      json d = {{"t", Round(p.t, 2)},
                {"ops_per_sec", Round(p.ops_per_sec, 1)},
                {"p50_us", Round(p.p50_us, 1)},
                {"p95_us", Round(p.p95_us, 1)},
                {"p99_us", Round(p.p99_us, 1)}};
      if (!p.counters.empty()) {
        json c = json::object();
        for (const auto& [name, v] : p.counters) c[name] = v;
        d["counters"] = c;
      }
      detail.push_back(d);
    }
    j["timeline_detail"] = detail;
  }
  j["errors"] = run.errors;
  if (!run.first_error.empty()) j["first_error"] = run.first_error;
  if (run.inserts_exhausted > 0) j["inserts_exhausted"] = run.inserts_exhausted;
  return j;
}

void PrintTableHeader(FILE* out) {
  std::fprintf(out, "%-28s %-5s %-14s %4s %11s %9s %9s %9s %7s %7s %9s %9s %6s %9s %7s\n", "target",
               "work", "distribution", "thr", "ops/s", "p50 us", "p99 us", "p999 us", "rd/op",
               "wr/op", "KiB rd/op", "KiB wr/op", "hit%", "not found", "errors");
}

void PrintTableRow(FILE* out, const nlohmann::json& j) {
  std::string target = j.value("target", "?");
  if (target.size() > 28) target = target.substr(0, 27) + "~";
  std::string dist = j.value("distribution", "-");
  if (dist.size() > 14) dist = dist.substr(0, 13) + "~";
  const double threads = Get(j, "config", "threads");
  const json& all = j.contains("latency_us") ? j["latency_us"] : json::object();
  std::fprintf(out, "%-28s %-5s %-14s %4s %11s %9s %9s %9s %7s %7s %9s %9s %6s %9s %7s\n",
               target.c_str(), j.value("workload", "?").substr(0, 5).c_str(), dist.c_str(),
               Fmt("%.0f", threads).c_str(), Fmt("%.0f", Get(j, "throughput")).c_str(),
               Fmt("%.1f", Get(j, "latency_us", "p50_us")).c_str(),
               Fmt("%.1f", Get(j, "latency_us", "p99_us")).c_str(),
               Fmt("%.1f", Get(j, "latency_us", "p999_us")).c_str(),
               Fmt("%.3f", Get(j, "io", "page_reads_per_op")).c_str(),
               Fmt("%.3f", Get(j, "io", "page_writes_per_op")).c_str(),
               Fmt("%.2f", Get(j, "io", "bytes_read_per_op") / 1024).c_str(),
               Fmt("%.2f", Get(j, "io", "bytes_written_per_op") / 1024).c_str(),
               Fmt("%.1f", Get(j, "cache_hit_ratio") * 100).c_str(),
               std::to_string(all.value("not_found", uint64_t{0})).c_str(),
               std::to_string(j.value("errors", uint64_t{0})).c_str());
  const json& by_type = j.contains("ops_by_type") ? j["ops_by_type"] : json::object();
  if (by_type.size() > 1) {
    for (const auto& [name, s] : by_type.items()) {
      char label[48];
      std::snprintf(label, sizeof(label), "  %s (%llu)", name.c_str(),
                    static_cast<unsigned long long>(s.value("count", uint64_t{0})));
      std::fprintf(out, "%-28s %-5s %-14s %4s %11s %9s %9s %9s\n", label, "", "", "",
                   Fmt("%.0f", Get(s, "throughput")).c_str(), Fmt("%.1f", Get(s, "p50_us")).c_str(),
                   Fmt("%.1f", Get(s, "p99_us")).c_str(), Fmt("%.1f", Get(s, "p999_us")).c_str());
    }
  }
  if (j.value("errors", uint64_t{0}) > 0) {
    std::fprintf(out, "  errors: %llu, first: %s\n",
                 static_cast<unsigned long long>(j["errors"].get<uint64_t>()),
                 j.value("first_error", "").c_str());
  }
}

}  // namespace grove::bench
