#pragma once

// UringRing and UringQueue: the io_uring parts behind UringBackend. Internal to server/io.
//
// UringQueue lifecycle of an op:
//
//   Push -> pending_ --Submit--> backlog_ --(room in ring)--> in the kernel --CQE--> finished_
//                                   ^                                          |
//                                   +--- short read not at EOF, EINTR/EAGAIN --+
//   finished_ --(Wait / WaitAll / Poll on the owner's thread)--> op->done = true
//
// At most `capacity_` ops are in the kernel at once (the smaller of the SQ and CQ sizes), so the
// completion queue can never overflow; a batch larger than that is submitted in chunks, reaping
// completions in between. Submit() returns once every op it was given is in the kernel.

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_set>
#include <vector>

#include <liburing.h>

#include "grove/io_backend.h"

namespace grove {

class UringBackend;

// One io_uring instance (RAII over io_uring_queue_init / io_uring_queue_exit).
class UringRing {
 public:
  static StatusOr<std::unique_ptr<UringRing>> Create(uint32_t entries);
  ~UringRing();
  UringRing(const UringRing&) = delete;
  UringRing& operator=(const UringRing&) = delete;

  io_uring* get() { return &ring_; }
  uint32_t sq_entries() const { return ring_.sq.ring_entries; }
  uint32_t cq_entries() const { return ring_.cq.ring_entries; }

 private:
  UringRing() = default;
  io_uring ring_{};
  bool set_up_ = false;  // io_uring_queue_exit only after a successful io_uring_queue_init
};

class UringQueue final : public IoQueue {
 public:
  // With a null `ring` (setting one up failed), every op completes with `setup_error`.
  UringQueue(UringBackend* backend, std::unique_ptr<UringRing> ring, Status setup_error);
  ~UringQueue() override;

  void Push(IoOp* op) override;
  void Submit() override;
  void Wait(IoOp* op) override;
  void WaitAll() override;
  size_t Poll() override;
  size_t InFlight() const override { return inflight_; }

 private:
  // Moves backlog_ into the kernel. With `may_block`, reaps completions whenever the ring is at
  // capacity until the backlog is empty; without, stops when the ring is full.
  void Pump(bool may_block);
  void SubmitChunk(const std::vector<IoOp*>& chunk);
  void ReapBlocking();  // waits for at least one completion, then takes every available one
  size_t ReapAvailable();
  void OnCompletion(IoOp* op, int res);
  void Finish(IoOp* op, Status status);
  // The ring can no longer be trusted: fail everything not yet in the kernel (and, with
  // `fail_in_ring`, what the kernel holds too) with `status`; the ring is not returned to the pool.
  void Break(Status status, bool fail_in_ring);
  size_t MarkFinished();

  UringBackend* const backend_;
  std::unique_ptr<UringRing> ring_;
  Status broken_;  // non-OK: no further submissions on this ring
  size_t capacity_ = 0;

  std::vector<IoOp*> pending_;         // pushed, not yet submitted
  std::deque<IoOp*> backlog_;          // submitted, waiting for room in the ring (incl. retries)
  std::unordered_set<IoOp*> in_ring_;  // accepted by the kernel, completion not yet reaped
  std::vector<IoOp*> finished_;        // result known, not yet marked done
  size_t inflight_ = 0;                // submitted, not yet marked done
};

}  // namespace grove
