// grovectl cluster add-replica, remove-replica and transfer-leader, and cluster move of a
// replicated range: Raft configuration changes asked of the range's leader
// (grove.v1.RangeMembership), with the shard map written to match (docs/cluster.md, "Changing a
// range's replicas").
//
//   add-replica RANGE NODE      map: NODE listed under a new replica id (the range becomes
//                               reconfigured), so NODE starts an empty replica that waits to be
//                               brought the log; leader: ADD_VOTER (a standby that catches up,
//                               a snapshot install included, then a voter)
//   remove-replica RANGE NODE   leader: leadership passes away from NODE first if it leads;
//                               leader: REMOVE; map: NODE no longer listed, so NODE stops its
//                               replica and drops its copy
//   transfer-leader RANGE NODE  leader: TRANSFER_LEADER; map: NODE is the owner (tried first)
//   move RANGE NODE             add-replica NODE, leadership to NODE, remove-replica of the
//                               owner (or --from), the owner becoming NODE in the same map write
//   split KEY                   map: the split reserved (the right-hand range's id); leader: the
//                               split entry (the range ends at KEY on every replica, each
//                               engine holding [KEY, end) as the new group's first state); map:
//                               both ranges listed, so their replicas start the new group
//
// Every step is repeatable: interrupted, the same command again resumes where it stopped (an
// added replica is found in the map, a change already made is nothing to do).
//
// Replicated clusters run without TLS and tokens (docs/cluster.md), so the nodes are reached in
// plaintext.

#include <chrono>
#include <map>
#include <ostream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "grove/v1/replication.grpc.pb.h"

#include "cluster/members.h"
#include "cluster/shard_map.h"
#include "grovectl/commands.h"

namespace grove::grovectl {
namespace {

using Clock = std::chrono::steady_clock;
using v1::ChangeReplicasRequest;
using v1::ChangeReplicasResponse;

// How long a change keeps looking for the range's leader (an election under way).
constexpr std::chrono::seconds kFindLeader{20};

class Membership {
 public:
  Membership(const ClusterArgs& args, const ReplicaArgs& r, client::Format key_format,
             std::ostream& out, std::ostream& err, cluster::EtcdClient* etcd)
      : args_(args), r_(r), key_format_(key_format), out_(out), err_(err), etcd_(etcd) {}

  int AddReplica();
  int RemoveReplica();
  int TransferLeader();
  int Move();
  int Split();

