#pragma once

// ReplicatedRange: one replica of a key range whose writes go through a Raft group
// (cluster/raft/raft_group.h) into this node's engine.
//
// A write is proposed as one log entry (cluster/raft/range_command.h) and acknowledged once a
// majority holds it and this replica applied it. Every replica applies the committed entries in
// log order to its own Db, with the conditions decided there, at apply time: replicas holding the
// same data decide the same way, which is what makes a conditional write linearizable. Each
// applied entry writes, in the same engine record as its keys, the mark `raft/<name>/applied`
// (Db::GetMark) holding its index; a refused entry (a failed condition) writes the mark alone. So
// the engine knows exactly which entries it holds, after a crash too, and the group's log
// replayed at start is applied from the entry after that mark: nothing twice, nothing lost.
//
// Who syncs what: the Raft log is durable on its own (libraft writes it with O_DSYNC) before an
// entry commits, so the engine's log is not synced for a replicated write, whatever wal.sync
// says (WriteOptions::sync false): a power loss costs replaying entries from the Raft log, not
// data. Installs write synced batches. Before libraft takes a snapshot, and may then drop log
// entries behind it, the engine's log is synced: the entries it drops must be durable in the
// engine.
//
// A snapshot is a small descriptor (the range's name and applied index), not the range's data.
// Restore from one finds the engine already at or past it after a restart (the usual case: every
// replica snapshots on its own) and does nothing. A replica behind the snapshot installs the
// range from another replica (options.source, which calls CopyTo there): it deletes its own keys
// of the range, writes the copy, and sets its applied mark to the index the copy stands for (at
// least the snapshot's; later entries up to it are then skipped). The mark
// raft/<name>/installing is set by the install's first engine record and cleared by its last:
// a replica that crashed part way finds it at start, holds nothing valid of the range, and
// installs again when libraft restores its snapshot. A failing source is retried a few times
// (libraft 0.15 does not send again a snapshot whose restore failed). Without a source, Restore
// fails and the
// replica stays behind rather than serve a range it lacks. Close cuts an install under way short
// (the installing mark stays; the next start installs again). The install runs inside Restore, on
// the loop thread: the groups sharing that loop wait for it.
//
// Applying is an engine write on the loop thread (libraft's state machine is synchronous): a
// write that waits for dirty-page room while a checkpoint runs holds up every group on that
// loop, and if that lasts past the election timeout its followers elect another leader.
//
// Thread safety: Write, DeleteRange, ReadBarrier, GetStatus and Close from any thread but the
// loop's; `done` callbacks run on the loop thread and must not block. The state machine side runs
// on the loop thread. Lock order: pending_mu_, bounds_mu_ and barrier_mu_ are leaves.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grove/db.h"
#include "grove/status.h"
#include "grove/write_batch.h"

#include "cluster/raft/raft_group.h"
#include "cluster/raft/range_command.h"
#include "cluster/raft/range_copy.h"
#include "util/mutex.h"

namespace grove::raft {

// Where a replica behind a snapshot gets its range's data: another replica (in groved, the
// leader, over the network).
class RangeSource {
 public:
  virtual ~RangeSource() = default;
  // Streams a consistent copy of range `name` to `sink` (ReplicatedRange::CopyTo on a replica
  // that has applied at least `at_least`) and returns the index it stands for.
  virtual StatusOr<uint64_t> CopyRange(const std::string& name, uint64_t at_least,
                                       const RangeSink& sink) = 0;
};

struct ReplicatedRangeOptions {
  RaftGroupOptions raft;
  // Names the range on this node: its marks are raft/<name>/applied and raft/<name>/installing.
  // Unique per node.
  std::string name;
  // The keys of the range, [start, end) (end empty: unbounded): what a snapshot copies.
  std::string start, end;
  // Where to fetch the range when this replica is behind a snapshot; null: such a replica
  // refuses the snapshot (and stays behind). Must outlive the range.
  RangeSource* source = nullptr;
  // The engine's limits (Options::max_*), checked before a write is proposed, so that a write
  // every replica would refuse is refused here without a log entry.
  uint32_t max_key_bytes = 128;
  uint32_t max_value_bytes = 64u << 10;
  uint64_t max_batch_bytes = 4ull << 20;
  uint32_t max_batch_entries = 10000;
  // The range was made by a split (ShardRange::from_split): its first state is its parent's keys
  // as of the split, not nothing, so a replica that holds none of them (its applied mark absent)
  // installs the range from another replica (which must hold it: applied at least 1) before
  // its group starts; Start fails when that install does.
  bool from_split = false;
};

// The name (ReplicatedRangeOptions::name) of group `group`'s range on every node: range-<id>. A
// split writes the new range's applied mark under it.
inline std::string ReplicatedRangeName(uint64_t group) { return "range-" + std::to_string(group); }

// The version a replicated write gives the keys it sets, the same on every replica:
// group << kVersionIndexBits | index. It rises with the log, and lies above every engine LSN
// (below 2^42) and every version of a range with a lower id: a range's group id is its shard-map
// id, which a split only raises. A group may apply 2^42 entries (4.4 x 10^12) and have an id
// below 2^22.
inline constexpr int kVersionIndexBits = 42;
inline constexpr uint64_t kMaxGroupForVersions = (uint64_t{1} << (64 - kVersionIndexBits)) - 1;
inline uint64_t ReplicatedVersion(uint64_t group, uint64_t index) {
  return group << kVersionIndexBits | index;
}

// What a replicated write did.
struct RangeWriteResult {
  uint64_t index = 0;  // the entry's index in the group's log
  // A write: the version it set (ReplicatedVersion of its index), or after a failed condition the
  // condition and what its key holds.
  WriteResult write;
  DeleteRangeResult deleted;  // a range delete; its version is the entry's
};

class ReplicatedRange {
 public:
  // `loop` and `db` must outlive the range.
  static StatusOr<std::unique_ptr<ReplicatedRange>> Start(RaftLoop* loop,
                                                          const ReplicatedRangeOptions& options,
                                                          Db* db);
  ~ReplicatedRange();
  ReplicatedRange(const ReplicatedRange&) = delete;
  // Removes what a replica of `options` left in `db` (not running): every key of its range and
  // its marks. For a replica taken out of its group, and before a replica with no Raft state
  // starts (a new one, or one whose log was lost): it holds nothing until its group brings it.
  static Status DropLocal(Db* db, const ReplicatedRangeOptions& options);
  // Whether `db` holds the applied mark of range `name`: a state of that group's own log (or a
  // split's first state), which a replica starting without Raft state goes on from.
  static StatusOr<bool> HoldsState(Db* db, const std::string& name);
  ReplicatedRange& operator=(const ReplicatedRange&) = delete;

