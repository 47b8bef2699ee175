#include <algorithm>
#include <utility>

#include "io/fault_internal.h"

namespace grove {

FaultQueue::FaultQueue(FaultInjectionBackend* backend, std::unique_ptr<IoQueue> inner)
    : backend_(backend), inner_(std::move(inner)) {}

FaultQueue::~FaultQueue() {
  for (IoOp* op : pending_) {
    op->status = Status::Aborted("io queue destroyed before Submit");
    op->done = true;
  }
  pending_.clear();
  WaitAll();
}

void FaultQueue::Push(IoOp* op) {
  op->status = Status::Ok();
  op->bytes = 0;
  op->done = false;
  pending_.push_back(op);
}

void FaultQueue::Finish(IoOp* op, Status status, size_t bytes) {
  op->status = std::move(status);
  op->bytes = static_cast<uint32_t>(bytes);
  finished_.push_back(op);
}

void FaultQueue::Submit() {
  if (pending_.empty()) return;
  std::vector<IoOp*> batch;
  batch.swap(pending_);
  inflight_ += batch.size();
  bool pushed = false;
  for (IoOp* op : batch) {
    FaultFile* file = backend_->FindFile(op->file);
    if (file == nullptr) {
      Finish(op, Status::InvalidArgument("io op on a file not opened through this fault backend"),
             0);
      continue;
    }
    if (op->kind == IoOp::Kind::kRead) {
      Status s = backend_->CheckRead(file->path());
      if (!s.ok()) {
        Finish(op, std::move(s), 0);
        continue;
      }
    } else {
      bool proceed;
      size_t written;
      Status s = file->BeginQueuedWrite(op->offset, Slice(op->buf, op->len), &proceed, &written);
      if (!proceed) {
        Finish(op, std::move(s), written);
        continue;
      }
    }
    auto inner_op = std::make_unique<IoOp>(*op);
    inner_op->file = file->inner();
    inner_->Push(inner_op.get());
    in_inner_[op] = std::move(inner_op);
    pushed = true;
  }
  if (pushed) inner_->Submit();
}

size_t FaultQueue::Harvest() {
  for (auto it = in_inner_.begin(); it != in_inner_.end();) {
    IoOp* inner_op = it->second.get();
    if (!inner_op->done) {
      ++it;
      continue;
    }
    Finish(it->first, std::move(inner_op->status), inner_op->bytes);
    it = in_inner_.erase(it);
  }
  const size_t n = finished_.size();
  for (IoOp* op : finished_) op->done = true;
  inflight_ -= n;
  finished_.clear();
  return n;
}

void FaultQueue::Wait(IoOp* op) {
  if (!op->done && std::find(pending_.begin(), pending_.end(), op) != pending_.end()) Submit();
  auto it = in_inner_.find(op);
  if (it != in_inner_.end()) inner_->Wait(it->second.get());
  Harvest();
}

void FaultQueue::WaitAll() {
  inner_->WaitAll();
  Harvest();
}

size_t FaultQueue::Poll() {
  inner_->Poll();
  return Harvest();
}

}  // namespace grove
