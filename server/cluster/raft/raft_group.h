#pragma once

// RaftGroup: one replica of one Raft group, on libraft 0.15 with its libuv IO, reached through its
// node's GroupTransport (one port for every group of the node; docs/libraft.md says how that
// library behaves and why this class is shaped as it is).
//
// The replica keeps its log, term, vote and snapshots in its own directory, and applies committed
// entries to a StateMachine on its loop's thread, in log order. A proposal is one log entry (one
// raft_apply of one buffer: with several, libraft reports after the first), acknowledged once a
// majority holds it and this replica applied it.
//
// Lifecycle:
//
//   Start --> running --Close--> closed
//
// Entries are framed (a length, the bytes, zeros to a multiple of 8: libraft 0.15 misreads its
// own log otherwise) and a snapshot starts with a format byte.
//
// Start creates the directory, starts the group from what it holds (or bootstraps a new group with
// `bootstrap` as its voters when it holds nothing) and returns once libraft loaded it. Close stops
// taking proposals, waits (bounded) for those in flight, then closes the group: libraft 0.15
// crashes when a leader is closed with appends still being written. The destructor closes.
//
// Thread safety: Propose, Barrier, GetStatus and Close from any thread but the loop's; the
// StateMachine and every `done` callback run on the loop thread and must not block it (a blocked
// loop delays every group on it: heartbeats stop and followers elect a new leader).

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "grove/slice.h"
#include "grove/status.h"

#include "cluster/raft/group_transport.h"
#include "cluster/raft/raft_loop.h"

struct raft;
struct raft_server;
struct raft_io;
struct raft_fsm;
struct raft_uv_transport;

namespace grove::raft {

struct RaftPeer {
  uint64_t id = 0;      // nonzero, unique in the group
  std::string address;  // its node's GroupTransport address
};

struct RaftGroupOptions {
  uint64_t group = 0;  // the group's id (nonzero): what connections to it name
  uint64_t id = 0;     // this replica's id (nonzero)
  // The node's transport, on the group's loop; outlives the group. Its address is this
  // replica's address.
  GroupTransport* transport = nullptr;
  std::string dir;  // its log, metadata and snapshots; created when missing
  // The voters of a new group, this replica among them; used only when `dir` holds no state.
  // Empty: the replica waits to be added to an existing group.
  std::vector<RaftPeer> bootstrap;
  uint32_t election_timeout_ms = 1000;  // randomised by libraft to 1-2x
  uint32_t heartbeat_ms = 100;
  uint32_t snapshot_threshold = 1024;  // entries applied between snapshots
  uint32_t snapshot_trailing = 2048;   // entries kept in the log behind a snapshot
  uint64_t segment_bytes = 1 << 20;    // log segment size (libraft preallocates two)
  // How long a leader waits for a follower to take a snapshot before sending it again. A
  // follower busy writing its own snapshot refuses one; libraft's default (30 s) would leave it
  // that far behind. Snapshots are small descriptors here, so resending is cheap.
  uint32_t install_snapshot_timeout_ms = 2000;
  bool pre_vote = true;           // a returning replica does not raise the term
  uint32_t close_wait_ms = 5000;  // how long Close waits for proposals in flight
};

// What a group replicates. Called on the loop thread only.
class StateMachine {
 public:
  virtual ~StateMachine() = default;
  // Applies the committed entry at `index` (rising; indices of barriers and configuration
  // entries are skipped). An entry the replicas all refuse alike (a failed condition) is applied
  // as a refusal and returns OK; an error means this replica cannot go on (its engine failed):
  // it stops applying, and every later request and GetStatus report the error.
  virtual Status Apply(uint64_t index, Slice entry) = 0;
  // The state as of the last applied entry, as bytes Restore takes back.
  virtual StatusOr<std::string> Snapshot() = 0;
  // Replaces the state with a snapshot's.
  virtual Status Restore(Slice snapshot) = 0;
};

enum class RaftRole { kUnavailable, kFollower, kCandidate, kLeader };
const char* RaftRoleName(RaftRole role);

// A replica's part in its group's configuration: a voter counts toward majorities; a standby
// receives the log but does not vote (a replica catching up before it votes); a spare neither.
enum class MemberRole { kVoter, kStandby, kSpare };
const char* MemberRoleName(MemberRole role);

struct RaftMember {
  uint64_t id = 0;
  std::string address;
  MemberRole role = MemberRole::kVoter;
};

struct RaftStatus {
  RaftRole role = RaftRole::kUnavailable;
  uint64_t leader_id = 0;  // 0: none known
  std::string leader_address;
  uint64_t term = 0;
  uint64_t commit_index = 0;
  uint64_t last_applied = 0;
  uint64_t last_index = 0;
  // How long ago this replica last heard from the group: a follower from its leader, a leader
  // from a majority (libraft's election timer, reset at each contact). What a stale read here
  // may miss is bounded by it.
  uint64_t contact_age_ms = 0;
  // On the leader: each replica's id and the last entry it is known to hold (its own: its last
  // index).
  std::vector<std::pair<uint64_t, uint64_t>> follower_match;
  // The configuration this replica holds (the latest it knows of, committed or not), and whether
  // it votes in it. A replica added to a group holds none until the leader reaches it.
  std::vector<RaftMember> members;
  bool voter = false;
  // Why this replica stopped applying (an entry it could not apply), or why it refused the
  // last snapshot it was sent (it stays behind until one is restored), or OK.
  Status failure;
};

class RaftGroup {
 public:
  // `loop` and `machine` must outlive the group.
  static StatusOr<std::unique_ptr<RaftGroup>> Start(RaftLoop* loop, const RaftGroupOptions& options,
                                                    StateMachine* machine);
  ~RaftGroup();
  RaftGroup(const RaftGroup&) = delete;
  RaftGroup& operator=(const RaftGroup&) = delete;

