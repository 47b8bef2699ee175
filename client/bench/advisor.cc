#include "bench/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

#include <sys/resource.h>

#include "grove/db.h"
#include "grove/logger.h"

#include "bench/key_set.h"
#include "bench/key_space.h"
#include "bench/runner.h"
#include "bench/target.h"
#include "bench/value_gen.h"

namespace grove::bench {
namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A counter's change over a run, 0 when the target does not count it.
double DeltaOr0(const TargetStats& before, const TargetStats& after, const std::string& name) {
  const double d = CounterDelta(before, after, name);
  return std::isnan(d) ? 0 : d;
}

// "k=v;k=v" (BackupInfo::params) as a map.
std::map<std::string, std::string> ParseParams(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find(';', pos), text.size());
    const std::string kv = text.substr(pos, end - pos);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    pos = end + 1;
  }
  return out;
}

// The mean value size of the trace's puts (0 when it has none).
StatusOr<uint32_t> MeanPutBytes(const std::string& path) {
  GROVE_ASSIGN_OR_RETURN(auto reader, trace::TraceReader::Open(path));
  trace::Record r;
  uint64_t n = 0;
  uint64_t bytes = 0;
  while (true) {
    GROVE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    for (const trace::Entry& e : r.entries) {
      if (!e.has_value) continue;
      ++n;
      bytes += e.value_size;
    }
  }
  return n == 0 ? 0u : static_cast<uint32_t>(bytes / n);
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// The source of the data every candidate loads: the restored backup's records, in key order.
class BackupSource {
 public:
  static StatusOr<std::unique_ptr<BackupSource>> Restore(const std::string& backup,
                                                         const std::string& dir,
                                                         uint64_t cache_bytes) {
    Options o;
    o.data_dir = dir;
    o.cache_bytes = cache_bytes;
    o.logger = NewNullLogger();
    RestoreReport report;
    GROVE_RETURN_IF_ERROR(RestoreBackup(backup, o, &report));
    o.index.variant = report.backup.variant;
    o.index.params = ParseParams(report.backup.params);
    auto src = std::unique_ptr<BackupSource>(new BackupSource());
    GROVE_ASSIGN_OR_RETURN(src->db_, Db::Open(o));
    return src;
  }

  // Feeds every record, in order, to `target`'s bulk load; *records counts them.
  Status LoadInto(Target* target, uint64_t* records) {
    GROVE_ASSIGN_OR_RETURN(auto it, db_->NewIterator(ScanOptions()));
    uint64_t n = 0;
    Status s = target->BulkLoad([&](std::string* k, std::string* v) {
      if (!it->Valid()) return false;
      k->assign(it->key().data(), it->key().size());
      v->assign(it->value().data(), it->value().size());
      it->Next();
      ++n;
      return true;
    });
    GROVE_RETURN_IF_ERROR(it->status());
    *records = n;
    return s;
  }

  Status Close() { return db_->Close(); }

 private:
  BackupSource() = default;
  std::unique_ptr<Db> db_;
};

}  // namespace

void RankCandidates(std::vector<CandidateResult>* candidates) {
  std::stable_sort(candidates->begin(), candidates->end(),
                   [](const CandidateResult& a, const CandidateResult& b) {
                     if (a.status.ok() != b.status.ok()) return a.status.ok();
                     return a.ops_per_sec > b.ops_per_sec;
                   });
}

std::string ExplainChoice(const CandidateResult& best, const CandidateResult& next) {
  const double margin = next.ops_per_sec > 0 ? best.ops_per_sec / next.ops_per_sec : 0;
  std::string s = best.target + " ran the trace at " + Fixed(margin, 2) + "x " + next.target +
                  " (" + Fixed(best.ops_per_sec, 0) + " against " + Fixed(next.ops_per_sec, 0) +
                  " calls/s). ";
  // A resource decides when the winner used a fifth less of it, and it mattered.
  auto less = [](double winner, double other, double matters) {
    return other >= matters && winner < 0.8 * other;
  };
  if (less(best.page_reads_per_op, next.page_reads_per_op, 0.05)) {
    s += "Device reads decided it: " + Fixed(best.page_reads_per_op, 3) + " against " +
         Fixed(next.page_reads_per_op, 3) + " page reads per call.";
  } else if (less(best.bytes_written_per_op, next.bytes_written_per_op, 512)) {
    s += "Writes decided it: " + Fixed(best.bytes_written_per_op / 1024, 2) + " against " +
         Fixed(next.bytes_written_per_op / 1024, 2) + " KiB written per call.";
  } else {
    s += "CPU decided it: " + Fixed(best.cpu_us_per_op, 1) + " against " +
         Fixed(next.cpu_us_per_op, 1) + " us of CPU per call, at " +
         Fixed(best.page_reads_per_op, 3) + " and " + Fixed(next.page_reads_per_op, 3) +
         " page reads per call" +
         (best.page_reads_per_op > next.page_reads_per_op * 1.2
              ? " (it read more pages and still ran faster)."
              : ".");
  }
  if (margin < 1.05) {
    s += " Within 5%: on this trace the two are a tie, and either is a sound choice.";
  }
  return s;
}

