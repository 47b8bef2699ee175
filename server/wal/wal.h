#pragma once

// Wal: Grove's logical write-ahead log. Every Put/Delete/BatchInsert becomes one logical record
// [LSN: fixed64][payload] (the engine's encoded WriteBatch), framed in the block format of
// log_format.h (LevelDB's log format, credited there) and appended to segment files
// `wal-<first LSN>.log` in the data directory. docs/formats/wal.md is the full description.
//
// Recovery first calls Wal::Replay to feed every record at or after the redo point to the engine,
// then Wal::Open with the ReplayResult's next_lsn. Open always starts a fresh segment; nothing is
// ever appended after an old tail. On a full disk Open succeeds without a segment and the first
// Append creates it (so a database can open and serve reads while its disk is full).
//
// Durability (WalOptions::sync; what each mode can lose is in docs/formats/wal.md):
//   kAlways  Append returns after the group's fdatasync.
//   kBatch   Append returns after the write; a background thread owned by the Wal fdatasyncs every
//            batch_interval_us while there are unsynced bytes.
//   kNone    Append returns after the write; syncs happen at segment roll, Sync() and Close().
// Under kAlways a record may opt out (Append's `sync` false): a group none of whose records asks
// for a sync is written without one, and is made durable by the next sync.
// In every mode the leader syncs before writing a group that would leave more than
// max_unsynced_bytes unsynced, which is what lets Replay tell a torn tail from corruption.
//
// Group commit (leader/follower): Append queues the caller's record. The writer at the head of the
// queue is the leader: it takes the queued records (up to a group byte limit), assigns their LSNs,
// frames them into one buffer, writes it with one File::Write, syncs as the mode requires, then
// wakes the group's followers and hands leadership to the next queued writer. The mutex is not
// held during IO, so new writers queue up behind the leader and form the next group.
//
// Errors:
//   * A full disk can only appear when a new segment is created and preallocated (space inside a
//     segment is reserved): at a roll, or at the first Append after an Open that found no space
//     for its segment. The group's Appends fail with kResourceExhausted, nothing is written, no
//     LSN is consumed, and the next Append retries the roll.
//   * Any other write error, a short write, or a failed fdatasync stops the log for good
//     (fail-stop): the kernel may have dropped the dirty pages, so a later "successful" fsync would
//     prove nothing. Every later Append and Sync returns kInternal ("... reopen to recover").
//
// State machine:
//
//                      Open()   (no space: Appending with a roll pending)
//                        |
//                        v
//                  +-----------+   write error, short write,    +---------+
//   roll, or  +--->| Appending |------------------------------->| Stopped |  Append, Sync:
//   ENOSPC at |    +-----------+   failed fdatasync             +---------+  kInternal
//   a roll    +--------+ |                                           |
//   (retried by the      | Close()                                   | Close()
//    next Append)        v                                           |
//                  +-----------+                                     |
//                  |  Closed   |<------------------------------------+
//                  +-----------+  Append, Sync, RemoveObsoleteSegments: kUnavailable
//
// Thread safety: every method may be called concurrently. Close() waits for Appends already queued
// and rejects later ones. The IoBackend and Logger must outlive the Wal.
// Locking: one mutex (mu_) guards the queue and the bookkeeping. It is never held across IO; it may
// be held while logging, so a Logger must not call back into the Wal.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grove/io_backend.h"
#include "grove/logger.h"
#include "grove/options.h"
#include "grove/slice.h"
#include "grove/stats.h"
#include "grove/status.h"

#include "util/histogram.h"
#include "util/mutex.h"
#include "wal/log_format.h"
#include "wal/segment.h"