  // Runs with the outcome, on the loop thread (on the caller's when the entry is empty or the
  // loop is stopping): OK and the entry's index once it is committed and applied here;
  // FAILED_PRECONDITION naming the leader when this replica does not lead; UNAVAILABLE when
  // leadership was lost first (the entry may still commit under the next leader) or the group
  // is closing; INVALID_ARGUMENT for an empty entry.
  using Done = std::function<void(const Status& status, uint64_t index)>;
  void Propose(std::string entry, Done done);
  // Completes once every entry before it is applied here, through a barrier entry of the current
  // term committed by a majority: what a linearizable read waits for.
  void Barrier(Done done);
  // Blocking forms of the two, for callers off the loop thread.
  StatusOr<uint64_t> ProposeAndWait(std::string entry);
  StatusOr<uint64_t> BarrierAndWait();

  // Configuration changes, on the leader, one at a time (libraft's rule): each completes once the
  // new configuration is committed; FAILED_PRECONDITION naming the leader on a follower, ABORTED
  // while another change is under way.
  //   SetRole   adds replica `id` at `address` when the configuration lacks it (a spare, then
  //             `role`), or gives it `role`. A voter is made one after libraft's catch-up rounds
  //             (UNAVAILABLE when they do not catch up: make it a standby first and wait for its
  //             log). Nothing to do when it has that role already.
  //   Remove    takes replica `id` out (nothing to do when it is not in). Not the leader itself
  //             (FAILED_PRECONDITION: transfer leadership first). The removed replica is not
  //             told: whoever removes it must stop it.
  //   Transfer  makes voter `id` the leader: OK once it leads, UNAVAILABLE when it did not within
  //             the election timeout. Nothing to do when this replica is `id`.
  void SetRole(uint64_t id, std::string address, MemberRole role, Done done);
  void Remove(uint64_t id, Done done);
  void Transfer(uint64_t id, Done done);

  RaftStatus GetStatus();
  uint64_t id() const { return options_.id; }

  Status Close();

 private:
  struct Request;
  struct Callbacks;
  // How far StartOnLoop got: what Close releases.
  enum class Stage { kNone, kTransport, kIo, kRaft };

  RaftGroup(RaftLoop* loop, const RaftGroupOptions& options, StateMachine* machine);
  Status StartOnLoop();
  Status NotLeader();  // naming the leader this replica knows of
  // Why a new request is refused now (a broken entry, closing, not the leader), or OK.
  Status Refusal();
  // The status of libraft's result code `rv` for a request (`what` names it).
  Status Outcome(int rv, const char* what);
  void Finish(Request* req, int status, uint64_t index);
  // The member `id` of the configuration, or null.
  const struct raft_server* Member(uint64_t id) const;
  // Starts the role change `req` asks for (after an add, when the server is a spare).
  void Assign(Request* req);
  // Runs `change` on the loop thread when this replica may take a request; `done` gets the
  // refusal otherwise.
  void AtLeader(Done done, std::function<void(Done)> change);
  // A configuration change or transfer about `target`, pending until Finish.
  Request* NewChange(Done done, uint64_t target);

  RaftLoop* const loop_;
  const RaftGroupOptions options_;
  StateMachine* const machine_;
  // libraft's structures, owned here; touched on the loop thread only, as is everything below
  // but closed_ (the caller's).
  std::unique_ptr<::raft> raft_;
  std::unique_ptr<::raft_io> io_;
  std::unique_ptr<::raft_fsm> fsm_;
  std::unique_ptr<::raft_uv_transport> transport_;
  Stage stage_ = Stage::kNone;
  bool started_ = false;  // raft_start succeeded
  bool closing_ = false;  // no new proposals
  uint64_t pending_ = 0;  // proposals and barriers libraft holds
  Status failure_;        // set when an entry cannot be applied; every request returns it
  // Why the last snapshot could not be restored (what Start and GetStatus report); cleared by
  // a restore that succeeds.
  Status restore_failure_;
  std::shared_ptr<std::promise<void>> closed_promise_;  // set when libraft let go
  bool closed_ = false;
};

}  // namespace grove::raft
