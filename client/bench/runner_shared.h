#pragma once

// What the runs of one Runner share across its source files (runner.cc, replay_runner.cc): the
// clock, the state workers, monitor and coordinator share during a run, and the monitor that
// samples the timeline and draws the progress bar. Internal to grove-bench.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/progress.h"
#include "bench/runner.h"
#include "util/mutex.h"

namespace grove::bench {

inline uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

inline void SleepUntil(uint64_t ns) {
  const uint64_t now = NowNanos();
  if (ns > now) std::this_thread::sleep_for(std::chrono::nanoseconds(ns - now));
}

// State the workers, the monitor and the coordinator share during one run.
struct Runner::Shared {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> completed{0};  // measured operations finished, whole run
  std::atomic<uint64_t> phase_done{0};
  std::atomic<int> phase{0};
  std::atomic<bool> measuring{false};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> exhausted{0};
  // What the progress bar shows for the current phase; written before its workers start.
  std::atomic<uint64_t> phase_ops{0};
  std::atomic<uint64_t> phase_deadline_ns{0};
  std::atomic<uint64_t> phase_start_ns{0};
  std::string label;
  // Latencies of measured operations since the monitor's last sample, by histogram bucket.
  std::vector<std::atomic<uint32_t>> interval_buckets =
      std::vector<std::atomic<uint32_t>>(LatencyHistogram::NumBuckets());
  Mutex mu;
  std::string first_error GROVE_GUARDED_BY(mu);

  void Fail(const Status& s) GROVE_EXCLUDES(mu) {
    errors.fetch_add(1, std::memory_order_relaxed);
    MutexLock l(&mu);
    if (first_error.empty()) first_error = s.ToString();
  }
  std::string FirstError() GROVE_EXCLUDES(mu) {
    MutexLock l(&mu);
    return first_error;
  }
};

// Samples throughput for the timeline and redraws the progress bar, ten times a second.
class Runner::Monitor {
 public:
  Monitor(Shared* shared, double interval, bool progress, int phases, Target* target = nullptr,
          std::vector<std::string> counters = {})
      : shared_(shared),
        target_(counters.empty() ? nullptr : target),
        counter_names_(std::move(counters)),
        interval_ns_(static_cast<uint64_t>(interval * 1e9)),
        progress_(progress),
        phases_(phases),
        thread_([this] { Loop(); }) {}

  ~Monitor() { Stop(); }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      MutexLock l(&mu_);
      done_ = true;
    }
    cv_.SignalAll();
    thread_.join();
    bar_.Clear();
  }

  // The timeline, valid after Stop().
  std::vector<TimelinePoint> timeline() const { return timeline_; }

 private:
  void Loop() {
    uint64_t last_sample_ns = 0;
    uint64_t last_completed = 0;
    uint64_t measure_start = 0;
    std::map<std::string, double> last_counters;
    MutexLock l(&mu_);
    while (!done_) {
      cv_.WaitFor(std::chrono::milliseconds(100));
      const uint64_t now = NowNanos();
      const uint64_t completed = shared_->completed.load(std::memory_order_relaxed);
      if (shared_->measuring.load()) {
        if (measure_start == 0) {
          measure_start = last_sample_ns = now;
          last_completed = completed;
          DrainLatencies();
          last_counters = SampleCounters();
        } else if (now - last_sample_ns >= interval_ns_) {
          const double dt = static_cast<double>(now - last_sample_ns) * 1e-9;
          TimelinePoint p;
          p.t = static_cast<double>(now - measure_start) * 1e-9;
          p.ops_per_sec = static_cast<double>(completed - last_completed) / dt;
          p.phase = shared_->phase.load();
          const LatencyHistogram h = DrainLatencies();
          p.p50_us = static_cast<double>(h.Percentile(50)) / 1e3;
          p.p95_us = static_cast<double>(h.Percentile(95)) / 1e3;
          p.p99_us = static_cast<double>(h.Percentile(99)) / 1e3;
          std::map<std::string, double> c = SampleCounters();
          for (const auto& [name, v] : c) {
            auto it = last_counters.find(name);
            p.counters[name] = v - (it == last_counters.end() ? 0 : it->second);
          }
          last_counters = std::move(c);
          timeline_.push_back(std::move(p));
          last_sample_ns = now;
          last_completed = completed;
        }
      }
      if (progress_) Draw(now);
    }
  }

  LatencyHistogram DrainLatencies() {
    LatencyHistogram h;
    for (size_t b = 0; b < shared_->interval_buckets.size(); ++b) {
      const uint32_t n = shared_->interval_buckets[b].exchange(0, std::memory_order_relaxed);
      if (n) h.RecordMany(LatencyHistogram::BucketLow(b), n);
    }
    return h;
  }

  // The selected counters of the target (a name, or a prefix ending in '*').
  std::map<std::string, double> SampleCounters() {
    std::map<std::string, double> out;
    if (!target_) return out;
    StatusOr<TargetStats> st = target_->Stats();
    if (!st.ok()) return out;
    for (const auto& [name, v] : st->counters) {
      for (const std::string& want : counter_names_) {
        const bool prefix = !want.empty() && want.back() == '*';
        if (prefix ? name.compare(0, want.size() - 1, want, 0, want.size() - 1) == 0
                   : name == want) {
          out[name] = v;
          break;
        }
      }
    }
    return out;
  }

  void Draw(uint64_t now) {
    const uint64_t start = shared_->phase_start_ns.load();
    if (start == 0 || now <= start) return;
    const uint64_t done = shared_->phase_done.load(std::memory_order_relaxed);
    const double elapsed = static_cast<double>(now - start) * 1e-9;
    const uint64_t ops = shared_->phase_ops.load();
    const uint64_t deadline = shared_->phase_deadline_ns.load();
    double fraction = 0;
    if (ops > 0) {
      fraction = static_cast<double>(done) / static_cast<double>(ops);
    } else if (deadline > start) {
      fraction = static_cast<double>(now - start) / static_cast<double>(deadline - start);
    }
    std::string label = shared_->label;
    if (phases_ > 1) {
      label +=
          " phase " + std::to_string(shared_->phase.load() + 1) + "/" + std::to_string(phases_);
    }
    if (!shared_->measuring.load()) label += " (warm-up)";
    bar_.Draw(label, fraction, done, static_cast<double>(done) / elapsed, elapsed);
  }

  Shared* const shared_;
  Target* const target_;  // polled for counter_names_ with every sample; null: not polled
  const std::vector<std::string> counter_names_;
  const uint64_t interval_ns_;
  const bool progress_;
  const int phases_;
  ProgressBar bar_;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool done_ GROVE_GUARDED_BY(mu_) = false;
  std::vector<TimelinePoint> timeline_;  // monitor thread only until Stop()
  std::thread thread_;                   // last: starts after every other member exists
};

}  // namespace grove::bench
