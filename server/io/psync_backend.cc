#include "io/psync_backend.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include "io/posix_file.h"
#include "util/mutex.h"

namespace grove {
namespace {

// State shared between a queue and the worker closures of its batches. Held by shared_ptr so that
// a closure that starts after the queue is gone finds an empty `unstarted` list instead of freed
// memory.
struct BatchState {
  Mutex mu;
  CondVar finished_cv{&mu};
  std::deque<IoOp*> unstarted GROVE_GUARDED_BY(mu);  // submitted; no thread has picked them up yet
  std::vector<IoOp*> finished GROVE_GUARDED_BY(mu);  // executed; not yet marked done by the owner
};

// Runs ops until `unstarted` is empty. Called by workers and by the owner while it waits.
void Drain(BatchState* state) {
  for (;;) {
    IoOp* op;
    {
      MutexLock lock(&state->mu);
      if (state->unstarted.empty()) return;
      op = state->unstarted.front();
      state->unstarted.pop_front();
    }
    ExecuteOpSync(op);
    {
      MutexLock lock(&state->mu);
      state->finished.push_back(op);
    }
    state->finished_cv.SignalAll();
  }
}

class PsyncQueue final : public IoQueue {
 public:
  explicit PsyncQueue(WorkerPool* pool) : pool_(pool), state_(std::make_shared<BatchState>()) {}

  ~PsyncQueue() override {
    for (IoOp* op : pending_) {
      op->status = Status::Aborted("io queue destroyed before Submit");
      op->done = true;
    }
    pending_.clear();
    WaitAll();
  }

  void Push(IoOp* op) override {
    op->status = Status::Ok();
    op->bytes = 0;
    op->done = false;
    pending_.push_back(op);
  }

  void Submit() override {
    if (pending_.empty()) return;
    std::vector<IoOp*> batch;
    batch.swap(pending_);
    inflight_ += batch.size();
    if (batch.size() == 1 || pool_->size() == 0) {
      for (IoOp* op : batch) RunInline(op);
      return;
    }
    {
      MutexLock lock(&state_->mu);
      state_->unstarted.insert(state_->unstarted.end(), batch.begin() + 1, batch.end());
    }
    // One closure per worker that can help; each drains the list, so more would only spin.
    const size_t helpers = std::min(batch.size() - 1, pool_->size());
    for (size_t i = 0; i < helpers; ++i) {
      pool_->Schedule([state = state_] { Drain(state.get()); });
    }
    RunInline(batch[0]);
  }

  void Wait(IoOp* op) override {
    if (!op->done && std::find(pending_.begin(), pending_.end(), op) != pending_.end()) Submit();
    WaitUntil([op] { return op->done; });
  }

  void WaitAll() override {
    WaitUntil([] { return false; });
  }

  size_t Poll() override {
    MutexLock lock(&state_->mu);
    return MarkFinished();
  }

  size_t InFlight() const override { return inflight_; }

 private:
  void RunInline(IoOp* op) {
    ExecuteOpSync(op);
    MutexLock lock(&state_->mu);
    state_->finished.push_back(op);
  }

  // Marks executed ops done. Owner thread only.
  size_t MarkFinished() GROVE_REQUIRES(state_->mu) {
    const size_t n = state_->finished.size();
    for (IoOp* op : state_->finished) op->done = true;
    inflight_ -= n;
    state_->finished.clear();
    return n;
  }

  // Blocks until `done()` holds or nothing is in flight, running unstarted ops of this queue
  // itself rather than idling while the workers are busy elsewhere.
  template <typename Pred>
  void WaitUntil(Pred done) {
    state_->mu.Lock();
    for (;;) {
      MarkFinished();
      if (done() || inflight_ == 0) break;
      if (!state_->unstarted.empty()) {
        // One op at a time, so the owner returns as soon as the op it waits for is done.
        IoOp* next = state_->unstarted.front();
        state_->unstarted.pop_front();
        state_->mu.Unlock();
        ExecuteOpSync(next);
        state_->mu.Lock();
        state_->finished.push_back(next);
        continue;
      }
      state_->finished_cv.Wait();
    }
    state_->mu.Unlock();
  }

  WorkerPool* const pool_;
  const std::shared_ptr<BatchState> state_;
  std::vector<IoOp*> pending_;  // pushed, not yet submitted
  size_t inflight_ = 0;         // submitted, not yet marked done
};

}  // namespace

std::unique_ptr<IoQueue> PsyncBackend::AcquireQueue() {
  return std::make_unique<PsyncQueue>(&pool_);
}

}  // namespace grove