std::string IndexConfigBlock(const CandidateResult& c) {
  std::string s = "index:\n  variant: " + c.variant + "\n  params:";
  if (c.params.empty()) return s + " {}\n";
  s += "\n";
  for (const auto& [k, v] : c.params) s += "    " + k + ": \"" + v + "\"\n";
  return s;
}

std::vector<std::string> DefaultAdvisorCandidates() {
  return {"embedded:btree", "embedded:btree?prefetch=shortcut",
          "embedded:hln",   "embedded:treeline",
          "embedded:aulid", "embedded:aha"};
}

StatusOr<Advice> Advise(const AdvisorOptions& o,
                        const std::function<void(const std::string&)>& say_fn) {
  auto say = [&](const std::string& line) {
    if (say_fn) say_fn(line);
  };
  const double start = WallSeconds();
  if (o.dir.empty()) return Status::InvalidArgument("advise: no scratch directory");
  if (o.threads == 0) return Status::InvalidArgument("advise: threads must be at least 1");
  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  if (ec) return Status::Internal("create " + o.dir + ": " + ec.message());
  const std::vector<std::string> candidates =
      o.candidates.empty() ? DefaultAdvisorCandidates() : o.candidates;

  // The data and the plan, built once for every candidate.
  ReplayOptions replay_options;
  replay_options.loops = std::max<uint32_t>(1, o.loops);
  std::unique_ptr<BackupSource> backup;
  std::vector<uint64_t> no_keys;
  std::unique_ptr<KeySpace> space;
  uint32_t value_bytes = o.value_bytes;
  if (!o.backup.empty()) {
    say("restoring " + o.backup + " to read its records");
    GROVE_ASSIGN_OR_RETURN(backup,
                           BackupSource::Restore(o.backup, o.dir + "/source",
                                                 std::min<uint64_t>(o.memory_bytes, 64ull << 20)));
    replay_options.keys = ReplayOptions::Keys::kExact;
    space = std::make_unique<KeySpace>(std::vector<uint64_t>(), 0);
  } else {
    if (o.records == 0) return Status::InvalidArgument("advise: --records must be at least 1");
    if (value_bytes == 0) {
      GROVE_ASSIGN_OR_RETURN(value_bytes, MeanPutBytes(o.trace));
      if (value_bytes == 0) value_bytes = 100;
    }
    KeySetSpec spec;
    spec.shape = KeyShape::kTrace;
    spec.file = o.trace;
    GROVE_ASSIGN_OR_RETURN(std::vector<uint64_t> keys, MakeKeySet(spec, o.records, o.seed));
    if (keys.size() < o.records) {
      return Status::InvalidArgument("advise: the trace's keys span room for only " +
                                     std::to_string(keys.size()) + " distinct keys, not " +
                                     std::to_string(o.records) + "; ask for fewer --records");
    }
    space = std::make_unique<KeySpace>(std::move(keys), o.records);
    space->BuildSorted();
    GROVE_ASSIGN_OR_RETURN(const TraceShape shape, ReadTraceShape(o.trace));
    if (shape.has_sketch()) {
      replay_options.keys = ReplayOptions::Keys::kProjected;
      say("the trace's key sketch counts " + std::to_string(shape.sketch_keys) + " keys; the " +
          std::to_string(o.records) + " synthesised follow its shape");
    }
  }
  GROVE_ASSIGN_OR_RETURN(ReplayPlan plan, LoadReplay(o.trace, replay_options,
                                                     backup ? no_keys : space->sorted_loaded()));
  const ValueGen values(std::max<uint32_t>(value_bytes, 1), std::max<uint32_t>(value_bytes, 1),
                        o.seed);

  Advice advice;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateResult c;
    c.target = candidates[i];
    say("[" + std::to_string(i + 1) + "/" + std::to_string(candidates.size()) + "] " + c.target);
    const std::string dir = o.dir + "/candidate-" + std::to_string(i);
    TargetOptions to;
    to.dir = dir;
    to.cache_bytes = o.memory_bytes;
    to.direct_io = o.direct_io;
    to.wal_sync = o.wal_sync;
    c.status = [&]() -> Status {
      GROVE_ASSIGN_OR_RETURN(TargetUri uri, ParseTargetUri(c.target));
      if (uri.scheme != "embedded") {
        return Status::InvalidArgument("advise: candidate " + c.target +
                                       " is not embedded:<variant>");
      }
      c.variant = uri.body;
      c.params = uri.params;
      GROVE_ASSIGN_OR_RETURN(auto target, OpenTarget(c.target, to));
      GROVE_RETURN_IF_ERROR(target->Reset());
      RunSettings settings;
      settings.threads = o.threads;
      settings.progress = o.progress;
      settings.seed = o.seed;
      settings.load_method = LoadMethod::kBulk;
      const double load_start = WallSeconds();
      if (backup) {
        uint64_t n = 0;
        GROVE_RETURN_IF_ERROR(backup->LoadInto(target.get(), &n));
        GROVE_RETURN_IF_ERROR(target->Settle());
        advice.records = n;
      } else {
        Runner loader(target.get(), space.get(), &values, settings);
        GROVE_ASSIGN_OR_RETURN(RunResult load, loader.RunLoad());
        if (load.errors > 0) return Status::Internal("load: " + load.first_error);
        advice.records = space->loaded();
      }
      c.load_seconds = WallSeconds() - load_start;
      Runner runner(target.get(), space.get(), &values, settings);
      ReplayPlan pass = plan;
      double one_pass = 0;  // seconds, at the warm-up's rate
      if (o.warmup_seconds > 0) {
        pass.options.loops = 1;
        pass.options.max_seconds = o.warmup_seconds;
        // A pass number no measured pass has: keys named once vary (replay.h), so the warm-up
        // leaves what the trace makes hot in the caches and not every key it named.
        pass.options.first_loop = 1ull << 40;
        GROVE_ASSIGN_OR_RETURN(RunResult warm, runner.RunReplay(pass));
        if (warm.errors > 0) {
          return Status::Internal(std::to_string(warm.errors) +
                                  " replayed calls failed; the first: " + warm.first_error);
        }
        c.warmup_seconds = warm.total.seconds;
        if (warm.total.ops > 0) {
          one_pass = warm.total.seconds * static_cast<double>(plan.ops.size()) /
                     static_cast<double>(warm.total.ops);
        }
        pass.options.max_seconds = 0;
        pass.options.first_loop = 0;
      }
      pass.options.loops = plan.options.loops;
      if (one_pass > 0 && o.min_seconds > 0) {
        // As many whole passes as min_seconds take at the warm-up's rate (at most a million).
        const double wanted = std::min(std::ceil(o.min_seconds / one_pass), 1e6);
        pass.options.loops = std::max(pass.options.loops, static_cast<uint32_t>(wanted));
      }
      c.loops = pass.options.loops;
      const double cpu0 = CpuSeconds();
      GROVE_ASSIGN_OR_RETURN(RunResult run, runner.RunReplay(pass));
      const double cpu = CpuSeconds() - cpu0;
      advice.replay = *run.replay;
      c.replay_seconds = run.total.seconds;
      c.ops = run.total.ops;
      c.errors = run.errors;
      LatencyHistogram all;
      for (const OpStats& st : run.total.per_op) all.Merge(st.latency);
      c.p50_us = static_cast<double>(all.Percentile(50)) / 1e3;
      c.p99_us = static_cast<double>(all.Percentile(99)) / 1e3;
      const double ops = std::max<double>(1, static_cast<double>(c.ops));
      c.ops_per_sec = c.replay_seconds > 0 ? static_cast<double>(c.ops) / c.replay_seconds : 0;
      c.page_reads_per_op = DeltaOr0(run.before, run.after, "page_reads") / ops;
      c.bytes_written_per_op = DeltaOr0(run.before, run.after, "device_write_bytes") / ops;
      c.cpu_us_per_op = cpu * 1e6 / ops;
      for (const char* g : {"index_inner_bytes", "index_model_bytes", "index_filter_bytes"}) {
        const double v = GaugeValue(run.after, g);
        if (!std::isnan(v)) c.index_memory_bytes += v;
      }
      GROVE_RETURN_IF_ERROR(target->Close());
      if (run.errors > 0) {
        return Status::Internal(std::to_string(run.errors) +
                                " replayed calls failed; the first: " + run.first_error);
      }
      return Status::Ok();
    }();
    if (!c.status.ok()) say("  failed: " + c.status.ToString());
    (void)DestroyDb(dir);
    std::filesystem::remove_all(dir, ec);
    advice.ranked.push_back(std::move(c));
  }
  if (backup) {
    (void)backup->Close();
    backup.reset();
    std::filesystem::remove_all(o.dir + "/source", ec);
  }
  RankCandidates(&advice.ranked);
  const CandidateResult& best = advice.ranked.front();
  if (!best.status.ok()) {
    return Status(best.status.code(),
                  "advise: no candidate ran; the first error: " + best.status.ToString());
  }
  advice.config = IndexConfigBlock(best);
  if (advice.ranked.size() > 1 && advice.ranked[1].status.ok()) {
    advice.why = ExplainChoice(best, advice.ranked[1]);
  } else {
    advice.why = best.target + " is the only candidate that ran.";
  }
  advice.seconds = WallSeconds() - start;
  return advice;
}

}  // namespace grove::bench
