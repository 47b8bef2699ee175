#pragma once

// WriteGate: lets checkpoints pause writers. Writers hold the gate from before they log a write
// until it is applied, so while the gate is paused every logged write is also applied and nothing
// changes pages: that is the consistent point a checkpoint snapshots.
//
// Pausing blocks new writers first and then waits for the active ones to leave (writer-preferring,
// so a steady stream of writes cannot starve a checkpoint).
//
// Thread safety: all methods are safe for concurrent use. Pause/Resume pairs do not nest.

#include "util/mutex.h"

namespace grove {

class WriteGate {
 public:
  void Enter() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (paused_) cv_.Wait();
    ++active_;
  }
  void Exit() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (--active_ == 0 && paused_) cv_.SignalAll();
  }
  void Pause() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (paused_) cv_.Wait();
    paused_ = true;
    while (active_ > 0) cv_.Wait();
  }
  void Resume() GROVE_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    paused_ = false;
    cv_.SignalAll();
  }

 private:
  Mutex mu_;
  CondVar cv_{&mu_};
  int active_ GROVE_GUARDED_BY(mu_) = 0;
  bool paused_ GROVE_GUARDED_BY(mu_) = false;
};

// Holds the gate for one write.
class GatePass {
 public:
  explicit GatePass(WriteGate* gate) : gate_(gate) { gate_->Enter(); }
  ~GatePass() { gate_->Exit(); }
  GatePass(const GatePass&) = delete;
  GatePass& operator=(const GatePass&) = delete;

 private:
  WriteGate* gate_;
};

}  // namespace grove
