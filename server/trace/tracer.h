#pragma once

// Tracer: records a sample of the calls a groved serves into a trace file (trace_file.h). One
// trace at a time; the admin API starts and stops it, the call paths ask Sampled() and hand
// over what they served.
//
// States: idle --Start--> tracing --Stop, its duration passed, or a write error--> idle.
// When its duration passes the trace ends at the next call, status or start that notices.
//
// Concurrency: Sampled() is lock-free (a relaxed load and a per-thread random draw) and costs
// the call paths nothing measurable while no trace runs. Add() takes mu_ to write; at a 1%
// sample that is one call in a hundred. Lock order: mu_ alone.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "grove/status.h"

#include "trace/key_hash.h"
#include "trace/trace_file.h"
#include "util/mutex.h"

namespace grove::trace {

struct TracerOptions {
  std::string dir;                  // where trace files go (created when missing)
  uint64_t max_bytes = 1ull << 30;  // the cap of one trace file
};

struct TraceRequest {
  double sample = 0.01;                   // the fraction of calls recorded, in (0, 1]
  std::chrono::milliseconds duration{0};  // 0: until stopped
  std::string name;                       // the file is <dir>/<name>.trace
  bool hash_keys = false;  // write keys hashed, order kept (key_hash.h), with a fresh secret
  // The traced database's key sketch, written after the header (hashed with the keys).
  std::optional<KeySketch> sketch;
};

struct TraceStatus {
  bool active = false;
  std::string path;  // of the running trace, or of the last one
  double sample = 0;
  bool keys_hashed = false;
  uint64_t sketch_keys = 0;  // the keys the trace's key sketch counted (0: none, or empty)
  uint64_t records_written = 0, records_dropped = 0, bytes = 0;
  std::string ended_because;  // for the last trace: "stopped", "duration", or the write error
};

class Tracer {
 public:
  explicit Tracer(TracerOptions options) : options_(std::move(options)) {}
  ~Tracer();  // closes a running trace
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // FailedPrecondition while a trace runs; InvalidArgument naming the field for a bad sample,
  // duration or name; AlreadyExists when the file does.
  [[nodiscard]] Status Start(const TraceRequest& request) GROVE_EXCLUDES(mu_);
  // FailedPrecondition when no trace runs. Closes (and syncs) the file.
  [[nodiscard]] Status Stop() GROVE_EXCLUDES(mu_);
  TraceStatus GetStatus() GROVE_EXCLUDES(mu_);

  // Whether the call being served now is to be recorded.
  bool Sampled() {
    const uint32_t threshold = threshold_.load(std::memory_order_relaxed);
    return threshold != 0 && Draw() < threshold;
  }
  // Records `r`, stamping its time. A call that was sampled just before the trace ended is
  // dropped silently.
  void Add(Record r) GROVE_EXCLUDES(mu_);

  // The size cap of one trace file (a key sketch must leave room for records).
  uint64_t max_bytes() const { return options_.max_bytes; }
  // Whether a trace is sampling now (a trace past its duration until something notices).
  bool Sampling() const { return threshold_.load(std::memory_order_relaxed) != 0; }
  // Totals over every trace, for the metrics: records in blocks written to trace files (a running
  // trace's pending block counts once it is written), and records dropped by the size cap or
  // lost with a block that failed to write.
  uint64_t records_written_total() const { return written_total_.load(); }
  uint64_t records_dropped_total() const { return dropped_total_.load(); }

 private:
  static uint32_t Draw();
  // Ends the running trace (mu_ held); `why` goes to the status.
  void EndLocked(const std::string& why) GROVE_REQUIRES(mu_);
  bool ExpiredLocked() GROVE_REQUIRES(mu_);
  // Adds to the totals what the writer flushed and dropped since the counts given.
  void CountLocked(uint64_t flushed_before, uint64_t dropped_before) GROVE_REQUIRES(mu_);

  const TracerOptions options_;
  // The sample as a threshold on a 32-bit draw; 0 while no trace runs.
  std::atomic<uint32_t> threshold_{0};
  std::atomic<uint64_t> written_total_{0}, dropped_total_{0};
  Mutex mu_;
  std::unique_ptr<TraceWriter> writer_ GROVE_GUARDED_BY(mu_);
  std::unique_ptr<KeyHasher> hasher_ GROVE_GUARDED_BY(mu_);  // set while a hashed trace runs
  std::chrono::steady_clock::time_point started_ GROVE_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point ends_ GROVE_GUARDED_BY(mu_);  // max(): no end
  TraceStatus last_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove::trace
