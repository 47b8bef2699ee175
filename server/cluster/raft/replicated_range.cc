#include "cluster/raft/replicated_range.h"

#include <algorithm>
#include <future>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "util/coding.h"

namespace grove::raft {
namespace {

// Snapshot descriptor: version | applied index fixed64 | [2: varint32 end length | end] | range
// name (the rest). Version 2 carries where the range ends at that index (a split narrows it).
constexpr char kDescriptorVersion = 2;

// The engine marks of range `name` (docs/formats/raft_entry.md).
std::string AppliedMark(const std::string& name) { return "raft/" + name + "/applied"; }
std::string InstallingMark(const std::string& name) { return "raft/" + name + "/installing"; }
// A key for a message: printable bytes as they are, others as \xNN.
std::string PrintableForLog(Slice key) {
  std::string out;
  for (const char c : std::string_view(key.data(), key.size())) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

// Set by a split: where the range ends from then on (a split key is never empty).
std::string EndMark(const std::string& name) { return "raft/" + name + "/end"; }

// Installs and drops write synced batches, waiting for dirty-page room as long as it takes.
WriteOptions InstallWrites() {
  WriteOptions o;
  o.room_wait = std::chrono::hours(1);
  return o;
}

// Adds the delete of every key of the range's [start, end) to `batch`, writing it whenever it
// holds half the engine's batch limit; what `batch` held before goes with the first write.
Status DeleteKeys(Db* db, const ReplicatedRangeOptions& o, WriteBatch* batch) {
  ScanOptions scan;
  scan.lower = o.start;
  scan.upper = o.end;
  scan.has_upper = !o.end.empty();
  scan.keys_only = true;
  const uint64_t most_entries = std::max<uint64_t>(1, o.max_batch_entries / 2);
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, db->NewIterator(scan));
  for (; it->Valid(); it->Next()) {
    batch->Delete(it->key());
    if (batch->Count() >= most_entries) {
      GROVE_RETURN_IF_ERROR(db->Write(*batch, InstallWrites(), nullptr));
      batch->Clear();
    }
  }
  return it->status();
}

std::string IndexValue(uint64_t index) {
  std::string v;
  PutFixed64(&v, index);
  return v;
}

StatusOr<uint64_t> ReadApplied(Db* db, const std::string& mark) {
  std::string value;
  GROVE_ASSIGN_OR_RETURN(const bool found, db->GetMark(mark, &value));
  if (!found) return 0;
  if (value.size() != 8) {
    return Status::DataLoss(
        fmt::format("mark {}: {} bytes, not an 8-byte index", mark, value.size()));
  }
  return DecodeFixed64(value.data());
}

uint64_t NewIncarnation() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ 1;
}

}  // namespace

// The StateMachine libraft drives, forwarding to the range.
class ReplicatedRange::Machine final : public StateMachine {
 public:
  explicit Machine(ReplicatedRange* range) : range_(range) {}
  Status Apply(uint64_t index, Slice entry) override { return range_->Apply(index, entry); }
  StatusOr<std::string> Snapshot() override { return range_->Snapshot(); }
  Status Restore(Slice snapshot) override { return range_->Restore(snapshot); }

 private:
  ReplicatedRange* const range_;
};

