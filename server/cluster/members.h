#pragma once

// The member records of a cluster in etcd, as groved writes them (cluster/membership.h) and
// clients read them (routing, grovectl cluster): under the cluster's prefix
// P = "/grove/<cluster>/" (docs/cluster.md),
//
//   P nodes/<name>   NodeInfo (proto/grove/v1/cluster.proto): address, version, start time
//   P alive/<name>   the same NodeInfo under the node's lease: present while the node is up
//
// Part of grove_cluster_meta, with the etcd client and the shard map: what clients link.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/status.h"

#include "cluster/etcd_client.h"

namespace grove::cluster {

// What the member list says about one node.
struct NodeStatus {
  std::string name, address, version;
  int64_t started_unix_ms = 0;
  bool alive = false;
  std::string raft_address;  // its Raft transport ("" : it hosts no replicated range)
};

// The prefix of a cluster's keys, and the keys of one node.
std::string ClusterPrefix(const std::string& cluster);
std::string NodeKey(const std::string& cluster, const std::string& name);
std::string AliveKey(const std::string& cluster, const std::string& name);
// Checks the cluster and node names (field names in the messages: cluster.name,
// cluster.node_name).
Status CheckNames(const std::string& cluster, const std::string& node_name);

// Every member of `cluster`, in name order, with liveness.
StatusOr<std::vector<NodeStatus>> ListNodes(EtcdClient* etcd, const std::string& cluster);

}  // namespace grove::cluster