namespace grove::wal {

// The part of the log a backup copies (Wal::BackupExtent).
struct LogExtent {
  // The segments that may hold records >= the LSN asked for, oldest first.
  std::vector<SegmentRef> segments;
  // When the last segment is the one being appended to: how many of its bytes hold records
  // (the rest is preallocation). Otherwise every segment is complete.
  bool last_is_active = false;
  uint64_t active_bytes = 0;
  Lsn next_lsn = 1;  // every record below it lies in these bytes
};

struct ReplayResult {
  Lsn next_lsn = 1;              // the LSN the next record must get: pass it to Wal::Open
  uint64_t records = 0;          // records passed to the callback (lsn >= from_lsn)
  uint64_t bytes = 0;            // framed log bytes of those records
  uint64_t segments = 0;         // segments read (segments wholly below from_lsn are not read)
  uint64_t torn_tail_bytes = 0;  // bytes dropped by the torn-tail repair
  bool torn_tail = false;        // a torn tail was found and repaired
};

class Wal {
 public:
  // Reads every record with lsn >= from_lsn in LSN order and calls fn(lsn, payload); stops and
  // returns fn's error if fn fails. The payload is valid only during the call.
  //
  // A torn tail (a bad record, or non-zero bytes after the end of the data, with no valid record
  // more than max_unsynced_bytes past it and none in a later segment) is repaired: the segment is
  // truncated to the end of its last valid record and synced, later segments are deleted, and a
  // warning is logged. Mid-log corruption, an LSN gap or duplicate, a segment whose first record
  // does not match its name, or an oldest segment that starts after from_lsn is kDataLoss naming
  // the segment and offset. Replay fdatasyncs the last segment before it returns, so what it
  // delivered cannot vanish later under records the next Wal writes. `logger` may be null.
  static StatusOr<ReplayResult> Replay(IoBackend* io, const std::string& dir, Lsn from_lsn,
                                       const WalOptions& options, Logger* logger,
                                       const std::function<Status(Lsn, Slice)>& fn);

  // Starts appending at next_lsn (>= 1; normally ReplayResult::next_lsn) in a fresh, preallocated
  // segment. Fails with kFailedPrecondition if the directory already holds records at or beyond
  // next_lsn. If the disk has no room for the segment, Open still succeeds (logging a warning):
  // the segment is created by the first Append, which fails with kResourceExhausted until space
  // returns. That relies on Replay having fdatasynced the last existing segment, which it does.
  static StatusOr<std::unique_ptr<Wal>> Open(IoBackend* io, const std::string& dir,
                                             const WalOptions& options, Lsn next_lsn,
                                             Logger* logger);

  ~Wal();  // Close(), logging a failure
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Appends one record and returns its LSN once it is as durable as options.sync requires.
  // kInvalidArgument if the payload exceeds max_unsynced_bytes / 2. `sync` false: return once
  // written, without waiting for a sync under kAlways (for a record durable elsewhere, such as
  // a replicated write held by a synced Raft log); the next group that syncs, Sync(), a roll,
  // Close, or max_unsynced_bytes piling up makes it durable. A group syncs under kAlways only
  // when one of its records asks to.
  StatusOr<Lsn> Append(Slice payload, bool sync = true) GROVE_EXCLUDES(mu_);
  // Appends `payloads` as consecutive records, in order, sharing group commits (one fdatasync
  // under kAlways unless they exceed one group's bytes), and returns once all are as durable as
  // options.sync requires. Each record has its own outcome: its LSN, or the error of the group
  // that carried it (or kInvalidArgument for an oversized payload, which is not appended).
  // `no_sync[i]` (when given) opts record i out of the sync as Append's `sync` does.
  std::vector<StatusOr<Lsn>> AppendMany(const std::vector<Slice>& payloads,
                                        const std::vector<bool>* no_sync = nullptr)
      GROVE_EXCLUDES(mu_);

  // Makes everything appended so far durable.
  Status Sync() GROVE_EXCLUDES(mu_);

  // Deletes the segments all of whose records are < redo_lsn (never the active one), then syncs
  // the directory. Call it only once the checkpoint that moved the redo point is durable. A failure
  // here does not stop the log: a segment that survives is only removed again later.
  Status RemoveObsoleteSegments(Lsn redo_lsn) GROVE_EXCLUDES(mu_);

  Lsn next_lsn() const GROVE_EXCLUDES(mu_);
  // What to copy to hold every record from `from_lsn` up to now (a backup): segments wholly
  // below from_lsn are left out. The caller keeps them from being removed meanwhile
  // (RemoveObsoleteSegments with a redo LSN no higher than from_lsn).
  LogExtent BackupExtent(Lsn from_lsn) const GROVE_EXCLUDES(mu_);
  // Log bytes a redo point at `from_lsn` keeps on disk: the segments from the one holding it to
  // the active one (sealed segments counted at segment_bytes).
  uint64_t RetainedBytes(Lsn from_lsn) const GROVE_EXCLUDES(mu_);
  // Total framed bytes appended since Open (the engine triggers checkpoints on deltas).
  uint64_t appended_bytes() const { return appended_bytes_.load(std::memory_order_relaxed); }
  WalStats GetStats() const GROVE_EXCLUDES(mu_);

