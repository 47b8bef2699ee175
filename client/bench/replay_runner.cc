// Runner::RunReplay: a trace (replay.h) as one measured phase, closed loop or at the trace's
// own timing.

#include <algorithm>
#include <filesystem>
#include <limits>
#include <thread>

#include "bench/runner_shared.h"

namespace grove::bench {
namespace {

// Values are cut from one buffer of random bytes at an offset that varies per operation, so that
// no target can compress or deduplicate them.
constexpr size_t kValueOffsets = 4096;

std::string RandomBytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng.Next() & 0xff);
  return s;
}

// Runs one replayed call on `session`. *found: a read found its key (a batch: any of them).
// `keys`: the call's keys in this pass (PassKeys).
Status RunOp(const ReplayOp& op, const std::vector<std::string>& keys, Session* session,
             const std::string& values, Rng& rng, bool* found, uint64_t* entries) {
  auto value = [&](int64_t size) {
    return Slice(values.data() + rng.Uniform(kValueOffsets), static_cast<size_t>(size));
  };
  std::string read_value;
  uint64_t n = 0;
  // A conditional write reads what its precondition looks at first, as groved does.
  if (op.conditional) {
    if (keys.size() == 1) {
      GROVE_RETURN_IF_ERROR(session->Read(keys[0], &read_value, found));
    } else {
      GROVE_RETURN_IF_ERROR(session->BatchRead(keys, &n));
    }
    *found = true;
    if (!op.apply) return Status::Ok();
  }
  const uint32_t limit =
      static_cast<uint32_t>(std::min<uint64_t>(op.limit, std::numeric_limits<uint32_t>::max() - 1));
  switch (op.type) {
    case OpType::kRead:
      return session->Read(keys[0], &read_value, found);
    case OpType::kBatchRead:
      GROVE_RETURN_IF_ERROR(session->BatchRead(keys, &n));
      *found = n > 0;
      return Status::Ok();
    case OpType::kUpdate:
    case OpType::kInsert:
      return session->Write(keys[0], value(op.values[0]));
    case OpType::kDelete:
      return session->Delete(keys[0]);
    case OpType::kBatchWrite: {
      std::vector<Session::Mutation> m(keys.size());
      for (size_t i = 0; i < keys.size(); ++i) {
        m[i].key = keys[i];
        m[i].is_delete = op.values[i] < 0;
        if (!m[i].is_delete) m[i].value = std::string(value(op.values[i]));
      }
      return session->WriteMutations(m);
    }
    case OpType::kDeleteRange:
      return session->DeleteRange(keys[0], op.end, op.limit, entries);
    case OpType::kScan:
      return op.reverse ? session->ReverseScan(keys[0], op.end, limit, entries)
                        : session->Scan(keys[0], op.end, limit, entries);
    case OpType::kRmw:
      break;
  }
  return Status::Internal(std::string("a replay has no ") + OpTypeName(op.type));
}

}  // namespace

