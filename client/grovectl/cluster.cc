// grovectl cluster ...: commands that read the cluster's metadata in etcd (docs/cluster.md),
// without going through a groved.

#include <ctime>
#include <ostream>

#include "cluster/members.h"
#include "cluster/shard_map.h"
#include "grovectl/commands.h"
#include <nlohmann/json.hpp>

namespace grove::grovectl {
namespace {

std::string Utc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Pad(const std::string& s, size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

// A range bound as the user writes keys ("" shown as -inf / +inf).
std::string Bound(client::Format format, const std::string& key, bool as_end) {
  if (key.empty()) return as_end ? "+inf" : "-inf";
  return client::Encode(format, key);
}

}  // namespace

std::unique_ptr<cluster::EtcdClient> ConnectEtcd(const ClusterArgs& args, std::ostream& err) {
  cluster::EtcdOptions eo;
  eo.endpoints = args.etcd_endpoints;
  eo.ca_file = args.etcd_ca_file;
  eo.cert_file = args.etcd_cert_file;
  eo.key_file = args.etcd_key_file;
  eo.call_timeout_seconds = args.timeout_seconds;
  auto etcd = cluster::EtcdClient::Create(eo);
  if (!etcd.ok()) {
    err << "grovectl: cluster: " << etcd.status().ToString() << "\n";
    return nullptr;
  }
  if (Status s = cluster::CheckNames(args.cluster, "x"); !s.ok()) {
    err << "grovectl: cluster: --cluster: " << s.ToString() << "\n";
    return nullptr;
  }
  return std::move(*etcd);
}

// " (replicas a, b, c)" for a replicated range, "" otherwise.
std::string ReplicaList(const cluster::ShardRange& r) {
  if (!r.replicated()) return "";
  std::string out = " (replicas";
  for (size_t i = 0; i < r.replicas.size(); ++i) {
    out += (i == 0 ? " " : ", ") + r.replicas[i].node;
  }
  return out + ")";
}

int RunClusterStatus(const ClusterArgs& args, Output output, client::Format key_format,
                     std::ostream& out, std::ostream& err) {
  std::unique_ptr<cluster::EtcdClient> etcd = ConnectEtcd(args, err);
  if (etcd == nullptr) return kExitUsage;
  auto nodes = cluster::ListNodes(etcd.get(), args.cluster);
  if (!nodes.ok()) {
    err << "grovectl: cluster status: " << nodes.status().ToString() << "\n";
    return kExitFailed;
  }
  auto stored = cluster::ReadShardMap(etcd.get(), args.cluster);
  if (!stored.ok()) {
    err << "grovectl: cluster status: " << stored.status().ToString() << "\n";
    return kExitFailed;
  }
  if (output == Output::kJson) {
    for (const cluster::NodeStatus& n : *nodes) {
      nlohmann::json j = {{"cluster", args.cluster},
                          {"node", n.name},
                          {"state", n.alive ? "up" : "down"},
                          {"address", n.address},
                          {"version", n.version},
                          {"started_unix_ms", n.started_unix_ms}};
      out << Dump(j) << "\n";
    }
    if (*stored) {
      for (const cluster::ShardRange& r : (*stored)->map.ranges()) {
        nlohmann::json j = {
            {"cluster", args.cluster},
            {"map_version", (*stored)->map.version()},
            {"range", r.id},
            {"start", client::Encode(key_format, r.start)},
            {"end", r.end.empty() ? nlohmann::json(nullptr)
                                  : nlohmann::json(client::Encode(key_format, r.end))},
            {"owner", r.owner}};
        if (r.moving()) {
          j["moving_to"] = r.moving_to;
          j["move_id"] = r.move_id;
          j["fenced"] = r.fenced;
        }
        if (!r.cleanup_node.empty()) j["cleanup_node"] = r.cleanup_node;
        if (r.replicated()) {
          nlohmann::json replicas = nlohmann::json::array();
          for (const cluster::RangeReplica& replica : r.replicas) {
            replicas.push_back({{"node", replica.node}, {"id", replica.id}});
          }
          j["replicas"] = replicas;
        }
        out << Dump(j) << "\n";
      }
    }
    return kExitOk;
  }
  size_t up = 0;
  for (const cluster::NodeStatus& n : *nodes) up += n.alive ? 1 : 0;
  out << "cluster " << args.cluster << ": " << nodes->size() << " nodes, " << up << " up\n";
  if (!nodes->empty()) {
    size_t w = 4;
    for (const cluster::NodeStatus& n : *nodes) w = std::max(w, n.name.size());
    out << Pad("NODE", w + 2) << "STATE  " << Pad("ADDRESS", 24) << Pad("VERSION", 10)
        << "STARTED\n";
    for (const cluster::NodeStatus& n : *nodes) {
      out << Pad(n.name, w + 2) << Pad(n.alive ? "up" : "down", 7) << Pad(n.address, 24)
          << Pad(n.version, 10) << Utc(n.started_unix_ms) << "\n";
    }
  }
  if (!*stored) {
    out << "no shard map (grovectl cluster init --owner NODE)\n";
    return kExitOk;
  }
  const cluster::ShardMap& m = (*stored)->map;
  out << "\nshard map version " << m.version() << ": " << m.ranges().size() << " ranges\n";
  size_t ws = 5, we = 3;
  for (const cluster::ShardRange& r : m.ranges()) {
    ws = std::max(ws, Bound(key_format, r.start, false).size());
    we = std::max(we, Bound(key_format, r.end, true).size());
  }
  size_t wo = 5;
  for (const cluster::ShardRange& r : m.ranges()) wo = std::max(wo, r.owner.size());
  out << Pad("RANGE", 7) << Pad("START", ws + 2) << Pad("END", we + 2) << Pad("OWNER", wo + 2)
      << "MOVE\n";
  for (const cluster::ShardRange& r : m.ranges()) {
    std::string move;
    if (r.moving()) {
      move = "moving to " + r.moving_to + " (move " + std::to_string(r.move_id) +
             (r.fenced ? ", fenced: writes wait for the switch)" : ")");
    } else if (!r.cleanup_node.empty()) {
      move = "moved; " + r.cleanup_node + " still holds a copy";
    } else if (r.replicated()) {
      move = ReplicaList(r).substr(1);
    }
    out << Pad(std::to_string(r.id), 7) << Pad(Bound(key_format, r.start, false), ws + 2)
        << Pad(Bound(key_format, r.end, true), we + 2) << Pad(r.owner, wo + 2) << move << "\n";
  }
  return kExitOk;
}

int RunClusterInit(const ClusterArgs& args, const std::string& owner,
                   const std::vector<std::pair<std::string, std::string>>& splits,
                   const std::vector<std::string>& replicas, uint32_t factor,
                   client::Format key_format, std::ostream& out, std::ostream& err) {
  std::unique_ptr<cluster::EtcdClient> etcd = ConnectEtcd(args, err);
  if (etcd == nullptr) return kExitUsage;
  if (Status s = cluster::CheckNames(args.cluster, owner); !s.ok()) {
    err << "grovectl: cluster init: --owner: " << s.ToString() << "\n";
    return kExitUsage;
  }
  auto layout = replicas.empty()
                    ? cluster::ShardMap::Initial(owner, splits)
                    : cluster::ShardMap::InitialReplicated(owner, splits, replicas, factor);
  if (!layout.ok()) {
    err << "grovectl: cluster init: " << (replicas.empty() ? "--split: " : "--replicas: ")
        << layout.status().ToString() << "\n";
    return kExitUsage;
  }
  auto created = cluster::CreateShardMap(etcd.get(), args.cluster, std::move(*layout));
  if (!created.ok()) {
    err << "grovectl: cluster init: " << created.status().ToString() << "\n";
    return created.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  out << "cluster " << args.cluster << ": shard map version " << created->version() << ", "
      << created->ranges().size() << (created->ranges().size() == 1 ? " range" : " ranges") << "\n";
  for (const cluster::ShardRange& r : created->ranges()) {
    out << "  [" << Bound(key_format, r.start, false) << ", " << Bound(key_format, r.end, true)
        << ") " << r.owner << ReplicaList(r) << "\n";
  }
  return kExitOk;
}

int RunClusterSplit(const ClusterArgs& args, const std::string& key, uint64_t expect_version,
                    client::Format key_format, std::ostream& out, std::ostream& err) {
  std::unique_ptr<cluster::EtcdClient> etcd = ConnectEtcd(args, err);
  if (etcd == nullptr) return kExitUsage;
  // A replicated range splits through its Raft group (grovectl/replicas.cc).
  auto stored = cluster::ReadShardMap(etcd.get(), args.cluster);
  if (stored.ok() && *stored && !key.empty() && (*stored)->map.Find(key).replicated() &&
      (expect_version == 0 || (*stored)->map.version() == expect_version)) {
    ReplicaArgs replica;
    replica.command = "split";
    replica.start = key;
    return RunClusterReplicas(args, replica, key_format, out, err);
  }
  auto updated = cluster::UpdateShardMap(etcd.get(), args.cluster, expect_version,
                                         [&](cluster::ShardMap* m) { return m->Split(key); });
  if (!updated.ok()) {
    err << "grovectl: cluster split: " << updated.status().ToString() << "\n";
    return updated.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  const cluster::ShardRange& right = updated->Find(key);
  const cluster::ShardRange& left = updated->ranges()[updated->IndexOf(key) - 1];
  out << "split at " << client::Encode(key_format, key) << ": range " << left.id << " ["
      << Bound(key_format, left.start, false) << ", " << Bound(key_format, left.end, true)
      << ") and range " << right.id << " [" << Bound(key_format, right.start, false) << ", "
      << Bound(key_format, right.end, true) << "), owner " << right.owner << "; map version "
      << updated->version() << "\n";
  return kExitOk;
}

}  // namespace grove::grovectl
