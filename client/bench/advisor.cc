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
#include "bench/system_info.h"
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

// A candidate between its load and its last measured slice, with what its slices add up to.
struct LiveCandidate {
  CandidateResult* c = nullptr;
  std::string dir;
  std::unique_ptr<Target> target;
  std::unique_ptr<Runner> runner;
  ReplayPlan pass;               // the measured passes' plan
  std::vector<uint32_t> slices;  // passes per slice
  uint64_t next_pass = 0;        // the number of the next measured pass
  LatencyHistogram latency;
  double cpu_seconds = 0, page_reads = 0, bytes_written = 0;

  // The per-call figures from the sums.
  void Summarise() const {
    const double ops = std::max<double>(1, static_cast<double>(c->ops));
    c->ops_per_sec = c->replay_seconds > 0 ? static_cast<double>(c->ops) / c->replay_seconds : 0;
    c->page_reads_per_op = page_reads / ops;
    c->bytes_written_per_op = bytes_written / ops;
    c->cpu_us_per_op = cpu_seconds * 1e6 / ops;
    c->p50_us = static_cast<double>(latency.Percentile(50)) / 1e3;
    c->p99_us = static_cast<double>(latency.Percentile(99)) / 1e3;
  }
};

// Opens, loads and warms up `l`'s candidate and sets how many passes it will be measured for.
Status Prepare(const AdvisorOptions& o, LiveCandidate* l, const ReplayPlan& plan, KeySpace* space,
               const ValueGen* values, BackupSource* backup, const RunSettings& settings,
               uint64_t* records) {
  CandidateResult& c = *l->c;
  GROVE_ASSIGN_OR_RETURN(TargetUri uri, ParseTargetUri(c.target));
  if (uri.scheme != "embedded") {
    return Status::InvalidArgument("advise: candidate " + c.target + " is not embedded:<variant>");
  }
  c.variant = uri.body;
  c.params = uri.params;
  TargetOptions to;
  to.dir = l->dir;
  to.cache_bytes = o.memory_bytes;
  to.direct_io = o.direct_io;
  to.wal_sync = o.wal_sync;
  GROVE_ASSIGN_OR_RETURN(l->target, OpenTarget(c.target, to));
  GROVE_RETURN_IF_ERROR(l->target->Reset());
  const double load_start = WallSeconds();
  if (backup != nullptr) {
    uint64_t n = 0;
    GROVE_RETURN_IF_ERROR(backup->LoadInto(l->target.get(), &n));
    GROVE_RETURN_IF_ERROR(l->target->Settle());
    *records = n;
  } else {
    Runner loader(l->target.get(), space, values, settings);
    GROVE_ASSIGN_OR_RETURN(RunResult load, loader.RunLoad());
    if (load.errors > 0) return Status::Internal("load: " + load.first_error);
    *records = space->loaded();
  }
  c.load_seconds = WallSeconds() - load_start;
  l->runner = std::make_unique<Runner>(l->target.get(), space, values, settings);
  l->pass = plan;
  double one_pass = 0;  // seconds, at the warm-up's rate
  if (o.warmup_seconds > 0) {
    ReplayPlan warm_plan = plan;
    warm_plan.options.loops = 1;
    warm_plan.options.max_seconds = o.warmup_seconds;
    // A pass number no measured pass has: keys named once vary (replay.h), so the warm-up
    // leaves what the trace makes hot in the caches and not every key it named.
    warm_plan.options.first_loop = 1ull << 40;
    GROVE_ASSIGN_OR_RETURN(RunResult warm, l->runner->RunReplay(warm_plan));
    if (warm.errors > 0) {
      return Status::Internal(std::to_string(warm.errors) +
                              " replayed calls failed; the first: " + warm.first_error);
    }
    c.warmup_seconds = warm.total.seconds;
    if (warm.total.ops > 0) {
      one_pass = warm.total.seconds * static_cast<double>(plan.ops.size()) /
                 static_cast<double>(warm.total.ops);
    }
  }
  c.loops = std::max<uint32_t>(1, plan.options.loops);
  if (one_pass > 0 && o.min_seconds > 0) {
    // As many whole passes as min_seconds take at the warm-up's rate (at most a million).
    const double wanted = std::min(std::ceil(o.min_seconds / one_pass), 1e6);
    c.loops = std::max(c.loops, static_cast<uint32_t>(wanted));
  }
  return Status::Ok();
}