  // Runs with the outcome: OK once applied here; kFailedPrecondition when a condition did not
  // hold (the result names it) or, naming the leader, when this replica does not lead;
  // kInvalidArgument / kResourceExhausted for a write outside the limits (nothing proposed);
  // kUnavailable when leadership was lost first (the write may still apply: retry it only if
  // it is idempotent) or the range is closing.
  using Done = std::function<void(const Status& status, const RangeWriteResult& result)>;
  void Write(const WriteBatch& batch, const std::vector<WriteCondition>& conditions, Done done);
  // Removes the keys of [start, end) (end empty: unbounded), at most `limit` (0 or more than
  // max_batch_entries: that many); result.deleted says whether keys remain.
  void DeleteRange(std::string start, std::string end, uint64_t limit, Done done);
  // Blocking forms, for callers off the loop thread.
  Status WriteAndWait(const WriteBatch& batch, const std::vector<WriteCondition>& conditions,
                      RangeWriteResult* result);
  Status DeleteRangeAndWait(std::string start, std::string end, uint64_t limit,
                            RangeWriteResult* result);

  // Returns once every write committed before the call is applied here, on the leader: a read
  // of this replica's engine after it is linearizable. Calls share barriers: one runs at a time,
  // and the calls that arrive while it runs wait for the next, together.
  StatusOr<uint64_t> ReadBarrier() GROVE_EXCLUDES(barrier_mu_);
  // Reads that asked for a barrier, and the barriers run for them (fewer: shared).
  uint64_t barrier_reads() const GROVE_EXCLUDES(barrier_mu_) {
    MutexLock lock(&barrier_mu_);
    return barrier_reads_;
  }
  uint64_t barriers() const GROVE_EXCLUDES(barrier_mu_) {
    MutexLock lock(&barrier_mu_);
    return barriers_;
  }

  // Splits the range at `key` (on the leader, blocking): from the entry on, this range ends at
  // `key`, every replica refuses writes past it (kAborted: they belong to the new range; nothing
  // applied), and each replica's engine holds [key, old end) as the first state of group
  // `new_group` (its applied mark set to 1, the index of that group's bootstrap configuration).
  // The same split again is nothing to do. docs/cluster.md, "Splitting a replicated range".
  Status Split(const std::string& key, uint64_t new_group);
  // Where the range ends now (a split narrows it), and whether `key` is in the range.
  std::string end() const GROVE_EXCLUDES(bounds_mu_);
  bool Contains(Slice key) const GROVE_EXCLUDES(bounds_mu_);

  // Changes to the group's configuration, on the leader, blocking (RaftGroup::SetRole, Remove,
  // Transfer say what each refuses). AddVoter adds replica `id` at `address` as a standby,
  // waits up to `catch_up` for its log to reach the leader's commit index (a replica behind a
  // snapshot installs the range meanwhile), then makes it a voter: a new replica votes only
  // once it holds the range, so adding one to a group of two keeps a majority that can commit.
  // DEADLINE_EXCEEDED when it has not caught up in time (it stays a standby; AddVoter again
  // resumes); FAILED_PRECONDITION when this replica stopped leading meanwhile.
  Status AddVoter(uint64_t id, const std::string& address, std::chrono::milliseconds catch_up);
  Status RemoveReplica(uint64_t id);
  Status TransferLeadership(uint64_t id);