  // Waits for queued Appends, syncs, trims the active segment's unused preallocation and closes it.
  // Later Append/Sync/RemoveObsoleteSegments return kUnavailable; a second Close returns OK. After
  // a fail-stop, Close releases the files and returns the stored error.
  Status Close() GROVE_EXCLUDES(mu_);

 private:
  struct Writer;
  struct Segment;
  struct GroupPlan;

  Wal(IoBackend* io, std::string dir, const WalOptions& options, Lsn next_lsn, Logger* logger);

  // The leader's half of Append: commits a group starting at queue_.front(). Releases mu_ during
  // IO.
  void CommitGroup() GROVE_REQUIRES(mu_);
  // Runs the IO of one group without holding mu_; only the leader calls it.
  Status WriteGroup(GroupPlan* plan) GROVE_EXCLUDES(mu_);
  // fdatasync with latency accounting. Does not touch state guarded by mu_.
  Status SyncFile(File* file) GROVE_EXCLUDES(mu_);
  // Syncs the active segment up to what has been written; shared by Sync() and the batch thread.
  Status SyncActive() GROVE_EXCLUDES(mu_);
  // Everything up to record count `records` (records_) is now durable: counts the records this
  // sync made durable (records_per_sync_).
  void NoteSyncedLocked(uint64_t records) GROVE_REQUIRES(mu_);
  // Records a fail-stop error and logs it; returns the status for the callers that hit it.
  Status StopLocked(const std::string& what, const Status& cause) GROVE_REQUIRES(mu_);
  void BatchSyncLoop() GROVE_EXCLUDES(mu_);
  void Log(LogLevel level, const std::string& message) const;

  IoBackend* const io_;
  const std::string dir_;
  const WalOptions options_;
  Logger* const logger_;
  const uint64_t group_limit_;  // framed bytes a leader gathers into one group (beyond the first)

  mutable Mutex mu_;
  std::deque<Writer*> queue_ GROVE_GUARDED_BY(mu_);  // front: the leader
  CondVar drained_cv_{&mu_};                         // Close waits for queue_ to empty
  CondVar batch_cv_{&mu_};                           // wakes the batch thread early (Close)

  std::shared_ptr<Segment> active_ GROVE_GUARDED_BY(mu_);
  std::vector<SegmentRef> segments_ GROVE_GUARDED_BY(mu_);  // every live segment, active last
  uint64_t active_written_ GROVE_GUARDED_BY(mu_) = 0;       // bytes written into the active segment
  Lsn next_lsn_ GROVE_GUARDED_BY(mu_);
  // The next group must go to a new segment: the active segment was sealed (synced) for a roll
  // that failed for lack of space, or Open found no space and there is no active segment yet.
  // active_ is null only in that second case.
  bool roll_pending_ GROVE_GUARDED_BY(mu_) = false;
  // Log bytes written and known durable since Open. Bytes of earlier segments are always durable:
  // a roll syncs the old segment before anything is written to the new one.
  uint64_t written_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t synced_ GROVE_GUARDED_BY(mu_) = 0;
  Status stopped_ GROVE_GUARDED_BY(mu_);  // non-OK after a fail-stop
  bool closed_ GROVE_GUARDED_BY(mu_) = false;

  // Leader-owned scratch (only the writer at queue_.front() touches it, and only in CommitGroup).
  std::string group_buf_;

  uint64_t records_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t records_synced_ GROVE_GUARDED_BY(mu_) = 0;  // records_ as of the last sync
  CountHistogram records_per_sync_;                    // records each sync made durable
  uint64_t groups_ GROVE_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> appended_bytes_{0};
  std::atomic<uint64_t> syncs_{0};
  Histogram sync_seconds_;

  std::thread batch_thread_;  // kBatch only; joined in Close
};

}  // namespace grove::wal
