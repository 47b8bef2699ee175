#pragma once

// What variants with background work share (TreeLine's write-backs and reorganisations, AHA-tree's
// flushes, compactions and adaptation): one thread that runs rounds of work when kicked or after
// an idle period, that writers in admission control can wait on, and a log throttle for the
// failures it keeps retrying.
//
// State machine: idle --Kick/timeout--> running a round --round ends--> (more work: running again
// at once; else idle); Stop from any state: the loop ends after the round in progress and the
// thread is joined.
//
// Thread safety: Kick, Stop, WaitForRound and Pause are safe from any thread; Start once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "util/mutex.h"

namespace grove {

class BackgroundThread {
 public:
  BackgroundThread() = default;
  BackgroundThread(const BackgroundThread&) = delete;
  BackgroundThread& operator=(const BackgroundThread&) = delete;
  ~BackgroundThread() { Stop(); }

  // Starts the thread. `round` does one round of work and returns whether more is ready at once
  // (the next round then starts without waiting); otherwise the thread waits for a Kick or
  // `idle`.
  void Start(std::chrono::milliseconds idle, std::function<bool()> round);
  // Asks for a round soon.
  void Kick() GROVE_EXCLUDES(mu_);
  // Ends the loop after the round in progress and joins the thread; wakes every waiter.
  void Stop() GROVE_EXCLUDES(mu_);
  // Waits up to `timeout` for a round to end; false once stopping.
  bool WaitForRound(std::chrono::milliseconds timeout) GROVE_EXCLUDES(mu_);
  // For a round that failed: sleeps up to `pause`, less when stopping.
  void Pause(std::chrono::milliseconds pause) GROVE_EXCLUDES(mu_);

 private:
  void Loop(std::chrono::milliseconds idle, const std::function<bool()>& round) GROVE_EXCLUDES(mu_);

  Mutex mu_;
  CondVar wake_cv_{&mu_};   // wakes the thread
  CondVar round_cv_{&mu_};  // a round ended (writers in admission control)
  bool stop_ GROVE_GUARDED_BY(mu_) = false;
  bool kick_ GROVE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Lets a repeated warning through once per `period`: a failing disk would otherwise flood the
// log with the same retried failure.
class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::microseconds period = std::chrono::seconds(1))
      : period_us_(static_cast<uint64_t>(period.count())) {}
  // Whether to log now.
  bool Allow();

 private:
  const uint64_t period_us_;
  std::atomic<uint64_t> last_us_{0};
};

}  // namespace grove
