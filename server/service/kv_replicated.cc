// The KV calls on replicated ranges (docs/cluster.md, "Serving replicated ranges").
//
// Ownership has let the call through: this node is one of the range's replicas. Then:
//
//   writes    proposed to the range's Raft group through this node's replica; acknowledged once
//             a majority holds the entry and this replica applied it. A replica that does not
//             lead refuses with OUT_OF_RANGE, grove-not-leader: 1 and grove-leader: <node>
//             (nothing applied; the client resends there); without a known leader (an election)
//             UNAVAILABLE with grove-not-applied.
//   reads     on the leader only, after a barrier: every write committed before the read began
//             is applied here first, so the read is linearizable. The same refusals elsewhere.
//             A read that accepts staleness (grove-max-staleness-ms: N) is served by any
//             replica that heard from its group within N ms and applied what it knows
//             committed, without a barrier, with the bound in grove-staleness-ms.
//
// A write's keys must all be in one replicated range (one Raft group); a DeleteRange likewise
// covers one range (routing clients send it range by range).

#include <functional>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "grove/v1/metadata.h"

#include "service/kv_call.h"
#include "service/status_mapping.h"

namespace grove::service {
namespace {

// Waits for a replicated write's outcome up to the call's deadline; the callback may outlive
// the wait (an entry still in flight), so the state is shared.
struct WriteWait {
  Mutex mu;
  CondVar cv{&mu};
  bool done GROVE_GUARDED_BY(mu) = false;
  Status status GROVE_GUARDED_BY(mu);
  raft::RangeWriteResult result GROVE_GUARDED_BY(mu);
};

}  // namespace

grpc::Status KvService::ReplicaOf(const Call& call, std::string_view key,
                                  ReplicaBinding* out) const {
  *out = ReplicaBinding();
  const cluster::ShardMap* map = call.map();
  if (map == nullptr) return grpc::Status::OK;
  const cluster::ShardRange& range = map->Find(key);
  if (!range.replicated()) return grpc::Status::OK;
  out->range = &range;
  if (replicas_ != nullptr) out->replica = replicas_->Find(range.id);
  if (out->replica != nullptr) return grpc::Status::OK;
  call.metadata()->AddTrailer(v1::kNotAppliedMetadata, "1");
  std::string why = replicas_ == nullptr ? "this node runs no Raft transport (cluster.raft.listen)"
                                         : replicas_->StartProblem(range.id);
  if (why.empty()) why = "it is starting";
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      fmt::format("range {} is replicated and this node's replica is not running: "
                                  "{}; nothing was applied: retry, or send it to another replica",
                                  range.Describe(), why));
}

grpc::Status KvService::BindReplica(const Call& call, PendingWrite* w) const {
  if (w->keys.empty()) return grpc::Status::OK;
  if (grpc::Status s = ReplicaOf(call, w->keys[0], &w->replica); !s.ok()) return s;
  if (w->replica.range == nullptr && call.map() == nullptr) return grpc::Status::OK;
  // One write is one Raft entry of one group: every key in the first key's range.
  for (size_t i = 1; i < w->keys.size(); ++i) {
    const cluster::ShardRange& other = call.map()->Find(w->keys[i]);
    const bool same =
        w->replica.range != nullptr ? other.id == w->replica.range->id : !other.replicated();
    if (!same) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          fmt::format("mutations[{}].key is in shard range {}, mutations[0].key in {}: a write "
                      "to a replicated range stays within that range; send one batch per range",
                      i, other.Describe(), call.map()->Find(w->keys[0]).Describe()));
    }
  }
  return grpc::Status::OK;
}

grpc::Status KvService::SpanInOneReplicatedRange(const Call& call, const ReplicaBinding& binding,
                                                 const v1::DeleteRangeRequest& request) const {
  if (call.map() == nullptr) return grpc::Status::OK;
  const cluster::ShardMap& map = *call.map();
  const size_t first = map.IndexOf(request.start());
  for (size_t i = first; i < map.ranges().size(); ++i) {
    const cluster::ShardRange& r = map.ranges()[i];
    if (!request.end().empty() && r.start >= request.end()) break;
    if (i == first || (binding.range == nullptr && !r.replicated())) continue;
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("end: [{}, {}) spans shard ranges {} and {}, and a range delete on a "
                    "replicated range stays within it; delete range by range",
                    cluster::PrintableKey(request.start()),
                    cluster::PrintableKey(request.end(), true), map.ranges()[first].Describe(),
                    r.Describe()));
  }
  return grpc::Status::OK;
}