StatusOr<std::unique_ptr<ReplicatedRange>> ReplicatedRange::Start(
    RaftLoop* loop, const ReplicatedRangeOptions& options, Db* db) {
  if (options.name.empty() || options.name.size() > WriteBatch::kMaxMarkNameBytes - 16) {
    return Status::InvalidArgument(fmt::format("range name: {} bytes; must be 1..{}",
                                               options.name.size(),
                                               WriteBatch::kMaxMarkNameBytes - 16));
  }
  if (options.raft.group > kMaxGroupForVersions) {
    return Status::InvalidArgument(
        fmt::format("raft.group: {} exceeds {}, the largest group id versions can hold",
                    options.raft.group, kMaxGroupForVersions));
  }
  GROVE_ASSIGN_OR_RETURN(uint64_t applied, ReadApplied(db, AppliedMark(options.name)));
  std::string ignored;
  GROVE_ASSIGN_OR_RETURN(const bool installing,
                         db->GetMark(InstallingMark(options.name), &ignored));
  // A half-done install holds nothing valid: the snapshot libraft restores first installs again.
  if (installing) applied = 0;
  // A split applied here narrowed the range, whatever the caller's map says yet.
  ReplicatedRangeOptions narrowed = options;
  std::string end;
  GROVE_ASSIGN_OR_RETURN(const bool split, db->GetMark(EndMark(options.name), &end));
  if (split) narrowed.end = end;
  std::unique_ptr<ReplicatedRange> range(
      new ReplicatedRange(loop, narrowed, db, applied, installing));
  // A range made by a split whose first state this engine lacks (a replica that was not at the
  // split) gets it before its group starts: a replica holding nothing could otherwise win the
  // new group's first election and answer reads (barriers apply no entry) from no data.
  if (options.from_split && applied == 0) {
    if (options.source == nullptr) {
      return Status::FailedPrecondition(fmt::format(
          "range {}: made by a split, and this engine holds none of its keys; it needs them from "
          "another replica, and no source is configured",
          options.name));
    }
    GROVE_RETURN_IF_ERROR(range->Install(1));
  }
  GROVE_ASSIGN_OR_RETURN(range->group_,
                         RaftGroup::Start(loop, options.raft, range->machine_.get()));
  return range;
}

ReplicatedRange::ReplicatedRange(RaftLoop* loop, const ReplicatedRangeOptions& options, Db* db,
                                 uint64_t applied, bool installing)
    : loop_(loop),
      options_(options),
      db_(db),
      mark_name_(AppliedMark(options.name)),
      installing_mark_(InstallingMark(options.name)),
      copier_(db, options.start, options.end),
      end_(options.end),
      installing_(installing),
      incarnation_(NewIncarnation()),
      machine_(std::make_unique<Machine>(this)),
      applied_(applied) {}

ReplicatedRange::~ReplicatedRange() { Close().IgnoreError(); }

StatusOr<bool> ReplicatedRange::HoldsState(Db* db, const std::string& name) {
  std::string value;
  return db->GetMark(AppliedMark(name), &value);
}

std::string ReplicatedRange::end() const {
  MutexLock lock(&bounds_mu_);
  return end_;
}

bool ReplicatedRange::Contains(Slice key) const {
  MutexLock lock(&bounds_mu_);
  return key >= Slice(options_.start) && (end_.empty() || key < Slice(end_));
}

Status ReplicatedRange::PastEnd(Slice key) const {
  return Status::Aborted(fmt::format(
      "range {}: key '{}' is past the range's end '{}' since a split; nothing was applied: it "
      "belongs to the range the split made",
      options_.name, PrintableForLog(key), PrintableForLog(Slice(end()))));
}

Status ReplicatedRange::DropLocal(Db* db, const ReplicatedRangeOptions& options) {
  WriteBatch batch;
  GROVE_RETURN_IF_ERROR(DeleteKeys(db, options, &batch));
  // The marks go last: a drop cut short by a crash leaves them, and is done again.
  batch.SetMark(AppliedMark(options.name), "");
  batch.SetMark(InstallingMark(options.name), "");
  batch.SetMark(EndMark(options.name), "");
  return db->Write(batch, InstallWrites(), nullptr)
      .WithContext(fmt::format("range {}: dropping this node's copy", options.name));
}

Status ReplicatedRange::Close() {
  // An install under way (inside libraft's restore, on the loop) gives up at its next batch, so
  // that closing does not wait for the copy; the installing mark makes the next start redo it.
  closing_.store(true, std::memory_order_release);
  return group_ ? group_->Close() : Status::Ok();
}

