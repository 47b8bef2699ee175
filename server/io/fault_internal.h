#pragma once

// FaultFile and FaultQueue: the File and IoQueue wrappers behind FaultInjectionBackend. Internal
// to server/io; tests use them only through the backend.

#include <memory>
#include <unordered_map>
#include <vector>

#include "io/fault_backend.h"

namespace grove {

// Wraps an inner File. Every mutating call goes through the backend's verdict (crash budget,
// rules, observer) and leaves an undo record before it reaches the inner file.
class FaultFile final : public File {
 public:
  // `shadow` is a buffered (never O_DIRECT) descriptor of the same file, used to capture old bytes
  // at any offset and length and to write the first half of a short write.
  FaultFile(FaultInjectionBackend* backend, std::shared_ptr<FaultInjectionBackend::FileNode> node,
            std::unique_ptr<File> inner, std::unique_ptr<File> shadow, bool direct);
  ~FaultFile() override;

  const std::string& path() const override { return inner_->path(); }
  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override;
  Status Write(uint64_t offset, Slice data) override;
  Status Sync() override;
  Status Truncate(uint64_t size) override;
  Status Allocate(uint64_t offset, uint64_t len) override;
  StatusOr<uint64_t> Size() override;
  int fd() const override { return inner_->fd(); }

  File* inner() const { return inner_.get(); }

  // The first half of a write: verdict, undo record, and for a short write the torn half itself.
  // On return *proceed says whether the caller must now write `data` to the inner file; when it
  // is false the returned status is the op's outcome and *written the bytes that reached disk.
  Status BeginWrite(uint64_t offset, Slice data, bool* proceed, size_t* written)
      GROVE_REQUIRES(backend_->order_mu_);
  // BeginWrite for a queued write, taking the backend's op-order lock itself.
  Status BeginQueuedWrite(uint64_t offset, Slice data, bool* proceed, size_t* written)
      GROVE_EXCLUDES(backend_->order_mu_);

 private:
  Status RecordUndo(FaultInjectionBackend::OpKind kind, uint64_t offset, uint64_t len)
      GROVE_REQUIRES(backend_->order_mu_);
  size_t ShortWriteLength(size_t len) const;

  FaultInjectionBackend* const backend_;
  const std::shared_ptr<FaultInjectionBackend::FileNode> node_;
  const std::unique_ptr<File> inner_;
  const std::unique_ptr<File> shadow_;
  const bool direct_;
};

// Wraps an inner queue. Ops on FaultFiles are translated to ops on their inner files (the inner
// queue only understands its own files), and results are copied back. Ops that a rule or the
// crash fails never reach the inner queue. As on every backend, ops are marked done only inside
// Wait, WaitAll and Poll.
class FaultQueue final : public IoQueue {
 public:
  FaultQueue(FaultInjectionBackend* backend, std::unique_ptr<IoQueue> inner);
  ~FaultQueue() override;

  void Push(IoOp* op) override;
  void Submit() override;
  void Wait(IoOp* op) override;
  void WaitAll() override;
  size_t Poll() override;
  size_t InFlight() const override { return inflight_; }

 private:
  void Finish(IoOp* op, Status status, size_t bytes);
  // Copies results of completed inner ops back and marks finished user ops done.
  size_t Harvest();

  FaultInjectionBackend* const backend_;
  std::unique_ptr<IoQueue> inner_;
  std::vector<IoOp*> pending_;                                 // pushed, not submitted
  std::unordered_map<IoOp*, std::unique_ptr<IoOp>> in_inner_;  // user op -> its inner op
  std::vector<IoOp*> finished_;                                // result known, not marked done
  size_t inflight_ = 0;                                        // submitted, not marked done
};

}  // namespace grove
