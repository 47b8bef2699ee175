#include "io/uring_queue.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>
#include <utility>

#include <sys/stat.h>

#include "io/uring_backend.h"

namespace grove {
namespace {

// How often a submission is retried when the kernel reports a transient shortage (EAGAIN/EBUSY)
// and there is nothing of ours in flight whose completion would free resources.
constexpr int kMaxIdleSubmitRetries = 1000;

std::string OpContext(const IoOp* op) {
  std::string s(op->kind == IoOp::Kind::kRead ? "read " : "write ");
  s += op->file->path();
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<UringRing>> UringRing::Create(uint32_t entries) {
  std::unique_ptr<UringRing> ring(new UringRing());
  const int r = io_uring_queue_init(entries, &ring->ring_, 0);
  if (r < 0) return Status::FromErrno(-r, "io_uring_queue_init");
  ring->set_up_ = true;
  return ring;
}

UringRing::~UringRing() {
  if (set_up_) io_uring_queue_exit(&ring_);
}

UringQueue::UringQueue(UringBackend* backend, std::unique_ptr<UringRing> ring, Status setup_error)
    : backend_(backend), ring_(std::move(ring)), broken_(std::move(setup_error)) {
  if (ring_ != nullptr) capacity_ = std::min(ring_->sq_entries(), ring_->cq_entries());
}

UringQueue::~UringQueue() {
  for (IoOp* op : pending_) {
    op->status = Status::Aborted("io queue destroyed before Submit");
    op->done = true;
  }
  pending_.clear();
  WaitAll();
  // A broken ring may still hold prepared entries the kernel never consumed; it must not be
  // handed to another queue, so it is torn down here instead.
  if (ring_ != nullptr && broken_.ok()) backend_->ReturnRing(std::move(ring_));
}

void UringQueue::Push(IoOp* op) {
  op->status = Status::Ok();
  op->bytes = 0;
  op->done = false;
  pending_.push_back(op);
}

void UringQueue::Submit() {
  if (pending_.empty()) return;
  inflight_ += pending_.size();
  for (IoOp* op : pending_) {
    if (op->file == nullptr) {
      Finish(op, Status::InvalidArgument("io op without a file"));
    } else if (op->len == 0) {
      Finish(op, Status::Ok());
    } else {
      backlog_.push_back(op);
    }
  }
  pending_.clear();
  Pump(/*may_block=*/true);
}

void UringQueue::Pump(bool may_block) {
  std::vector<IoOp*> chunk;
  while (!backlog_.empty()) {
    if (!broken_.ok()) {
      Break(broken_, /*fail_in_ring=*/false);
      return;
    }
    size_t room = capacity_ - in_ring_.size();
    if (room == 0) {
      if (!may_block) return;
      ReapBlocking();
      continue;
    }
    chunk.clear();
    while (room > 0 && !backlog_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring_->get());
      if (sqe == nullptr) break;  // cannot happen: every chunk is submitted before the next
      IoOp* op = backlog_.front();
      backlog_.pop_front();
      // op->bytes is the progress so far: non-zero when this is the remainder of a short read.
      const uint32_t done = op->bytes;
      if (op->kind == IoOp::Kind::kRead) {
        io_uring_prep_read(sqe, op->file->fd(), op->buf + done, op->len - done, op->offset + done);
      } else {
        io_uring_prep_write(sqe, op->file->fd(), op->buf + done, op->len - done, op->offset + done);
      }
      io_uring_sqe_set_data(sqe, op);
      chunk.push_back(op);
      --room;
    }
    SubmitChunk(chunk);
  }
}

void UringQueue::SubmitChunk(const std::vector<IoOp*>& chunk) {
  size_t consumed = 0;
  int idle_retries = 0;
  while (consumed < chunk.size()) {
    const int r = io_uring_submit(ring_->get());
    if (r > 0) {
      // The kernel consumes entries in order, so the first `r` unconsumed ops are now its own.
      for (int i = 0; i < r && consumed < chunk.size(); ++i) in_ring_.insert(chunk[consumed++]);
      continue;
    }
    const int err = r == 0 ? EAGAIN : -r;
    if (err == EINTR || err == EAGAIN || err == EBUSY) {
      if (!in_ring_.empty()) {
        ReapBlocking();  // completions free kernel resources and CQ space
        continue;
      }
      if (++idle_retries <= kMaxIdleSubmitRetries) {
        std::this_thread::yield();
        continue;
      }
    }
    // The unconsumed entries stay in the submission queue and would be picked up by a later
    // submit, so the ring cannot be used again.
    broken_ = Status::FromErrno(err, "io_uring_submit");
    for (size_t i = consumed; i < chunk.size(); ++i) Finish(chunk[i], broken_);
    return;
  }
}

void UringQueue::ReapBlocking() {
  io_uring_cqe* cqe = nullptr;
  int r;
  do {
    r = io_uring_wait_cqe(ring_->get(), &cqe);
  } while (r == -EINTR || r == -EAGAIN);
  if (r < 0) {
    // Only a ring that is itself broken gets here (bad fd, fault). Its ops will never complete,
    // so report them failed rather than hang forever.
    Break(Status::FromErrno(-r, "io_uring_wait_cqe"), /*fail_in_ring=*/true);
    return;
  }
  ReapAvailable();
}

size_t UringQueue::ReapAvailable() {
  unsigned head;
  unsigned count = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(ring_->get(), head, cqe) {
    OnCompletion(static_cast<IoOp*>(io_uring_cqe_get_data(cqe)), cqe->res);
    ++count;
  }
  io_uring_cq_advance(ring_->get(), count);
  return count;
}

void UringQueue::OnCompletion(IoOp* op, int res) {
  in_ring_.erase(op);
  if (res == -EINTR || res == -EAGAIN) {
    backlog_.push_front(op);  // nothing happened; try again
    return;
  }
  if (res < 0) {
    Finish(op, Status::FromErrno(-res, OpContext(op)));
    return;
  }
  op->bytes += static_cast<uint32_t>(res);
  if (op->bytes >= op->len) {
    Finish(op, Status::Ok());
    return;
  }
  if (op->kind == IoOp::Kind::kWrite) {
    if (res == 0) {
      Finish(op, Status::Internal(OpContext(op) + ": short write (no progress)"));
    } else {
      // Continue the remainder: if it fails, its errno (ENOSPC, ...) is the honest error.
      backlog_.push_front(op);
    }
    return;
  }
  if (res == 0) {
    Finish(op, Status::Ok());  // end of file
    return;
  }
  // A short read is final only at end of file. Asking the file size (rather than reading the
  // remainder and expecting 0) also works for O_DIRECT files whose tail is not aligned.
  struct stat st;
  if (::fstat(op->file->fd(), &st) < 0) {
    Finish(op, Status::FromErrno(errno, "stat " + op->file->path()));
    return;
  }
  if (op->offset + op->bytes >= static_cast<uint64_t>(st.st_size)) {
    Finish(op, Status::Ok());
  } else {
    backlog_.push_front(op);
  }
}

void UringQueue::Finish(IoOp* op, Status status) {
  op->status = std::move(status);
  finished_.push_back(op);
}

void UringQueue::Break(Status status, bool fail_in_ring) {
  broken_ = status;
  for (IoOp* op : backlog_) Finish(op, status);
  backlog_.clear();
  if (fail_in_ring) {
    for (IoOp* op : in_ring_) Finish(op, status);
    in_ring_.clear();
  }
}

size_t UringQueue::MarkFinished() {
  const size_t n = finished_.size();
  for (IoOp* op : finished_) op->done = true;
  inflight_ -= n;
  finished_.clear();
  return n;
}

void UringQueue::Wait(IoOp* op) {
  if (!op->done && std::find(pending_.begin(), pending_.end(), op) != pending_.end()) Submit();
  for (;;) {
    MarkFinished();
    if (op->done) return;
    if (!backlog_.empty()) {
      Pump(/*may_block=*/true);
    } else if (!in_ring_.empty()) {
      ReapBlocking();
    } else {
      return;  // `op` is not in flight on this queue
    }
  }
}

void UringQueue::WaitAll() {
  for (;;) {
    MarkFinished();
    if (inflight_ == 0) return;
    if (!backlog_.empty()) {
      Pump(/*may_block=*/true);
    } else if (!in_ring_.empty()) {
      ReapBlocking();
    } else {
      return;
    }
  }
}

size_t UringQueue::Poll() {
  if (!backlog_.empty()) Pump(/*may_block=*/false);
  if (!in_ring_.empty() && ReapAvailable() == 0) {
    // Some completions are only posted when the task enters the kernel; a zero-wait
    // io_uring_enter flushes them without blocking.
    io_uring_get_events(ring_->get());
    ReapAvailable();
  }
  return MarkFinished();
}

}  // namespace grove