Status ReplicatedRange::CheckWrite(const WriteBatch& batch,
                                   const std::vector<WriteCondition>& conditions) const {
  if (batch.MarkCount() > 0 || batch.HasRangeDelete()) {
    return Status::InvalidArgument(
        "batch: a replicated write holds puts and deletes only (marks are the range's own; "
        "range deletes go through DeleteRange)");
  }
  if (batch.Count() > options_.max_batch_entries) {
    return Status::ResourceExhausted(
        fmt::format("batch of {} operations exceeds limits.max_batch_entries ({})", batch.Count(),
                    options_.max_batch_entries));
  }
  if (batch.PayloadBytes() > options_.max_batch_bytes) {
    return Status::ResourceExhausted(
        fmt::format("batch of {} bytes exceeds limits.max_batch_bytes ({})", batch.PayloadBytes(),
                    options_.max_batch_bytes));
  }
  auto key_error = [&](const std::string& field, Slice key) -> Status {
    if (key.empty() || key.size() > options_.max_key_bytes) {
      return Status::InvalidArgument(fmt::format("{}: {} bytes; keys must be 1..{} bytes", field,
                                                 key.size(), options_.max_key_bytes));
    }
    return Status::Ok();
  };
  uint32_t i = 0;
  const bool single = batch.Count() == 1;
  GROVE_RETURN_IF_ERROR(batch.ForEachOp([&](const WriteBatch::Op& op) -> Status {
    const std::string prefix = single ? "" : fmt::format("operations[{}].", i);
    ++i;
    GROVE_RETURN_IF_ERROR(key_error(prefix + "key", op.key));
    if (op.type == WriteBatch::OpType::kPutVersioned) {
      return Status::InvalidArgument(fmt::format(
          "{}version: a replicated write names no versions; they are the range's own", prefix));
    }
    if (op.value.size() > options_.max_value_bytes) {
      return Status::InvalidArgument(
          fmt::format("{}value: {} bytes exceeds limits.max_value_bytes ({})", prefix,
                      op.value.size(), options_.max_value_bytes));
    }
    return Status::Ok();
  }));
  for (size_t c = 0; c < conditions.size(); ++c) {
    GROVE_RETURN_IF_ERROR(key_error(fmt::format("conditions[{}].key", c), conditions[c].key));
  }
  return OutsideRange(batch, conditions);
}

Status ReplicatedRange::OutsideRange(const WriteBatch& batch,
                                     const std::vector<WriteCondition>& conditions) const {
  // The bounds read once for the whole batch (Contains locks per key).
  const std::string range_end = end();
  auto outside = [&](Slice key) {
    return key < Slice(options_.start) || (!range_end.empty() && key >= Slice(range_end));
  };
  Status refused;
  GROVE_RETURN_IF_ERROR(batch.ForEachOp([&](const WriteBatch::Op& op) {
    if (refused.ok() && outside(op.key)) refused = PastEnd(op.key);
    return Status::Ok();
  }));
  for (const WriteCondition& c : conditions) {
    if (refused.ok() && outside(c.key)) refused = PastEnd(c.key);
  }
  return refused;
}

void ReplicatedRange::Write(const WriteBatch& batch, const std::vector<WriteCondition>& conditions,
                            Done done) {
  if (Status s = CheckWrite(batch, conditions); !s.ok()) {
    done(s, RangeWriteResult());
    return;
  }
  RangeCommand command;
  command.kind = RangeCommand::Kind::kWrite;
  command.batch = batch;
  command.conditions = conditions;
  Submit(std::move(command), std::move(done));
}

void ReplicatedRange::DeleteRange(std::string start, std::string end, uint64_t limit, Done done) {
  if (!end.empty() && end <= start) {
    done(Status::InvalidArgument(fmt::format(
             "end: '{}' is not after start '{}' (an empty end means unbounded)", end, start)),
         RangeWriteResult());
    return;
  }
  RangeCommand command;
  command.kind = RangeCommand::Kind::kDeleteRange;
  command.start = std::move(start);
  command.end = std::move(end);
  command.limit = limit;
  Submit(std::move(command), std::move(done));
}