grpc::Status KvService::NotLeader(const Call& call, const ReplicaBinding& binding,
                                  const Status& refusal) const {
  CallMetadata* md = call.metadata();
  md->AddTrailer(v1::kNotAppliedMetadata, "1");
  const raft::RaftStatus status = binding.replica->GetStatus();
  std::string leader;
  for (const cluster::RangeReplica& r : binding.range->replicas) {
    if (r.id == status.leader_id && status.leader_id != 0) leader = r.node;
  }
  const std::string& me = replicas_->node();
  if (leader.empty() || leader == me) {
    return grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        fmt::format("range {} has no leader now (an election is under way: {}); nothing was "
                    "applied: retry in a moment",
                    binding.range->Describe(), refusal.message()));
  }
  md->AddTrailer(v1::kNotLeaderMetadata, "1");
  md->AddTrailer(v1::kLeaderMetadata, leader);
  md->AddTrailer(v1::kMapVersionMetadata, std::to_string(call.map()->version()));
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                      fmt::format("not leader: range {} is led by node '{}', not '{}'; nothing was "
                                  "applied: send it there",
                                  binding.range->Describe(), leader, me));
}

Status KvService::WaitForReplicated(const Call& call,
                                    const std::function<void(raft::ReplicatedRange::Done)>& propose,
                                    raft::RangeWriteResult* result) {
  auto wait = std::make_shared<WriteWait>();
  propose([wait](const Status& status, const raft::RangeWriteResult& r) {
    MutexLock lock(&wait->mu);
    wait->status = status;
    wait->result = r;
    wait->done = true;
    wait->cv.SignalAll();
  });
  MutexLock lock(&wait->mu);
  while (!wait->done) {
    if (!wait->cv.WaitFor(call.Remaining()) && !wait->done) {
      return Status::DeadlineExceeded(
          "deadline exceeded while the write was being replicated; it may still apply");
    }
  }
  *result = wait->result;
  return wait->status;
}

grpc::Status KvService::ReplicatedOutcome(const Call& call, const ReplicaBinding& binding,
                                          const Status& s, const raft::RangeWriteResult& result,
                                          bool* decided) const {
  *decided = true;
  if (s.code() == StatusCode::kFailedPrecondition && result.write.failed_condition < 0) {
    return NotLeader(call, binding, s);  // proposed nowhere: it names the leader
  }
  if (s.code() == StatusCode::kUnavailable) {
    // Leadership lost with the entry in flight: it may still commit. Not "not applied".
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(s.message()));
  }
  if (s.code() == StatusCode::kAborted) return SplitSince(call, s.message());
  *decided = false;
  return grpc::Status::OK;
}

grpc::Status KvService::RunReplicatedWrite(const Call& call, PendingWrite* w) {
  // A call whose client gave up (a node paused or slow to get here) is not proposed late.
  if (call.Expired()) {
    call.metadata()->AddTrailer(v1::kNotAppliedMetadata, "1");
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "deadline exceeded before the write was proposed; nothing was applied");
  }
  raft::ReplicatedRange* replica = w->replica.replica.get();
  raft::RangeWriteResult result;
  const Status s = WaitForReplicated(
      call,
      [&](raft::ReplicatedRange::Done done) {
        replica->Write(w->batch, w->options.conditions, std::move(done));
      },
      &result);
  bool decided = false;
  grpc::Status refused = ReplicatedOutcome(call, w->replica, s, result, &decided);
  if (decided) return refused;
  w->result = result.write;
  return FinishWrite(call, w, s);
}

