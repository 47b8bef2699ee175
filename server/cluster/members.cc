#include "cluster/members.h"

#include "grove/v1/cluster.pb.h"

namespace grove::cluster {
namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::string ClusterPrefix(const std::string& cluster) { return "/grove/" + cluster + "/"; }
std::string NodeKey(const std::string& cluster, const std::string& name) {
  return ClusterPrefix(cluster) + "nodes/" + name;
}
std::string AliveKey(const std::string& cluster, const std::string& name) {
  return ClusterPrefix(cluster) + "alive/" + name;
}

Status CheckNames(const std::string& cluster, const std::string& node_name) {
  if (!ValidName(cluster)) {
    return Status::InvalidArgument("cluster.name: '" + cluster +
                                   "' is not 1..63 of a-z, 0-9, '_' and '-'");
  }
  if (!ValidName(node_name)) {
    return Status::InvalidArgument("cluster.node_name: '" + node_name +
                                   "' is not 1..63 of a-z, 0-9, '_' and '-'");
  }
  return Status::Ok();
}

StatusOr<std::vector<NodeStatus>> ListNodes(EtcdClient* etcd, const std::string& cluster) {
  const std::string nodes = ClusterPrefix(cluster) + "nodes/";
  const std::string alive = ClusterPrefix(cluster) + "alive/";
  GROVE_ASSIGN_OR_RETURN(std::vector<EtcdKv> members, etcd->GetPrefix(nodes));
  GROVE_ASSIGN_OR_RETURN(std::vector<EtcdKv> up, etcd->GetPrefix(alive));
  std::vector<NodeStatus> out;
  for (const EtcdKv& kv : members) {
    grove::v1::NodeInfo info;
    if (!info.ParseFromString(kv.value)) {
      return Status::DataLoss("cluster: the record at '" + kv.key + "' does not parse");
    }
    NodeStatus n{info.name(), info.address(),     info.version(), info.started_unix_ms(),
                 false,       info.raft_address()};
    for (const EtcdKv& a : up) n.alive |= a.key == alive + n.name;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace grove::cluster