  // Hands a consistent copy of the range to `sink` (RangeCopier): every key as of the moment
  // this replica had applied some index at least `at_least` (waiting up to `wait` for it), and
  // returns that index. Writes go on meanwhile. Not from this range's loop thread (the cut is
  // taken there); one copy at a time (kFailedPrecondition).
  StatusOr<uint64_t> CopyTo(uint64_t at_least, const RangeSink& sink,
                            std::chrono::milliseconds wait = std::chrono::seconds(10));

  // The last entry the engine holds.
  uint64_t applied() const { return applied_.load(std::memory_order_acquire); }
  RaftStatus GetStatus() { return group_->GetStatus(); }
  // Writes this replica proposed that committed, and that failed (not leader, leadership lost).
  uint64_t proposals_committed() const { return proposals_committed_.load(); }
  uint64_t proposals_failed() const { return proposals_failed_.load(); }
  const std::string& mark_name() const { return mark_name_; }
  uint64_t replica_id() const { return options_.raft.id; }

  Status Close();

 private:
  class Machine;
  struct BarrierRound;
  // Runs `round`'s barrier, then the next round's if reads joined one meanwhile.
  void StartBarrier(std::shared_ptr<BarrierRound> round) GROVE_EXCLUDES(barrier_mu_);
  struct Pending {
    Done done;
    Status status;  // set by the apply, for the proposal's callback
    RangeWriteResult result;
    bool applied = false;
  };

  ReplicatedRange(RaftLoop* loop, const ReplicatedRangeOptions& options, Db* db, uint64_t applied,
                  bool installing);
  Status CheckWrite(const WriteBatch& batch, const std::vector<WriteCondition>& conditions) const;
  // kAborted naming the first key outside the range (past a split), or OK.
  Status OutsideRange(const WriteBatch& batch, const std::vector<WriteCondition>& conditions) const;
  Status PastEnd(Slice key) const;
  void Submit(RangeCommand command, Done done);
  // The state machine's side, on the loop thread.
  Status Apply(uint64_t index, Slice entry);
  Status ApplyWrite(uint64_t index, const RangeCommand& command, Status* outcome,
                    RangeWriteResult* result);
  Status ApplyDeleteRange(uint64_t index, const RangeCommand& command, Status* outcome,
                          RangeWriteResult* result);
  Status ApplySplit(uint64_t index, const RangeCommand& command, Status* outcome);
  // Records entry `index` as applied and refused (the mark alone).
  Status WriteRefusal(uint64_t index);
  // Writes `batch` with the applied mark set to `index`.
  Status WriteMarked(uint64_t index, WriteBatch batch, const WriteOptions& options,
                     WriteResult* result);
  StatusOr<std::string> Snapshot();
  Status Restore(Slice snapshot);
  // Replaces the range's keys with a copy from options_.source standing for at least `index`.
  Status Install(uint64_t index);
  // One attempt; *local_failure when this replica's engine failed (not worth retrying).
  Status InstallOnce(uint64_t index, bool* local_failure);

  RaftLoop* const loop_;
  const ReplicatedRangeOptions options_;
  Db* const db_;
  const std::string mark_name_;
  const std::string installing_mark_;
  RangeCopier copier_;
  mutable Mutex bounds_mu_;   // a leaf
  mutable Mutex barrier_mu_;  // a leaf
  std::shared_ptr<BarrierRound> barrier_running_ GROVE_GUARDED_BY(barrier_mu_);
  std::shared_ptr<BarrierRound> barrier_waiting_ GROVE_GUARDED_BY(barrier_mu_);
  uint64_t barrier_reads_ GROVE_GUARDED_BY(barrier_mu_) = 0;
  uint64_t barriers_ GROVE_GUARDED_BY(barrier_mu_) = 0;
  std::string end_ GROVE_GUARDED_BY(bounds_mu_);
  // An install began and did not finish (the installing mark is set): the range's keys are a
  // mix, and only a new install may follow. Loop thread only.
  bool installing_ = false;
  const uint64_t incarnation_;
  std::unique_ptr<Machine> machine_;
  std::unique_ptr<RaftGroup> group_;
  std::atomic<uint64_t> applied_;
  std::atomic<bool> closing_{false};  // Close began: an install under way gives up
  std::atomic<uint64_t> next_sequence_{1};
  std::atomic<uint64_t> proposals_committed_{0}, proposals_failed_{0};
  Mutex pending_mu_;
  std::map<uint64_t, Pending> pending_ GROVE_GUARDED_BY(pending_mu_);  // by sequence
};

}  // namespace grove::raft