grpc::Status KvService::RunReplicatedDeleteRange(const Call& call, const ReplicaBinding& binding,
                                                 const v1::DeleteRangeRequest& request,
                                                 DeleteRangeResult* deleted) {
  raft::RangeWriteResult result;
  const Status s = WaitForReplicated(
      call,
      [&](raft::ReplicatedRange::Done done) {
        binding.replica->DeleteRange(request.start(), request.end(), request.limit(),
                                     std::move(done));
      },
      &result);
  bool decided = false;
  grpc::Status refused = ReplicatedOutcome(call, binding, s, result, &decided);
  if (decided) return refused;
  if (!s.ok()) return EngineError(s, "delete_range");
  *deleted = result.deleted;
  return grpc::Status::OK;
}

// A stale read (kMaxStalenessMetadata) is served here when this replica heard from its group
// within the bound the client gave and has applied every entry it knows committed: what it may
// miss is what committed since that contact. Otherwise the read goes the linearizable way.
grpc::Status KvService::StaleRead(const Call& call, const ReplicaBinding& binding,
                                  bool* served) const {
  *served = false;
  const std::optional<std::string_view> asked = call.metadata()->Client(v1::kMaxStalenessMetadata);
  if (!asked) return grpc::Status::OK;
  uint64_t bound_ms = 0;
  bool number = !asked->empty() && asked->size() <= 12;
  for (const char c : *asked) {
    number = number && c >= '0' && c <= '9';
    if (number) bound_ms = bound_ms * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!number) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("metadata {}: '{}' is not a number of milliseconds (0 to "
                                    "999999999999)",
                                    v1::kMaxStalenessMetadata, *asked));
  }
  const raft::RaftStatus s = binding.replica->GetStatus();
  // A standby or spare (a replica still catching up after add-replica) holds no promise of
  // how far behind it is: only voters serve stale reads.
  const bool member =
      s.voter && (s.role == raft::RaftRole::kLeader || s.role == raft::RaftRole::kFollower);
  if (!member || s.leader_id == 0 || s.last_applied < s.commit_index ||
      s.contact_age_ms > bound_ms) {
    return grpc::Status::OK;
  }
  call.metadata()->AddTrailer(v1::kStalenessMetadata, std::to_string(s.contact_age_ms));
  *served = true;
  return grpc::Status::OK;
}

grpc::Status KvService::SplitSince(const Call& call, std::string_view why) const {
  CallMetadata* md = call.metadata();
  md->AddTrailer(v1::kNotAppliedMetadata, "1");
  md->AddTrailer(v1::kNotOwnerMetadata, "1");
  md->AddTrailer(v1::kMapVersionMetadata, std::to_string(call.map()->version()));
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                      fmt::format("not owner: {} (the shard map this node has, version {}, does "
                                  "not show the split yet); refresh the map and retry",
                                  why, call.map()->version()));
}

grpc::Status KvService::LeaderRead(const Call& call, const ReplicaBinding& binding) const {
  if (binding.replica == nullptr) return grpc::Status::OK;
  // The replica applied a split this node's map does not show yet: the keys past it are read
  // from the new range's group, once the map lists it.
  auto split = [&]() -> grpc::Status {
    if (binding.replica->end() == binding.range->end) return grpc::Status::OK;
    return SplitSince(
        call, fmt::format("range {} was split at its replica's end", binding.range->Describe()));
  };
  bool stale = false;
  if (grpc::Status s = StaleRead(call, binding, &stale); !s.ok() || stale) {
    return s.ok() ? split() : s;
  }
  StatusOr<uint64_t> barrier = binding.replica->ReadBarrier();
  if (barrier.ok()) return split();
  if (barrier.status().code() == StatusCode::kFailedPrecondition) {
    return NotLeader(call, binding, barrier.status());
  }
  return ToGrpcStatus(barrier.status(), "read barrier");
}

grpc::Status KvService::LeaderReadOfKeys(
    const Call& call, const google::protobuf::RepeatedPtrField<std::string>& keys) const {
  std::set<uint64_t> done;
  for (const std::string& key : keys) {
    ReplicaBinding binding;
    if (grpc::Status s = ReplicaOf(call, key, &binding); !s.ok()) return s;
    if (binding.replica == nullptr || !done.insert(binding.range->id).second) continue;
    if (grpc::Status s = LeaderRead(call, binding); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

}  // namespace grove::service