 private:
  int Fail(const std::string& what, const Status& s) {
    err_ << "grovectl: cluster " << r_.command << ": " << what << ": " << s.ToString() << "\n";
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  int Fail(const std::string& what, const grpc::Status& s) {
    err_ << "grovectl: cluster " << r_.command << ": " << what << ": " << s.error_message()
         << " (gRPC " << static_cast<int>(s.error_code()) << ")\n"
         << "  run the same command again to resume\n";
    return kExitFailed;
  }
  std::string Describe(const cluster::ShardRange& r) const {
    return "[" + (r.start.empty() ? "-inf" : client::Encode(key_format_, r.start)) + ", " +
           (r.end.empty() ? "+inf" : client::Encode(key_format_, r.end)) + ")";
  }
  // Reads the map and the members: kExitOk, or the exit code with the message written.
  int ReadMap(cluster::ShardMap* map);
  // ReadMap, then the replicated range starting at r_.start.
  int Load();
  bool Edit(const std::string& what, const std::function<Status(cluster::ShardMap*)>& edit) {
    auto updated = cluster::UpdateShardMap(etcd_, args_.cluster, 0, edit);
    if (!updated.ok()) {
      Fail(what, updated.status());
      return false;
    }
    version_ = updated->version();
    auto at = updated->RangeAt(r_.start);
    if (at.ok()) range_ = updated->ranges()[*at];
    return true;
  }
  // Asks `node` for `request` within `timeout`.
  grpc::Status Call(const std::string& node, const ChangeReplicasRequest& request,
                    std::chrono::milliseconds timeout, ChangeReplicasResponse* response);
  // The node whose replica leads the range now (asking the replicas in turn); false with the
  // message written when none is found within kFindLeader.
  bool FindLeader(std::string* node, ChangeReplicasResponse* status);
  // Sends `change` about `replica_id` to the leader, finding it again when leadership moved or
  // another change was under way.
  grpc::Status AtLeader(ChangeReplicasRequest::Change change, uint64_t replica_id,
                        const std::string& raft_address, std::chrono::milliseconds timeout,
                        ChangeReplicasResponse* response);
  // The same for a request filled in by the caller (its range id is set here).
  grpc::Status AtLeader(ChangeReplicasRequest request, std::chrono::milliseconds timeout,
                        ChangeReplicasResponse* response);
  std::string NodeOf(uint64_t replica_id) const {
    for (const cluster::RangeReplica& x : range_.replicas) {
      if (x.id == replica_id) return x.node;
    }
    return "";
  }
  std::string Members(const ChangeReplicasResponse& s) const {
    std::string out;
    for (const v1::RaftMemberStatus& m : s.members()) {
      if (!out.empty()) out += ", ";
      const std::string node = NodeOf(m.id());
      out += (node.empty() ? "replica " + std::to_string(m.id()) : node) + " (" + m.role() +
             (m.id() == s.leader_id() ? ", leader" : "") + ")";
    }
    return out;
  }
  std::chrono::milliseconds CallTimeout() const {
    return std::chrono::milliseconds(
        static_cast<int64_t>(std::max(args_.timeout_seconds, 10.0) * 1000));
  }
  // The steps, on a loaded range.
  int Add(const std::string& node, bool* added);
  int Transfer(const std::string& node);
  int Remove(const std::string& node, const std::string& new_owner);

  const ClusterArgs& args_;
  const ReplicaArgs& r_;
  const client::Format key_format_;
  std::ostream& out_;
  std::ostream& err_;
  cluster::EtcdClient* const etcd_;
  cluster::ShardRange range_;
  uint64_t version_ = 0;
  std::map<std::string, cluster::NodeStatus> nodes_;
};

int Membership::ReadMap(cluster::ShardMap* map) {
  auto stored = cluster::ReadShardMap(etcd_, args_.cluster);
  if (!stored.ok()) return Fail("reading the shard map", stored.status());
  if (!*stored) {
    return Fail("reading the shard map",
                Status::FailedPrecondition("cluster '" + args_.cluster + "' has no shard map"));
  }
  *map = std::move((*stored)->map);
  version_ = map->version();
  auto nodes = cluster::ListNodes(etcd_, args_.cluster);
  if (!nodes.ok()) return Fail("reading the members", nodes.status());
  for (const cluster::NodeStatus& n : *nodes) nodes_[n.name] = n;
  return kExitOk;
}

int Membership::Load() {
  cluster::ShardMap map;
  if (int rc = ReadMap(&map); rc != kExitOk) return rc;
  auto index = map.RangeAt(r_.start);
  if (!index.ok()) return Fail("RANGE", index.status());
  range_ = map.ranges()[*index];
  if (!range_.replicated()) {
    return Fail("RANGE", Status::FailedPrecondition(
                             "range " + Describe(range_) +
                             " is not replicated (its owner alone holds it): grovectl cluster "
                             "move gives it to another node"));
  }
  return kExitOk;
}

grpc::Status Membership::Call(const std::string& node, const ChangeReplicasRequest& request,
                              std::chrono::milliseconds timeout, ChangeReplicasResponse* response) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.address.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "node '" + node + "' has never registered an address");
  }
  auto channel = grpc::CreateChannel(it->second.address, grpc::InsecureChannelCredentials());
  auto stub = v1::RangeMembership::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  return stub->ChangeReplicas(&context, request, response);
}