StatusOr<RunResult> Runner::RunReplay(const ReplayPlan& plan) {
  if (plan.ops.empty()) return Status::InvalidArgument("trace:" + plan.path + ": no calls");
  const ReplayOptions& o = plan.options;
  if (o.loops == 0) return Status::InvalidArgument("--replay-loops: must be at least 1");
  if (o.timing == ReplayOptions::Timing::kTrace && !(o.speed > 0)) {
    return Status::InvalidArgument("--replay-speed: must be above 0");
  }
  GROVE_RETURN_IF_ERROR(EnsureSessions());
  ++run_counter_;
  const bool timed = o.timing == ReplayOptions::Timing::kTrace;
  const std::string file = std::filesystem::path(plan.path).filename().string();

  RunResult run;
  run.workload = "trace:" + file;
  run.distribution = "trace";
  ReplayFacts facts;
  facts.file = file;
  facts.keys = o.keys == ReplayOptions::Keys::kExact       ? "exact"
               : o.keys == ReplayOptions::Keys::kProjected ? "projected"
                                                           : "scaled";
  facts.timing = timed ? "trace" : "closed";
  facts.speed = o.speed;
  facts.loops = o.loops;
  facts.sample_ppm = plan.header.sample_ppm;
  facts.traced_records = plan.traced_records;
  facts.skipped = plan.skipped;
  facts.calls = plan.ops.size();
  facts.distinct_keys = plan.distinct_keys;
  facts.absent_keys = plan.absent_keys;
  facts.varied_keys = plan.varied_keys;
  facts.truncated = plan.truncated;
  run.replay = facts;
  run.description = "replay of " + std::to_string(plan.ops.size()) + " traced calls (" +
                    std::to_string(plan.skipped) + " failed ones skipped), keys " + facts.keys +
                    (o.keys != ReplayOptions::Keys::kExact
                         ? " onto " + std::to_string(keys_->loaded()) + " loaded"
                         : std::string()) +
                    ", " + (timed ? "at the trace's timing" : "closed loop") +
                    (o.loops > 1 ? ", " + std::to_string(o.loops) + " times" : std::string());

  const uint32_t threads = settings_.threads;
  const uint64_t total = plan.ops.size() * static_cast<uint64_t>(o.loops);
  const uint64_t span_micros = plan.ops.back().micros + 1;  // one loop's length
  const std::string values =
      RandomBytes(plan.max_value_bytes + kValueOffsets, settings_.seed * 7349 + run_counter_);
  Shared shared;
  shared.label = run.workload;
  PhaseResult phase;
  phase.name = "replay";
  phase.distribution = "trace";
  {
    Monitor monitor(&shared, settings_.timeline_interval, settings_.progress, 1, target_,
                    settings_.timeline_counters);
    GROVE_ASSIGN_OR_RETURN(run.before, target_->Stats());
    const uint64_t start = NowNanos();
    const uint64_t deadline =
        o.max_seconds > 0 ? start + static_cast<uint64_t>(o.max_seconds * 1e9) : UINT64_MAX;
    shared.phase_ops.store(total);
    shared.phase_start_ns.store(start);
    shared.measuring.store(true);
    std::atomic<uint64_t> next(0);
    std::vector<PhaseResult> per_thread(threads);
    std::vector<std::thread> workers;
    for (uint32_t t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        Rng rng(settings_.seed * 7919 + t * 104729 + run_counter_);
        Session* session = sessions_[t].get();
        std::vector<std::string> scratch;
        // Closed loop: the records in trace order, each to whichever worker is free. Timed: the
        // t-th worker takes every threads-th record, each at its own time.
        uint64_t i = timed ? t : next.fetch_add(1, std::memory_order_relaxed);
        while (i < total && !shared.stop.load(std::memory_order_relaxed)) {
          const ReplayOp& op = plan.ops[i % plan.ops.size()];
          uint64_t t0;
          if (timed) {
            const double micros =
                static_cast<double>((i / plan.ops.size()) * span_micros + op.micros);
            t0 = start + static_cast<uint64_t>(micros * 1e3 / o.speed);
            SleepUntil(t0);
          } else {
            t0 = NowNanos();
          }
          if (t0 >= deadline) break;
          bool found = true;
          uint64_t entries = 0;
          const std::vector<std::string>& keys =
              PassKeys(plan, op, i % plan.ops.size(), o.first_loop + i / plan.ops.size(), &scratch);
          const Status s = RunOp(op, keys, session, values, rng, &found, &entries);
          CountOp(op.type, s, found, entries, NowNanos() - t0, /*measured=*/true, &per_thread[t],
                  &shared);
          i = timed ? i + threads : next.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (auto& w : workers) w.join();
    for (const auto& r : per_thread) phase.Merge(r);
    phase.seconds = static_cast<double>(NowNanos() - start) * 1e-9;
    shared.measuring.store(false);
    monitor.Stop();
    run.timeline = monitor.timeline();
  }
  GROVE_ASSIGN_OR_RETURN(run.after, target_->Stats());
  run.phases.push_back(phase);
  run.total = std::move(phase);
  run.total.name = "total";
  run.total.distribution = "trace";
  run.errors = shared.errors.load();
  run.first_error = shared.FirstError();
  return run;
}

}  // namespace grove::bench
