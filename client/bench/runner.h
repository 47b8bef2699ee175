#pragma once

// Runner: executes a workload against a target with N worker threads and measures it.
//
// Closed loop by default: each thread issues its next operation when the previous one returns.
// With a rate (ops/s over all threads) it is open loop: each thread follows a Poisson schedule of
// intended start times and latency counts from the intended start, so a stalled target shows up
// in the tail instead of silently lowering the offered load (coordinated omission).
//
// A run: optional warm-up (the first phase's mix, not measured), a stats snapshot, the phases
// back to back, a second snapshot. Latencies go to per-thread histograms merged at the end; a
// monitor thread samples throughput for the timeline and draws the progress bar.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/distributions.h"
#include "bench/histogram.h"
#include "bench/key_space.h"
#include "bench/replay.h"
#include "bench/rng.h"
#include "bench/target.h"
#include "bench/value_gen.h"
#include "bench/workload.h"

namespace grove::bench {

enum class LoadMethod { kPut, kBatch, kBulk };

struct RunSettings {
  uint32_t threads = 1;
  uint64_t default_ops = 0;  // phases that set neither ops nor duration
  double default_seconds = 0;
  uint64_t warmup_ops = 0;
  double warmup_seconds = 0;
  double rate = 0;                 // open-loop ops/s over all threads; 0: closed loop
  double timeline_interval = 1.0;  // seconds between timeline samples
  // Target counters sampled with every timeline point (names, or prefixes ending in '*'); their
  // per-interval deltas go to TimelinePoint::counters. Empty: the target is not polled.
  std::vector<std::string> timeline_counters;
  bool progress = false;
  uint64_t seed = 1;
  LoadMethod load_method = LoadMethod::kPut;
  uint32_t batch_size = 1000;
  bool settle_after_load = true;
  uint64_t max_errors = 1000;  // a phase stops after this many failed operations
};

struct OpStats {
  LatencyHistogram latency;  // nanoseconds
  uint64_t ok = 0;
  uint64_t not_found = 0;  // reads (and rmw reads) of keys that were absent
  uint64_t errors = 0;
  uint64_t scan_entries = 0;
  void Merge(const OpStats& o);
  uint64_t count() const { return ok + not_found + errors; }
};

struct PhaseResult {
  std::string name;
  std::string distribution;
  uint64_t ops = 0;
  double seconds = 0;
  std::array<OpStats, kNumOpTypes> per_op;
  void Merge(const PhaseResult& o);  // adds ops, seconds and every op's stats
};

struct TimelinePoint {
  double t = 0;  // seconds since the measured part of the run began
  double ops_per_sec = 0;
  int phase = 0;
  // Latency of the operations that finished in the interval (all op types), microseconds.
  double p50_us = 0, p95_us = 0, p99_us = 0;
  std::map<std::string, double> counters;  // deltas over the interval (timeline_counters)
};

// What the report says of a trace replay.
struct ReplayFacts {
  std::string file;    // the trace's file name (without its directory)
  std::string keys;    // "exact", "scaled" or "projected"
  std::string timing;  // "closed" or "trace"
  double speed = 1;
  uint32_t loops = 1;
  uint32_t sample_ppm = 0;  // the sample the trace was captured with
  uint64_t traced_records = 0, skipped = 0, calls = 0, distinct_keys = 0, absent_keys = 0;
  uint64_t varied_keys = 0;  // keys named once, replaced in passes other than the first
  bool truncated = false;
};

struct RunResult {
  std::string workload;
  std::string description;
  std::string distribution;  // of the first phase (the override, when one was given)
  bool is_load = false;
  std::string load_method;  // LOAD only
  std::vector<PhaseResult> phases;
  PhaseResult total;
  double settle_seconds = 0;  // LOAD: time to make the load durable and settled, after the ops
  // The process's resident set at the run's end and its peak during the run (the peak is reset
  // before each run where the kernel allows; peak_rss_reset says whether it was).
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  bool peak_rss_reset = false;
  TargetStats before;
  TargetStats after;
  std::vector<TimelinePoint> timeline;
  uint64_t errors = 0;
  std::string first_error;
  uint64_t inserts_exhausted = 0;     // inserts turned into updates: the key set ran out
  std::optional<ReplayFacts> replay;  // set for a trace replay
};

class Runner {
 public:
  Runner(Target* target, KeySpace* keys, const ValueGen* values, const RunSettings& settings);

  // Inserts keys [0, loaded) of the key space into the (reset) target.
  StatusOr<RunResult> RunLoad();
  // Ages the loaded data (the TreeLine paper's protocol: every run starts from a database that
  // took uniform updates after its load, so an LSM has several levels): `updates` overwrites of
  // uniformly chosen loaded keys, in batches of batch_size, then the target settles.
  StatusOr<RunResult> RunAge(uint64_t updates);
  // Runs the phases of `workload` (its distributions already overridden by the caller).
  StatusOr<RunResult> RunWorkload(const WorkloadSpec& workload);
  // Replays a trace (replay.h; replay_runner.cc) as one phase named "replay".
  StatusOr<RunResult> RunReplay(const ReplayPlan& plan);

 private:
  struct Shared;
  class Worker;
  class Monitor;

  Status EnsureSessions();
  // Counts one finished operation of `type` in *r and in the run's shared counters.
  void CountOp(OpType type, const Status& s, bool found, uint64_t entries, uint64_t latency_ns,
               bool measured, PhaseResult* r, Shared* shared) const;
  PhaseResult RunPhase(const PhaseSpec& phase, int phase_index, bool measured, Shared* shared);
  // Writes `n` records with the threads: the i-th is keys_->key(pick(i, rng)); batched: in
  // batches of batch_size, else one Put each. `salt` varies the threads' random streams.
  void RunWriteThreads(uint64_t n, bool batched, uint64_t salt,
                       const std::function<uint64_t(uint64_t, Rng&)>& pick, PhaseResult* result,
                       Shared* shared);
  // Settles the target and fills the rest of `run` after the write threads of LOAD or AGE.
  Status FinishWriteRun(Shared* shared, PhaseResult phase, RunResult* run);
  Status RunBulk(PhaseResult* result);

  Target* const target_;
  KeySpace* const keys_;
  const ValueGen* const values_;
  const RunSettings settings_;
  ZetaCache zeta_;
  std::vector<std::unique_ptr<Session>> sessions_;
  uint64_t run_counter_ = 0;  // decorrelates the random streams of successive runs
};

}  // namespace grove::bench
