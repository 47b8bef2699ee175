#include "cluster/raft/raft_loop.h"

#include <csignal>
#include <future>

namespace grove::raft {

StatusOr<std::unique_ptr<RaftLoop>> RaftLoop::Start() {
  // raft_uv writes to sockets a peer may have closed; SIGPIPE's default action would end the
  // process (the write fails with EPIPE instead, which raft_uv handles).
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<RaftLoop> l(new RaftLoop());
  if (int rv = uv_loop_init(&l->loop_); rv != 0) {
    return Status::Internal(std::string("raft loop: uv_loop_init: ") + uv_strerror(rv));
  }
  l->wake_.data = l.get();
  if (int rv = uv_async_init(&l->loop_, &l->wake_, &RaftLoop::OnWake); rv != 0) {
    uv_loop_close(&l->loop_);
    return Status::Internal(std::string("raft loop: uv_async_init: ") + uv_strerror(rv));
  }
  RaftLoop* raw = l.get();
  l->thread_ = std::thread([raw] {
    uv_run(&raw->loop_, UV_RUN_DEFAULT);  // until the wake handle, the last one, is closed
    uv_loop_close(&raw->loop_);
  });
  return l;
}

RaftLoop::~RaftLoop() { Stop(); }

bool RaftLoop::Post(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
  }
  uv_async_send(&wake_);
  return true;
}

bool RaftLoop::RunAndWait(std::function<void()> task) {
  if (OnLoopThread()) {  // waiting for itself would never end
    task();
    return true;
  }
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  if (!Post([&] {
        task();
        done.set_value();
      })) {
    return false;
  }
  finished.wait();
  return true;
}

void RaftLoop::OnWake(uv_async_t* handle) {
  auto* self = static_cast<RaftLoop*>(handle->data);
  self->RunQueued();
  bool stopping;
  {
    MutexLock lock(&self->mu_);
    stopping = self->stopping_;
  }
  if (stopping) {
    self->RunQueued();  // what was posted before Stop set the flag and after the first pass
    uv_close(reinterpret_cast<uv_handle_t*>(&self->wake_), nullptr);
  }
}

void RaftLoop::RunQueued() {
  std::vector<std::function<void()>> tasks;
  {
    MutexLock lock(&mu_);
    tasks.swap(queue_);
  }
  for (auto& t : tasks) t();
}

void RaftLoop::Stop() {
  if (stopped_) return;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  uv_async_send(&wake_);
  if (thread_.joinable()) thread_.join();
  stopped_ = true;
}

}  // namespace grove::raft