// One measured slice of `passes` passes; adds what it measured to the candidate's sums.
Status MeasureSlice(LiveCandidate* l, uint32_t passes, ReplayFacts* facts) {
  CandidateResult& c = *l->c;
  ReplayPlan slice = l->pass;
  slice.options.loops = passes;
  slice.options.max_seconds = 0;
  slice.options.first_loop = l->next_pass;
  l->next_pass += passes;
  const double cpu0 = CpuSeconds();
  GROVE_ASSIGN_OR_RETURN(RunResult run, l->runner->RunReplay(slice));
  l->cpu_seconds += CpuSeconds() - cpu0;
  *facts = *run.replay;
  c.replay_seconds += run.total.seconds;
  c.ops += run.total.ops;
  c.errors += run.errors;
  c.slice_ops_per_sec.push_back(
      run.total.seconds > 0 ? static_cast<double>(run.total.ops) / run.total.seconds : 0);
  for (const OpStats& st : run.total.per_op) l->latency.Merge(st.latency);
  l->page_reads += DeltaOr0(run.before, run.after, "page_reads");
  l->bytes_written += DeltaOr0(run.before, run.after, "device_write_bytes");
  c.index_memory_bytes = 0;
  for (const char* g : {"index_inner_bytes", "index_model_bytes", "index_filter_bytes"}) {
    const double v = GaugeValue(run.after, g);
    if (!std::isnan(v)) c.index_memory_bytes += v;
  }
  if (run.errors > 0) {
    return Status::Internal(std::to_string(run.errors) +
                            " replayed calls failed; the first: " + run.first_error);
  }
  return Status::Ok();
}

}  // namespace

double CandidateResult::SliceSpread() const {
  if (slice_ops_per_sec.size() < 2 || ops_per_sec <= 0) return 0;
  const auto [lo, hi] = std::minmax_element(slice_ops_per_sec.begin(), slice_ops_per_sec.end());
  return (*hi - *lo) / ops_per_sec;
}

std::vector<uint32_t> SlicePasses(uint32_t passes, uint32_t slices) {
  const uint32_t n = std::max<uint32_t>(1, std::min(passes, std::max<uint32_t>(1, slices)));
  std::vector<uint32_t> out(n, passes / n);
  for (uint32_t i = 0; i < passes % n; ++i) ++out[i];
  return out;
}

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
  } else if (best.slice_ops_per_sec.size() > 1 && next.slice_ops_per_sec.size() > 1) {
    const double best_slowest =
        *std::min_element(best.slice_ops_per_sec.begin(), best.slice_ops_per_sec.end());
    const double next_fastest =
        *std::max_element(next.slice_ops_per_sec.begin(), next.slice_ops_per_sec.end());
    if (best_slowest < next_fastest) {
      s += " Their slices overlap (" + best.target + "'s slowest ran at " + Fixed(best_slowest, 0) +
           " calls/s, " + next.target + "'s fastest at " + Fixed(next_fastest, 0) +
           "): a longer advice (--min-seconds) would separate them.";
    }
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
  advice.ranked.resize(candidates.size());
  const uint32_t slices = std::max<uint32_t>(1, o.slices);
  // Every candidate open at once holds its budget at once.
  advice.interleaved =
      slices > 1 && candidates.size() > 1 &&
      static_cast<double>(o.memory_bytes) * static_cast<double>(candidates.size()) <=
          static_cast<double>(PhysicalMemoryBytes()) / 2;
  RunSettings settings;
  settings.threads = o.threads;
  settings.progress = o.progress;
  settings.seed = o.seed;
  settings.load_method = LoadMethod::kBulk;
  std::vector<std::unique_ptr<LiveCandidate>> live;
  auto finish = [&](LiveCandidate* l) {
    if (l->target) {
      Status closed = l->target->Close();
      if (l->c->status.ok()) l->c->status = closed;
      l->target.reset();
    }
    l->Summarise();
    if (!l->c->status.ok()) say("  " + l->c->target + " failed: " + l->c->status.ToString());
    (void)DestroyDb(l->dir);
    std::filesystem::remove_all(l->dir, ec);
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto l = std::make_unique<LiveCandidate>();
    l->c = &advice.ranked[i];
    l->c->target = candidates[i];
    l->dir = o.dir + "/candidate-" + std::to_string(i);
    say("[" + std::to_string(i + 1) + "/" + std::to_string(candidates.size()) + "] " +
        l->c->target + (advice.interleaved ? ": load and warm up" : ""));
    l->c->status =
        Prepare(o, l.get(), plan, space.get(), &values, backup.get(), settings, &advice.records);
    l->slices = SlicePasses(l->c->loops, advice.interleaved ? slices : 1);
    if (l->c->status.ok() && !advice.interleaved) {
      for (uint32_t passes : l->slices) {
        l->c->status = MeasureSlice(l.get(), passes, &advice.replay);
        if (!l->c->status.ok()) break;
      }
    }
    if (!l->c->status.ok() || !advice.interleaved) {
      finish(l.get());
      continue;
    }
    live.push_back(std::move(l));
  }
  if (advice.interleaved && !live.empty()) {
    say("measuring " + std::to_string(live.size()) + " candidates in up to " +
        std::to_string(slices) + " slices, taken in turns");
  }
  for (uint32_t turn = 0; turn < slices && !live.empty(); ++turn) {
    for (size_t k = 0; k < live.size(); ++k) {
      LiveCandidate* l = live[(turn + k) % live.size()].get();  // the order rotates each turn
      if (!l->c->status.ok() || turn >= l->slices.size()) continue;
      l->c->status = MeasureSlice(l, l->slices[turn], &advice.replay);
    }
  }
  for (auto& l : live) finish(l.get());
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
