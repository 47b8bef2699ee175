#include "service/membership_service.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "service/status_mapping.h"

namespace grove::service {
namespace {

using Request = grove::v1::ChangeReplicasRequest;

constexpr uint64_t kDefaultCatchUpMs = 600000;

void Describe(raft::ReplicatedRange* range, grove::v1::ChangeReplicasResponse* out) {
  const raft::RaftStatus s = range->GetStatus();
  out->set_role(raft::RaftRoleName(s.role));
  out->set_leader_id(s.leader_id);
  out->set_term(s.term);
  out->set_commit_index(s.commit_index);
  out->set_applied_index(s.last_applied);
  for (const raft::RaftMember& m : s.members) {
    grove::v1::RaftMemberStatus* to = out->add_members();
    to->set_id(m.id);
    to->set_raft_address(m.address);
    to->set_role(raft::MemberRoleName(m.role));
    for (const auto& [peer, match] : s.follower_match) {
      if (peer == m.id) to->set_match_index(match);
    }
  }
}

}  // namespace

grpc::Status MembershipService::ChangeReplicas(grpc::ServerContext* context, const Request* request,
                                               grove::v1::ChangeReplicasResponse* response) {
  if (request->range_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "range_id: required (nonzero)");
  }
  const bool changes = request->change() != Request::STATUS;
  if (request->change() == Request::CHANGE_UNSPECIFIED ||
      !Request::Change_IsValid(request->change())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("change: {} is not STATUS, ADD_VOTER, REMOVE, "
                                    "TRANSFER_LEADER or SPLIT",
                                    static_cast<int>(request->change())));
  }
  const bool split = request->change() == Request::SPLIT;
  if (split && request->split_key().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "split_key: required");
  }
  if (split && request->new_range_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "new_range_id: required (nonzero)");
  }
  if (changes && !split && request->replica_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "replica_id: required (nonzero)");
  }
  if (request->change() == Request::ADD_VOTER && request->raft_address().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "raft_address: required to add a replica");
  }
  std::shared_ptr<raft::ReplicatedRange> range = host_->Find(request->range_id());
  if (range == nullptr) {
    std::string why = host_->StartProblem(request->range_id());
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        fmt::format("range_id: no replica of range {} runs on node '{}'{}", request->range_id(),
                    host_->node(), why.empty() ? "" : " (" + why + ")"));
  }
  Status done;
  switch (request->change()) {
    case Request::ADD_VOTER: {
      uint64_t ms = request->catch_up_ms() == 0 ? kDefaultCatchUpMs : request->catch_up_ms();
      // Within the call's deadline, leaving a little of it for the answer.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          context->deadline() - std::chrono::system_clock::now());
      if (left.count() > 200)
        ms = std::min<uint64_t>(ms, static_cast<uint64_t>(left.count()) - 100);
      done = range->AddVoter(request->replica_id(), request->raft_address(),
                             std::chrono::milliseconds(ms));
      break;
    }
    case Request::REMOVE:
      done = range->RemoveReplica(request->replica_id());
      break;
    case Request::TRANSFER_LEADER:
      done = range->TransferLeadership(request->replica_id());
      break;
    case Request::SPLIT:
      done = range->Split(request->split_key(), request->new_range_id());
      break;
    default:
      break;
  }
  if (!done.ok()) return ToGrpcStatus(done, fmt::format("range {}", request->range_id()));
  response->set_replica_id(range->replica_id());
  Describe(range.get(), response);
  return grpc::Status::OK;
}

}  // namespace grove::service
