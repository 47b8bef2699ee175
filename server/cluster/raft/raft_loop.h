#pragma once

// RaftLoop: a libuv event loop on a thread of its own, the one thread that touches the Raft groups
// it runs. libraft is single-threaded (docs/libraft.md): every raft_* call, tick, network event
// and callback of a group happens on its loop. Other threads hand work over with Post, which
// queues a task and wakes the loop; uv_async_send coalesces wake-ups, so each wake-up runs every
// task queued by then, in the order they were posted.
//
// Lifecycle:   Start --> running --Stop (or destructor)--> stopped
// Stop runs the tasks already queued, then lets the loop run until its handles are closed, and
// joins the thread. Every group on the loop must be closed first (RaftGroup::Close). Tasks posted
// after Stop began are dropped.
//
// Start sets SIGPIPE to be ignored, process-wide: raft_uv writes to sockets peers may have
// closed, and the signal's default action would end the process.
//
// Thread safety: Post, RunAndWait and OnLoopThread from any thread; RunAndWait on the loop thread
// itself runs the task at once (ahead of tasks queued before it). Lock order: mu_ only, never
// held while a task runs.

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <uv.h>

#include "grove/status.h"

#include "util/mutex.h"

namespace grove::raft {

class RaftLoop {
 public:
  static StatusOr<std::unique_ptr<RaftLoop>> Start();
  ~RaftLoop();
  RaftLoop(const RaftLoop&) = delete;
  RaftLoop& operator=(const RaftLoop&) = delete;

  // Runs `task` on the loop thread, soon. False when the loop is stopping (the task is dropped).
  bool Post(std::function<void()> task) GROVE_EXCLUDES(mu_);
  // Runs `task` on the loop thread and waits for it (on the loop thread: runs it now). False when
  // the loop is stopping.
  bool RunAndWait(std::function<void()> task) GROVE_EXCLUDES(mu_);
  bool OnLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // The loop, for raft_uv_init and friends. Only the loop thread may use it.
  uv_loop_t* loop() { return &loop_; }

  void Stop() GROVE_EXCLUDES(mu_);

 private:
  RaftLoop() = default;
  static void OnWake(uv_async_t* handle);
  void RunQueued() GROVE_EXCLUDES(mu_);

  uv_loop_t loop_{};
  uv_async_t wake_{};
  std::thread thread_;
  Mutex mu_;
  std::vector<std::function<void()>> queue_ GROVE_GUARDED_BY(mu_);
  bool stopping_ GROVE_GUARDED_BY(mu_) = false;
  bool stopped_ = false;  // Stop finished (touched only by the thread calling Stop)
};

}  // namespace grove::raft
