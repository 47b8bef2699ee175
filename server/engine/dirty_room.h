#pragma once

// DirtyRoom: how many more pages the write path may dirty before a checkpoint must run.
//
// Pages are no-steal: a dirty frame, and a frame the running checkpoint still has to write in
// place, cannot be evicted, and a write cannot be interrupted by a checkpoint while it holds the
// write gate. So every write, replayed record and maintenance unit first reserves room for every
// page it may dirty (the variant's worst case, plus its out-of-line value), and
//
//   dirty pages + pages being written back + reserved pages  <=  Cap()
//
// holds at every grant: the rest of the cache always stays evictable for reads. A reservation is
// given back when its write is done (what it dirtied then counts as dirty pages). When one does
// not fit, the writer waits for what brings room back: a write in flight giving its reservation
// back, or a checkpoint that is running or queued (CheckpointScope) ending. Only when neither is
// under way does one waiting writer run a checkpoint (the callback), which turns dirty pages into
// clean ones; the others wait for it rather than queue checkpoints of their own behind it (each
// would write what the one before left and hold every writer for its syncs).
//
//   Cap()      the write room: Options' write-room share of the pool's capacity
//              (WriteRoomShare, include/grove/options.h)
//   HardCap()  the most an extension may push it to (TryReserve with `extend`: a variant that
//              finds it needs more than its worst case mid-write): nine tenths of the cache
//
// Thread safety: every method from any thread. Reserve runs the checkpoint with no lock of this
// class held; it must be called outside the write gate (the checkpoint takes the gate).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "grove/stats.h"
#include "grove/status.h"

#include "util/histogram.h"
#include "util/mutex.h"

namespace grove {

class DirtyRoom {
 public:
  using Clock = std::chrono::steady_clock;

  // What it reads of the buffer pool, at every decision: its capacity in pages, and the pages it
  // holds that cannot be evicted (dirty, and being written back).
  struct Pool {
    std::function<uint64_t()> capacity_pages;
    std::function<uint64_t()> unevictable_pages;
  };
  // `share`: the fraction of the pool's capacity writes may keep dirty. `checkpoint` runs one
  // checkpoint and returns its status.
  DirtyRoom(Pool pool, double share, std::function<Status()> checkpoint)
      : pool_(std::move(pool)), share_(share), checkpoint_(std::move(checkpoint)) {}
  DirtyRoom(const DirtyRoom&) = delete;
  DirtyRoom& operator=(const DirtyRoom&) = delete;

  uint64_t Cap() const;
  uint64_t HardCap() const;
  // Pages reserved by writes in flight.
  uint64_t reserved() const { return reserved_.load(); }
  // A writer is waiting for room, or nine tenths of Cap() are held: a checkpoint that paces its
  // writes (CheckpointOptions::spread) stops pacing, since only its end brings room back.
  bool Pressed() const;

  // Reserves `pages`, waiting for writes in flight to give theirs back or running a checkpoint
  // when none holds any, until `give_up` (time_point::max(): as long as it takes; only a failing
  // checkpoint stops it). RESOURCE_EXHAUSTED when `pages` could never fit, when the wait ran out,
  // or when checkpoints fail.
  Status Reserve(uint64_t pages, Clock::time_point give_up) GROVE_EXCLUDES(mu_);
  // Reserves without waiting: up to Cap(), or up to HardCap() with `extend`.
  bool TryReserve(uint64_t pages, bool extend) GROVE_EXCLUDES(mu_);
  // Gives back `pages` reserved before.
  void Release(uint64_t pages) GROVE_EXCLUDES(mu_);

  // Marks a checkpoint as running or queued for its lifetime, so that writers short of room wait
  // for it to end (it wakes them) instead of running one of their own. Every checkpoint that
  // frees room is run inside one (DbImpl::RunCheckpoint).
  class CheckpointScope {
   public:
    explicit CheckpointScope(DirtyRoom* room) : room_(room) {
      if (room_ != nullptr) room_->CheckpointBegins();
    }
    ~CheckpointScope() {
      if (room_ != nullptr) room_->CheckpointEnds();
    }
    CheckpointScope(const CheckpointScope&) = delete;
    CheckpointScope& operator=(const CheckpointScope&) = delete;

   private:
    DirtyRoom* const room_;
  };

  // Waits and the checkpoints writers ran (grove_write_room_*, docs/server.md).
  WriteRoomStats GetStats() const;

 private:
  // Dirty, written-back and reserved pages together.
  uint64_t Held() const;
  void CheckpointBegins() GROVE_EXCLUDES(mu_);
  void CheckpointEnds() GROVE_EXCLUDES(mu_);

  const Pool pool_;
  const double share_;
  const std::function<Status()> checkpoint_;
  std::atomic<uint64_t> reserved_{0};
  std::atomic<uint32_t> waiting_{0};  // writers in Reserve that did not fit at once
  // Reservations are granted under mu_; cv_ is signalled when a write gives its own back and
  // when a checkpoint ends.
  Mutex mu_;
  CondVar cv_{&mu_};
  uint64_t grants_ GROVE_GUARDED_BY(mu_) = 0;  // reservations granted so far
  // Checkpoints running or queued, those a waiting writer runs included.
  int checkpoints_ GROVE_GUARDED_BY(mu_) = 0;

  std::atomic<uint64_t> waits_{0};               // reservations that did not fit at once
  std::atomic<uint64_t> writer_checkpoints_{0};  // checkpoints run by a waiting writer
  Histogram wait_seconds_;                       // how long each of those waited
};

}  // namespace grove