void ReplicatedRange::Submit(RangeCommand command, Done done) {
  const uint64_t sequence = next_sequence_.fetch_add(1);
  command.proposer = options_.raft.id;
  command.incarnation = incarnation_;
  command.sequence = sequence;
  {
    MutexLock lock(&pending_mu_);
    pending_[sequence].done = std::move(done);
  }
  group_->Propose(EncodeRangeCommand(command), [this, sequence](const Status& s, uint64_t index) {
    Pending p;
    {
      MutexLock lock(&pending_mu_);
      auto it = pending_.find(sequence);
      if (it == pending_.end()) return;
      p = std::move(it->second);
      pending_.erase(it);
    }
    (s.ok() ? proposals_committed_ : proposals_failed_).fetch_add(1, std::memory_order_relaxed);
    if (!s.ok()) {
      p.done(s, RangeWriteResult());
    } else if (!p.applied) {
      // libraft reports a proposal after this replica applied it; a replica whose engine held
      // the entry already (index at or below the applied mark) cannot have proposed it.
      p.done(
          Status::Internal(fmt::format("raft: entry {} committed but was not applied here", index)),
          RangeWriteResult());
    } else {
      p.result.index = index;
      p.done(p.status, p.result);
    }
  });
}

namespace {

Status WaitFor(const std::function<void(ReplicatedRange::Done)>& start, RangeWriteResult* out) {
  std::promise<std::pair<Status, RangeWriteResult>> promise;
  std::future<std::pair<Status, RangeWriteResult>> f = promise.get_future();
  start([&promise](const Status& s, const RangeWriteResult& r) { promise.set_value({s, r}); });
  auto [status, result] = f.get();
  if (out != nullptr) *out = std::move(result);
  return status;
}

}  // namespace

Status ReplicatedRange::WriteAndWait(const WriteBatch& batch,
                                     const std::vector<WriteCondition>& conditions,
                                     RangeWriteResult* result) {
  return WaitFor([&](Done d) { Write(batch, conditions, std::move(d)); }, result);
}

Status ReplicatedRange::DeleteRangeAndWait(std::string start, std::string end, uint64_t limit,
                                           RangeWriteResult* result) {
  return WaitFor(
      [&](Done d) { DeleteRange(std::move(start), std::move(end), limit, std::move(d)); }, result);
}

Status ReplicatedRange::Split(const std::string& key, uint64_t new_group) {
  if (key.empty() || key <= options_.start) {
    return Status::InvalidArgument(fmt::format("split key: must lie after the range's start"));
  }
  if (new_group <= options_.raft.group || new_group > kMaxGroupForVersions) {
    return Status::InvalidArgument(
        fmt::format("new range id: {} must lie above the range's own ({}) and at most {}",
                    new_group, options_.raft.group, kMaxGroupForVersions));
  }
  RangeCommand command;
  command.kind = RangeCommand::Kind::kSplit;
  command.start = key;
  command.new_group = new_group;
  return WaitFor([&](Done d) { Submit(std::move(command), std::move(d)); }, nullptr);
}

// Reads share barriers: a read joins the next barrier to start, never one already in flight
// (that one may have been appended before the writes this read must see were acknowledged). One
// barrier runs at a time; the reads that arrive meanwhile all wait for the one after it.
struct ReplicatedRange::BarrierRound {
  std::promise<StatusOr<uint64_t>> promise;
  std::shared_future<StatusOr<uint64_t>> result = promise.get_future().share();
};

void ReplicatedRange::StartBarrier(std::shared_ptr<BarrierRound> round) {
  {
    MutexLock lock(&barrier_mu_);
    ++barriers_;
  }
  group_->Barrier([this, round](const Status& s, uint64_t index) {
    if (s.ok()) {
      round->promise.set_value(index);
    } else {
      round->promise.set_value(s);
    }
    std::shared_ptr<BarrierRound> next;
    {
      MutexLock lock(&barrier_mu_);
      barrier_running_ = std::move(barrier_waiting_);
      barrier_waiting_ = nullptr;
      next = barrier_running_;
    }
    if (next != nullptr) StartBarrier(std::move(next));
  });
}

StatusOr<uint64_t> ReplicatedRange::ReadBarrier() {
  std::shared_ptr<BarrierRound> round;
  bool start = false;
  {
    MutexLock lock(&barrier_mu_);
    if (barrier_running_ == nullptr) {
      barrier_running_ = std::make_shared<BarrierRound>();
      round = barrier_running_;
      start = true;
    } else {
      if (barrier_waiting_ == nullptr) barrier_waiting_ = std::make_shared<BarrierRound>();
      round = barrier_waiting_;
    }
    ++barrier_reads_;
  }
  std::shared_future<StatusOr<uint64_t>> result = round->result;
  if (start) StartBarrier(std::move(round));
  return result.get();
}