bool Membership::FindLeader(std::string* node, ChangeReplicasResponse* status) {
  const auto give_up = Clock::now() + kFindLeader;
  grpc::Status last;
  while (Clock::now() < give_up) {
    // The owner first: it leads unless leadership moved.
    std::vector<std::string> order{range_.owner};
    for (const cluster::RangeReplica& x : range_.replicas) {
      if (x.node != range_.owner) order.push_back(x.node);
    }
    for (const std::string& n : order) {
      ChangeReplicasRequest request;
      request.set_range_id(range_.id);
      request.set_change(ChangeReplicasRequest::STATUS);
      ChangeReplicasResponse response;
      last = Call(n, request, std::chrono::seconds(2), &response);
      if (!last.ok()) continue;
      if (response.role() == "leader") {
        *node = n;
        *status = std::move(response);
        return true;
      }
      const std::string leader = NodeOf(response.leader_id());
      if (leader.empty() || leader == n) continue;
      ChangeReplicasResponse at_leader;
      if (Call(leader, request, std::chrono::seconds(2), &at_leader).ok() &&
          at_leader.role() == "leader") {
        *node = leader;
        *status = std::move(at_leader);
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Fail("finding the range's leader",
       last.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                "no replica of range " + Describe(range_) + " leads it")
                 : last);
  return false;
}

grpc::Status Membership::AtLeader(ChangeReplicasRequest::Change change, uint64_t replica_id,
                                  const std::string& raft_address,
                                  std::chrono::milliseconds timeout,
                                  ChangeReplicasResponse* response) {
  ChangeReplicasRequest request;
  request.set_change(change);
  request.set_replica_id(replica_id);
  request.set_raft_address(raft_address);
  request.set_catch_up_ms(static_cast<uint64_t>(r_.catch_up_seconds * 1000));
  return AtLeader(std::move(request), timeout, response);
}

grpc::Status Membership::AtLeader(ChangeReplicasRequest request, std::chrono::milliseconds timeout,
                                  ChangeReplicasResponse* response) {
  request.set_range_id(range_.id);
  grpc::Status s;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string leader;
    ChangeReplicasResponse status;
    if (!FindLeader(&leader, &status)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no leader found");
    }
    s = Call(leader, request, timeout, response);
    // Leadership moved, or another change was under way: look again.
    if (s.error_code() != grpc::StatusCode::FAILED_PRECONDITION &&
        s.error_code() != grpc::StatusCode::ABORTED &&
        s.error_code() != grpc::StatusCode::UNAVAILABLE) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return s;
}

int Membership::Add(const std::string& node, bool* added) {
  *added = false;
  auto n = nodes_.find(node);
  if (n == nodes_.end()) {
    return Fail("NODE", Status::InvalidArgument("no node '" + node + "' in cluster '" +
                                                args_.cluster + "'"));
  }
  if (n->second.raft_address.empty()) {
    return Fail("NODE", Status::FailedPrecondition(
                            "node '" + node +
                            "' has registered no Raft address (it must run with cluster.raft)"));
  }
  const cluster::RangeReplica* listed = range_.ReplicaOn(node);
  uint64_t id = listed != nullptr ? listed->id : 0;
  if (id == 0) {
    if (!Edit("listing the new replica", [&](cluster::ShardMap* m) -> Status {
          GROVE_ASSIGN_OR_RETURN(id, m->AddReplica(r_.start, node));
          return Status::Ok();
        })) {
      return kExitFailed;
    }
    *added = true;
  }
  out_ << "adding replica " << id << " of range " << Describe(range_) << " on " << node
       << " (map version " << version_ << "): it catches up, then votes\n";
  const auto began = Clock::now();
  ChangeReplicasResponse response;
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(r_.catch_up_seconds * 1000)) + CallTimeout();
  grpc::Status s =
      AtLeader(ChangeReplicasRequest::ADD_VOTER, id, n->second.raft_address, timeout, &response);
  if (!s.ok()) return Fail("adding the replica to the range's group", s);
  out_ << "replica " << id << " on " << node << " votes (after "
       << std::chrono::duration<double>(Clock::now() - began).count()
       << " s); members: " << Members(response) << "\n";
  return kExitOk;
}

int Membership::Transfer(const std::string& node) {
  const cluster::RangeReplica* target = range_.ReplicaOn(node);
  if (target == nullptr) {
    return Fail("NODE", Status::InvalidArgument("node '" + node + "' holds no replica of range " +
                                                Describe(range_)));
  }
  ChangeReplicasResponse response;
  grpc::Status s =
      AtLeader(ChangeReplicasRequest::TRANSFER_LEADER, target->id, "", CallTimeout(), &response);
  if (!s.ok()) return Fail("transferring leadership", s);
  out_ << node << " leads range " << Describe(range_) << " (term " << response.term() << ")\n";
  return kExitOk;
}

int Membership::Remove(const std::string& node, const std::string& new_owner) {
  const cluster::RangeReplica* gone = range_.ReplicaOn(node);
  if (gone == nullptr) {
    return Fail("NODE", Status::InvalidArgument("node '" + node + "' holds no replica of range " +
                                                Describe(range_)));
  }
  if (range_.replicas.size() == 1) {
    return Fail("NODE",
                Status::FailedPrecondition("range " + Describe(range_) + " has one replica, on '" +
                                           node + "': removing it would leave the range nowhere"));
  }
  const uint64_t id = gone->id;
  std::string leader;
  ChangeReplicasResponse status;
  if (!FindLeader(&leader, &status)) return kExitFailed;
  std::string owner = new_owner;
  if (leader == node) {
    // A leader cannot remove itself: leadership passes to another voter first.
    std::string heir;
    for (const v1::RaftMemberStatus& m : status.members()) {
      if (m.id() != id && m.role() == "voter" && !NodeOf(m.id()).empty()) {
        heir = NodeOf(m.id());
        break;
      }
    }
    if (heir.empty()) {
      return Fail("NODE", Status::FailedPrecondition("replica " + std::to_string(id) + " on '" +
                                                     node + "' is the range's only voter"));
    }
    if (int rc = Transfer(heir); rc != kExitOk) return rc;
    if (owner.empty()) owner = heir;
  } else if (owner.empty() && range_.owner == node) {
    owner = leader;
  }
  ChangeReplicasResponse response;
  grpc::Status s = AtLeader(ChangeReplicasRequest::REMOVE, id, "", CallTimeout(), &response);
  if (!s.ok()) return Fail("removing the replica from the range's group", s);
  if (!Edit("unlisting the replica", [&](cluster::ShardMap* m) -> Status {
        GROVE_RETURN_IF_ERROR(m->RemoveReplica(r_.start, node));
        if (!owner.empty()) return m->Assign(r_.start, owner);
        return Status::Ok();
      })) {
    return kExitFailed;
  }
  out_ << "removed replica " << id << " of range " << Describe(range_) << " from " << node
       << " (map version " << version_ << "; " << node
       << " drops its copy); members: " << Members(response) << "\n";
  return kExitOk;
}

int Membership::Split() {
  const std::string& key = r_.start;
  cluster::ShardMap map;
  if (int rc = ReadMap(&map); rc != kExitOk) return rc;
  range_ = map.Find(key);
  // 1. The map reserves the right-hand range's id (or has: a split run again resumes).
  uint64_t id = range_.split_id != 0 && range_.split_key == key ? range_.split_id : 0;
  if (id == 0) {
    if (!Edit("reserving the split", [&](cluster::ShardMap* m) -> Status {
          GROVE_ASSIGN_OR_RETURN(id, m->ReserveSplit(key));
          return Status::Ok();
        })) {
      return kExitFailed;
    }
  }
  // 2. The split entry, committed by the range's group and applied at its leader.
  ChangeReplicasRequest request;
  request.set_change(ChangeReplicasRequest::SPLIT);
  request.set_split_key(key);
  request.set_new_range_id(id);
  ChangeReplicasResponse response;
  grpc::Status s = AtLeader(std::move(request), CallTimeout(), &response);
  if (!s.ok()) return Fail("splitting in the range's group", s);
  // 3. The map lists both ranges; the right one's replicas start its group.
  auto updated = cluster::UpdateShardMap(
      etcd_, args_.cluster, 0, [&](cluster::ShardMap* m) { return m->CompleteSplit(key); });
  if (!updated.ok()) return Fail("listing the two ranges", updated.status());
  const cluster::ShardRange& right = updated->Find(key);
  const cluster::ShardRange& left = updated->ranges()[updated->IndexOf(key) - 1];
  out_ << "split at " << client::Encode(key_format_, key) << ": range " << left.id << " "
       << Describe(left) << " and range " << right.id << " " << Describe(right)
       << ", replicated on the same nodes; map version " << updated->version() << "\n";
  return kExitOk;
}

int Membership::AddReplica() {
  if (int rc = Load(); rc != kExitOk) return rc;
  bool added = false;
  return Add(r_.node, &added);
}

int Membership::RemoveReplica() {
  if (int rc = Load(); rc != kExitOk) return rc;
  return Remove(r_.node, "");
}

int Membership::TransferLeader() {
  if (int rc = Load(); rc != kExitOk) return rc;
  if (int rc = Transfer(r_.node); rc != kExitOk) return rc;
  if (range_.owner != r_.node && !Edit("making it the owner", [&](cluster::ShardMap* m) {
        return m->Assign(r_.start, r_.node);
      })) {
    return kExitFailed;
  }
  return kExitOk;
}

int Membership::Move() {
  if (int rc = Load(); rc != kExitOk) return rc;
  const std::string from = r_.from.empty() ? range_.owner : r_.from;
  if (from == r_.node) {
    out_ << "range " << Describe(range_) << ": " << r_.node << " is where it moves from already\n";
    return kExitOk;
  }
  if (range_.ReplicaOn(from) == nullptr) {
    if (range_.ReplicaOn(r_.node) != nullptr && r_.from.empty()) {
      out_ << "range " << Describe(range_) << " has a replica on " << r_.node << " already\n";
      return kExitOk;
    }
    return Fail("--from", Status::InvalidArgument("node '" + from + "' holds no replica of range " +
                                                  Describe(range_)));
  }
  const auto began = Clock::now();
  bool added = false;
  if (int rc = Add(r_.node, &added); rc != kExitOk) return rc;
  if (int rc = Transfer(r_.node); rc != kExitOk) return rc;
  if (int rc = Remove(from, r_.node); rc != kExitOk) return rc;
  out_ << "moved range " << Describe(range_) << "'s replica from " << from << " to " << r_.node
       << " in " << std::chrono::duration<double>(Clock::now() - began).count() << " s\n";
  return kExitOk;
}

}  // namespace

int RunClusterReplicas(const ClusterArgs& args, const ReplicaArgs& replica,
                       client::Format key_format, std::ostream& out, std::ostream& err) {
  std::unique_ptr<cluster::EtcdClient> etcd = ConnectEtcd(args, err);
  if (etcd == nullptr) return kExitUsage;
  if (replica.catch_up_seconds <= 0) {
    err << "grovectl: cluster " << replica.command << ": --catch-up-timeout must be positive\n";
    return kExitUsage;
  }
  Membership m(args, replica, key_format, out, err, etcd.get());
  if (replica.command == "add-replica") return m.AddReplica();
  if (replica.command == "remove-replica") return m.RemoveReplica();
  if (replica.command == "transfer-leader") return m.TransferLeader();
  if (replica.command == "split") return m.Split();
  return m.Move();
}

}  // namespace grove::grovectl
