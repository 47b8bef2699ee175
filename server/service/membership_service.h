#pragma once

// grove.v1.RangeMembership: the Raft configuration changes of this node's replicas
// (proto/grove/v1/replication.proto; docs/cluster.md, "Changing a range's replicas"), asked by
// grovectl of a range's leader. Each call acts on the replica of `range_id` running here and
// blocks until its change completes (ADD_VOTER: until the new replica caught up, bounded by
// catch_up_ms and the call's deadline).
//
// Thread safety: calls from any gRPC threads; the host's replicas serialise what they change
// (one configuration change at a time per group, ABORTED otherwise).

#include <grpcpp/grpcpp.h>

#include "grove/v1/replication.grpc.pb.h"

#include "service/replica_host.h"

namespace grove::service {

class MembershipService final : public grove::v1::RangeMembership::Service {
 public:
  // `host` must outlive the service.
  explicit MembershipService(ReplicaHost* host) : host_(host) {}

  grpc::Status ChangeReplicas(grpc::ServerContext* context,
                              const grove::v1::ChangeReplicasRequest* request,
                              grove::v1::ChangeReplicasResponse* response) override;

 private:
  ReplicaHost* const host_;
};

}  // namespace grove::service