namespace {

Status WaitFor(const std::function<void(RaftGroup::Done)>& start) {
  auto result = std::make_shared<std::promise<Status>>();
  std::future<Status> f = result->get_future();
  start([result](const Status& s, uint64_t) { result->set_value(s); });
  return f.get();
}

}  // namespace

Status ReplicatedRange::AddVoter(uint64_t id, const std::string& address,
                                 std::chrono::milliseconds catch_up) {
  const RaftStatus before = group_->GetStatus();
  for (const RaftMember& m : before.members) {
    if (m.id == id && m.role == MemberRole::kVoter) return Status::Ok();
  }
  GROVE_RETURN_IF_ERROR(WaitFor([&](RaftGroup::Done d) {
    group_->SetRole(id, address, MemberRole::kStandby, std::move(d));
  }));
  // Caught up: its log holds what the leader had committed once it became a standby.
  const uint64_t target = group_->GetStatus().commit_index;
  const auto give_up = std::chrono::steady_clock::now() + catch_up;
  for (;;) {
    const RaftStatus s = group_->GetStatus();
    if (s.role != RaftRole::kLeader) {
      return Status::FailedPrecondition(fmt::format(
          "range {}: this replica stopped leading while replica {} caught up", options_.name, id));
    }
    uint64_t match = 0;
    for (const auto& [peer, m] : s.follower_match) {
      if (peer == id) match = m;
    }
    if (match >= target) break;
    if (std::chrono::steady_clock::now() >= give_up) {
      return Status::DeadlineExceeded(fmt::format(
          "range {}: replica {} holds the log up to {} after {} ms, not yet {}; it stays a "
          "standby (adding it again resumes the wait)",
          options_.name, id, match, catch_up.count(), target));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WaitFor(
      [&](RaftGroup::Done d) { group_->SetRole(id, address, MemberRole::kVoter, std::move(d)); });
}

Status ReplicatedRange::RemoveReplica(uint64_t id) {
  return WaitFor([&](RaftGroup::Done d) { group_->Remove(id, std::move(d)); });
}

Status ReplicatedRange::TransferLeadership(uint64_t id) {
  return WaitFor([&](RaftGroup::Done d) { group_->Transfer(id, std::move(d)); });
}

// --- the state machine, on the loop thread ---

Status ReplicatedRange::Apply(uint64_t index, Slice entry) {
  // The engine holds this entry already: the log is replayed from its snapshot at start.
  if (index <= applied_.load(std::memory_order_relaxed)) return Status::Ok();
  if (installing_) {
    return Status::FailedPrecondition(fmt::format(
        "range {}: an install of the range did not finish; entry {} cannot apply before a "
        "snapshot is installed",
        options_.name, index));
  }
  if (index >> kVersionIndexBits != 0) {
    return Status::ResourceExhausted(fmt::format(
        "range {}: entry {} is past the 2^{} entries a group's versions can number; split the "
        "range (its halves start new groups)",
        options_.name, index, kVersionIndexBits));
  }
  GROVE_ASSIGN_OR_RETURN(RangeCommand command, DecodeRangeCommand(entry));
  Status outcome;
  RangeWriteResult result;
  if (command.kind == RangeCommand::Kind::kWrite) {
    GROVE_RETURN_IF_ERROR(ApplyWrite(index, command, &outcome, &result));
  } else if (command.kind == RangeCommand::Kind::kDeleteRange) {
    GROVE_RETURN_IF_ERROR(ApplyDeleteRange(index, command, &outcome, &result));
  } else {
    GROVE_RETURN_IF_ERROR(ApplySplit(index, command, &outcome));
  }
  applied_.store(index, std::memory_order_release);
  if (command.proposer == options_.raft.id && command.incarnation == incarnation_) {
    MutexLock lock(&pending_mu_);
    auto it = pending_.find(command.sequence);
    if (it != pending_.end()) {
      it->second.status = std::move(outcome);
      it->second.result = std::move(result);
      it->second.applied = true;
    }
  }
  return Status::Ok();
}

Status ReplicatedRange::WriteMarked(uint64_t index, WriteBatch batch, const WriteOptions& options,
                                    WriteResult* result) {
  batch.SetMark(mark_name_, IndexValue(index));
  return db_->Write(batch, options, result);
}

Status ReplicatedRange::WriteRefusal(uint64_t index) {
  WriteOptions refusal;
  refusal.sync = false;
  return WriteMarked(index, WriteBatch(), refusal, nullptr);
}

Status ReplicatedRange::ApplyWrite(uint64_t index, const RangeCommand& command, Status* outcome,
                                   RangeWriteResult* result) {
  // Proposed before a split this replica applied since: every replica refuses it alike.
  if (Status past = OutsideRange(command.batch, command.conditions); !past.ok()) {
    *outcome = past;
    return WriteRefusal(index);
  }
  WriteOptions options;
  options.conditions = command.conditions;
  // Every replica must apply the entry: waiting for dirty-page room is not a reason to refuse.
  options.room_wait = std::chrono::hours(1);
  options.sync = false;  // the entry is in the synced Raft log: one synced log per write
  if (copier_.active()) {
    std::vector<Slice> keys;
    GROVE_RETURN_IF_ERROR(command.batch.ForEachOp([&](const WriteBatch::Op& op) {
      keys.push_back(op.key);
      return Status::Ok();
    }));
    GROVE_RETURN_IF_ERROR(copier_.Preserve(keys));
  }
  // Every key the entry sets carries the entry's version, on every replica alike.
  const uint64_t version = ReplicatedVersion(options_.raft.group, index);
  WriteBatch versioned;
  GROVE_RETURN_IF_ERROR(command.batch.ForEachOp([&](const WriteBatch::Op& op) {
    if (WriteBatch::IsPut(op.type)) {
      versioned.PutVersioned(op.key, op.value, version, op.expires_ms);
    } else {
      versioned.Delete(op.key);
    }
    return Status::Ok();
  }));
  Status s = WriteMarked(index, std::move(versioned), options, &result->write);
  if (s.ok()) {
    result->write.version = version;
    return Status::Ok();
  }
  // Refusals every replica makes alike (a failed condition on the same data, a write outside
  // limits the proposer did not share): the entry is applied as a refusal, its index recorded.
  if (s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kInvalidArgument) {
    *outcome = s;
    return WriteRefusal(index);
  }
  return s;  // the engine cannot write: this replica stops
}

Status ReplicatedRange::ApplyDeleteRange(uint64_t index, const RangeCommand& command,
                                         Status* outcome, RangeWriteResult* result) {
  // Deletes of the keys found, in one marked record: replayed after a crash, the entry is skipped
  // by its mark or applied whole, never twice (a second pass would remove the next keys).
  const uint64_t most = options_.max_batch_entries;
  const uint64_t limit = command.limit == 0 ? most : std::min<uint64_t>(command.limit, most);
  // An empty end is the range's end; an end past it (proposed before a split) is refused.
  const std::string range_end = this->end();
  const std::string end = command.end.empty() ? range_end : command.end;
  if (!Contains(command.start) || (!range_end.empty() && (end.empty() || end > range_end))) {
    *outcome = PastEnd(Contains(command.start) ? Slice(end) : Slice(command.start));
    return WriteRefusal(index);
  }
  ScanOptions scan;
  scan.lower = command.start;
  scan.upper = end;
  scan.has_upper = !end.empty();
  scan.keys_only = true;
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, db_->NewIterator(scan));
  WriteBatch batch;
  std::vector<std::string> keys;
  DeleteRangeResult& d = result->deleted;
  for (; it->Valid(); it->Next()) {
    if (d.deleted == limit) {
      d.more = true;
      d.resume_key.assign(it->key());
      d.limited_by =
          command.limit != 0 && command.limit <= most ? "limit" : "limits.max_batch_entries";
      break;
    }
    batch.Delete(it->key());
    if (copier_.active()) keys.emplace_back(it->key());
    ++d.deleted;
  }
  GROVE_RETURN_IF_ERROR(it->status());
  it.reset();
  if (!keys.empty()) GROVE_RETURN_IF_ERROR(copier_.Preserve({keys.begin(), keys.end()}));
  WriteOptions options;
  options.room_wait = std::chrono::hours(1);
  options.sync = false;
  GROVE_RETURN_IF_ERROR(WriteMarked(index, std::move(batch), options, nullptr));
  d.version = d.deleted > 0 ? ReplicatedVersion(options_.raft.group, index) : 0;
  *outcome = Status::Ok();
  return Status::Ok();
}

Status ReplicatedRange::ApplySplit(uint64_t index, const RangeCommand& command, Status* outcome) {
  const std::string& key = command.start;
  if (key == end()) {  // split there already (the same split proposed twice)
    *outcome = Status::Ok();
    return WriteRefusal(index);
  }
  if (!Contains(key) || key == options_.start) {
    *outcome = Status::InvalidArgument(fmt::format("split key: '{}' is not inside range {}",
                                                   PrintableForLog(Slice(key)), options_.name));
    return WriteRefusal(index);
  }
  // One record: this range ends at `key`, and the new group's range holds its keys as of this
  // entry (its applied mark at 1, the group's bootstrap configuration), so its replicas here go
  // on from that.
  WriteBatch batch;
  batch.SetMark(EndMark(options_.name), key);
  batch.SetMark(AppliedMark(ReplicatedRangeName(command.new_group)), IndexValue(1));
  WriteOptions options;
  options.room_wait = std::chrono::hours(1);
  options.sync = false;
  GROVE_RETURN_IF_ERROR(WriteMarked(index, std::move(batch), options, nullptr));
  {
    MutexLock lock(&bounds_mu_);
    end_ = key;
  }
  copier_.Narrow(key);
  *outcome = Status::Ok();
  return Status::Ok();
}

StatusOr<std::string> ReplicatedRange::Snapshot() {
  // libraft may drop the log behind this snapshot: the engine must hold those entries durably.
  GROVE_RETURN_IF_ERROR(db_->SyncWal());
  std::string out(1, kDescriptorVersion);
  PutFixed64(&out, applied_.load(std::memory_order_relaxed));
  PutLengthPrefixed(&out, end());
  out += options_.name;
  return out;
}

Status ReplicatedRange::Restore(Slice snapshot) {
  if (snapshot.size() < 9 || (snapshot[0] != 1 && snapshot[0] != kDescriptorVersion)) {
    return Status::DataLoss(fmt::format("range {}: a snapshot descriptor of {} bytes is malformed",
                                        options_.name, snapshot.size()));
  }
  const uint64_t index = DecodeFixed64(snapshot.data() + 1);
  if (snapshot[0] == kDescriptorVersion) {
    Slice rest = snapshot.substr(9);
    Slice end;
    if (!GetLengthPrefixed(&rest, &end)) {
      return Status::DataLoss(
          fmt::format("range {}: a snapshot descriptor's end is malformed", options_.name));
    }
    // Split at or before the snapshot: the range ends there, whichever entries this replica saw.
    if (!end.empty() && end != Slice(this->end())) {
      WriteBatch batch;
      batch.SetMark(EndMark(options_.name), end);
      GROVE_RETURN_IF_ERROR(db_->Write(batch, InstallWrites(), nullptr));
      {
        MutexLock lock(&bounds_mu_);
        end_.assign(end.data(), end.size());
      }
      copier_.Narrow(std::string(end.data(), end.size()));
    }
  }
  const uint64_t applied = applied_.load(std::memory_order_relaxed);
  if (applied >= index) return Status::Ok();  // the engine holds it (and maybe more)
  if (options_.source == nullptr) {
    return Status::FailedPrecondition(fmt::format(
        "range {}: this replica's engine holds entries up to {} and the snapshot stands for {}; "
        "it needs the range's data from another replica, and no source is configured",
        options_.name, applied, index));
  }
  return Install(index);
}

StatusOr<uint64_t> ReplicatedRange::CopyTo(uint64_t at_least, const RangeSink& sink,
                                           std::chrono::milliseconds wait) {
  if (loop_->OnLoopThread()) {
    return Status::FailedPrecondition(
        fmt::format("range {}: a copy cannot run on the range's own loop thread", options_.name));
  }
  const auto give_up = std::chrono::steady_clock::now() + wait;
  while (applied() < at_least) {
    if (std::chrono::steady_clock::now() > give_up) {
      return Status::Unavailable(fmt::format("range {}: this replica has applied {}, not yet {}",
                                             options_.name, applied(), at_least));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The cut: on the loop thread, between two applies, the engine holds exactly the entries up
  // to applied_.
  Status begun;
  uint64_t cut = 0;
  if (!loop_->RunAndWait([&] {
        begun = copier_.Begin();
        cut = applied_.load(std::memory_order_relaxed);
      })) {
    return Status::Unavailable(fmt::format("range {}: the loop is stopping", options_.name));
  }
  GROVE_RETURN_IF_ERROR(begun);
  Status s = copier_.Run(sink);
  copier_.End();
  GROVE_RETURN_IF_ERROR(s);
  return cut;
}

Status ReplicatedRange::Install(uint64_t index) {
  // libraft 0.15 keeps a snapshot whose restore failed as its own and does not send it again
  // (docs/libraft.md): a source that fails is retried here. A replica whose install gives up
  // keeps the installing mark, stops at the next entry, and installs again when it restarts.
  constexpr int kAttempts = 5;
  Status s;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    bool local_failure = false;
    s = InstallOnce(index, &local_failure);
    if (s.ok() || local_failure || closing_.load(std::memory_order_acquire)) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
  }
  return s.WithContext(
      fmt::format("range {}: gave up installing after {} attempts", options_.name, kAttempts));
}

Status ReplicatedRange::InstallOnce(uint64_t index, bool* local_failure) {
  // Errors of this engine are final (*local_failure); the source's may pass.
  auto local = [&](Status st) {
    if (!st.ok()) *local_failure = true;
    return st;
  };
  // 1. The installing mark, with the deletes of every key the range holds here.
  const uint64_t most_entries = std::max<uint64_t>(1, options_.max_batch_entries / 2);
  const uint64_t most_bytes = std::max<uint64_t>(1, options_.max_batch_bytes / 2);
  WriteBatch batch;
  batch.SetMark(installing_mark_, IndexValue(index));
  auto flush = [&]() -> Status {
    GROVE_RETURN_IF_ERROR(local(db_->Write(batch, InstallWrites(), nullptr)));
    batch.Clear();
    return Status::Ok();
  };
  ReplicatedRangeOptions bounds = options_;
  bounds.end = end();
  GROVE_RETURN_IF_ERROR(local(DeleteKeys(db_, bounds, &batch)));
  if (!batch.Empty()) GROVE_RETURN_IF_ERROR(flush());
  installing_ = true;
  // 2. The copy, in batches; the last one sets the applied mark and clears the installing one.
  StatusOr<uint64_t> copied =
      options_.source->CopyRange(options_.name, index, [&](const CopiedKey& e) -> Status {
        if (closing_.load(std::memory_order_acquire)) {
          return Status::Aborted(fmt::format(
              "range {}: closing; the install starts over at the next start", options_.name));
        }
        // The key keeps its version: a compare-and-set on it decides alike here and elsewhere.
        if (e.version != 0) {
          batch.PutVersioned(e.key, e.value, e.version, e.expires_ms);
        } else {
          batch.PutExpiring(e.key, e.value, e.expires_ms);
        }
        if (batch.Count() >= most_entries || batch.PayloadBytes() >= most_bytes) return flush();
        return Status::Ok();
      });
  GROVE_RETURN_IF_ERROR(copied.status().WithContext(fmt::format(
      "range {}: installing a snapshot at {} from another replica", options_.name, index)));
  if (*copied < index) {
    return Status::Internal(fmt::format("range {}: the copy stands for {}, before the snapshot {}",
                                        options_.name, *copied, index));
  }
  batch.SetMark(mark_name_, IndexValue(*copied));
  batch.SetMark(installing_mark_, "");
  GROVE_RETURN_IF_ERROR(flush());
  installing_ = false;
  applied_.store(*copied, std::memory_order_release);
  return Status::Ok();
}

}  // namespace grove::raft
