#pragma once

// WorkerPool: a fixed set of threads running queued closures in FIFO order. The psync backend
// uses it to overlap the ops of one batch.
//
// Thread safety: Schedule() may be called from any thread. The destructor runs every closure
// already scheduled, then joins the threads; nothing may be scheduled once it has started.

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "util/mutex.h"

namespace grove {

class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  size_t size() const { return threads_.size(); }
  void Schedule(std::function<void()> task);

 private:
  void Run();

  Mutex mu_;
  CondVar work_cv_{&mu_};
  std::deque<std::function<void()>> tasks_ GROVE_GUARDED_BY(mu_);
  bool stopping_ GROVE_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace grove
