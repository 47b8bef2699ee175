#include "cluster/shard_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "grove/v1/cluster.pb.h"

#include "cluster/members.h"

namespace grove::cluster {
namespace {

constexpr int kUpdateAttempts = 8;

}  // namespace

std::string PrintableKey(std::string_view key, bool as_end) {
  if (key.empty()) return as_end ? "(end)" : "(start)";
  std::string out;
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

const RangeReplica* ShardRange::ReplicaOn(std::string_view node) const {
  for (const RangeReplica& r : replicas) {
    if (r.node == node) return &r;
  }
  return nullptr;
}

std::string ShardRange::Describe() const {
  return "[" + PrintableKey(start) + ", " + PrintableKey(end, true) + ")";
}

ShardMap ShardMap::Initial(const std::string& owner) {
  ShardMap m;
  m.version_ = 1;
  ShardRange all;
  all.owner = owner;
  all.id = 1;
  m.ranges_.push_back(std::move(all));
  m.next_range_id_ = 2;
  return m;
}

StatusOr<ShardMap> ShardMap::Initial(const std::string& owner,
                                     std::vector<std::pair<std::string, std::string>> splits) {
  GROVE_RETURN_IF_ERROR(CheckNames("default", owner));
  std::sort(splits.begin(), splits.end());
  ShardMap m = Initial(owner);
  for (const auto& [key, node] : splits) {
    GROVE_RETURN_IF_ERROR(m.Split(key));
    GROVE_RETURN_IF_ERROR(m.Assign(key, node));
  }
  m.version_ = 1;
  return m;
}

StatusOr<ShardMap> ShardMap::InitialReplicated(
    const std::string& owner, std::vector<std::pair<std::string, std::string>> splits,
    const std::vector<std::string>& nodes, uint32_t factor) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (Status s = CheckNames("default", nodes[i]); !s.ok()) {
      return Status::InvalidArgument(fmt::format("nodes[{}]: {}", i, s.message()));
    }
    for (size_t j = 0; j < i; ++j) {
      if (nodes[j] == nodes[i]) {
        return Status::InvalidArgument(fmt::format("nodes[{}]: '{}' is listed twice", i, nodes[i]));
      }
    }
  }
  if (factor == 0 || factor > nodes.size()) {
    return Status::InvalidArgument(
        fmt::format("replication factor: {} with {} nodes (it must be 1 to the number of nodes)",
                    factor, nodes.size()));
  }
  GROVE_ASSIGN_OR_RETURN(ShardMap m, Initial(owner, std::move(splits)));
  for (ShardRange& r : m.ranges_) {
    const auto at = std::find(nodes.begin(), nodes.end(), r.owner);
    if (at == nodes.end()) {
      return Status::InvalidArgument(fmt::format(
          "nodes: range {} is owned by '{}', which is not among the nodes", r.Describe(), r.owner));
    }
    const auto first = static_cast<size_t>(at - nodes.begin());
    for (uint32_t k = 0; k < factor; ++k) {
      r.replicas.push_back({nodes[(first + k) % nodes.size()], m.next_replica_id_++});
    }
  }
  m.replication_factor_ = factor;
  return m;
}

StatusOr<ShardMap> ShardMap::Decode(std::string_view bytes) {
  v1::ShardMap pb;
  if (!pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::DataLoss("shard map: not a grove.v1.ShardMap");
  }
  ShardMap m;
  m.version_ = pb.version();
  m.next_range_id_ = pb.next_range_id();
  m.next_replica_id_ = pb.next_replica_id();
  m.replication_factor_ = pb.replication_factor();
  for (const v1::ShardRange& r : pb.ranges()) {
    ShardRange range{r.start(),     r.end(),      r.owner(),        r.id(), r.moving_to(),
                     r.move_id(),   r.fenced(),   r.cleanup_node(), {},     r.reconfigured(),
                     r.split_key(), r.split_id(), r.from_split()};
    for (const v1::RangeReplica& replica : r.replicas()) {
      range.replicas.push_back({replica.node(), replica.id()});
    }
    m.ranges_.push_back(std::move(range));
  }
  GROVE_RETURN_IF_ERROR(m.Validate());
  return m;
}

std::string ShardMap::Encode() const {
  v1::ShardMap pb;
  pb.set_version(version_);
  pb.set_next_range_id(next_range_id_);
  pb.set_next_replica_id(next_replica_id_);
  pb.set_replication_factor(replication_factor_);
  for (const ShardRange& r : ranges_) {
    v1::ShardRange* out = pb.add_ranges();
    out->set_start(r.start);
    out->set_end(r.end);
    out->set_owner(r.owner);
    out->set_id(r.id);
    out->set_moving_to(r.moving_to);
    out->set_move_id(r.move_id);
    out->set_fenced(r.fenced);
    out->set_cleanup_node(r.cleanup_node);
    out->set_reconfigured(r.reconfigured);
    out->set_split_key(r.split_key);
    out->set_split_id(r.split_id);
    out->set_from_split(r.from_split);
    for (const RangeReplica& replica : r.replicas) {
      v1::RangeReplica* to = out->add_replicas();
      to->set_node(replica.node);
      to->set_id(replica.id);
    }
  }
  return pb.SerializeAsString();
}

Status ShardMap::Validate() const {
  if (version_ == 0) return Status::DataLoss("shard map: version 0");
  if (ranges_.empty()) return Status::DataLoss("shard map: no ranges");
  if (!ranges_.front().start.empty()) {
    return Status::DataLoss("shard map: the first range does not start at the first key");
  }
  if (!ranges_.back().end.empty()) {
    return Status::DataLoss("shard map: the last range does not reach the end of the key space");
  }
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const ShardRange& r = ranges_[i];
    if (r.owner.empty()) {
      return Status::DataLoss(fmt::format("shard map: range {} has no owner", r.Describe()));
    }
    if (r.id == 0 || r.id >= next_range_id_) {
      return Status::DataLoss(fmt::format("shard map: range {} has id {} (next id {})",
                                          r.Describe(), r.id, next_range_id_));
    }
    ids.push_back(r.id);
    if (r.moving() != (r.move_id != 0) || (r.fenced && !r.moving()) || r.moving_to == r.owner ||
        (r.move_id != 0 && r.move_id >= next_range_id_)) {
      return Status::DataLoss(
          fmt::format("shard map: range {} has an inconsistent move", r.Describe()));
    }
    GROVE_RETURN_IF_ERROR(ValidateReplicas(r));
    if (r.split_id != 0) {
      ids.push_back(r.split_id);  // reserved: no range may have it
      if (!r.replicated() || r.split_id >= next_range_id_ || r.split_key <= r.start ||
          (!r.end.empty() && r.split_key >= r.end)) {
        return Status::DataLoss(
            fmt::format("shard map: range {} has an inconsistent split", r.Describe()));
      }
    }
    if (i + 1 < ranges_.size()) {
      if (r.end.empty() || r.end != ranges_[i + 1].start) {
        return Status::DataLoss(
            fmt::format("shard map: range {} is not followed by its end's range", r.Describe()));
      }
      if (r.end <= r.start) {
        return Status::DataLoss(fmt::format("shard map: range {} is empty", r.Describe()));
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return Status::DataLoss("shard map: two ranges (or a range and a split) share an id");
  }
  return Status::Ok();
}

Status ShardMap::ValidateReplicas(const ShardRange& r) const {
  if (!r.replicated()) return Status::Ok();
  if (r.ReplicaOn(r.owner) == nullptr) {
    return Status::DataLoss(
        fmt::format("shard map: range {} is owned by '{}', not one of its "
                    "replicas",
                    r.Describe(), r.owner));
  }
  if (r.moving() || !r.cleanup_node.empty()) {
    return Status::DataLoss(
        fmt::format("shard map: replicated range {} has a move under way", r.Describe()));
  }
  for (size_t k = 0; k < r.replicas.size(); ++k) {
    const RangeReplica& a = r.replicas[k];
    if (a.node.empty() || a.id == 0 || a.id >= next_replica_id_) {
      return Status::DataLoss(
          fmt::format("shard map: range {} has a replica '{}' with id {} "
                      "(next id {})",
                      r.Describe(), a.node, a.id, next_replica_id_));
    }
    for (size_t j = 0; j < k; ++j) {
      if (r.replicas[j].node == a.node || r.replicas[j].id == a.id) {
        return Status::DataLoss(
            fmt::format("shard map: range {} lists a replica twice ('{}')", r.Describe(), a.node));
      }
    }
  }
  return Status::Ok();
}

size_t ShardMap::IndexOf(std::string_view key) const {
  // The last range whose start is <= key; ranges_[0].start is "", so there is one.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), key,
                             [](std::string_view k, const ShardRange& r) { return k < r.start; });
  return static_cast<size_t>(it - ranges_.begin()) - 1;
}

std::vector<ShardRange> ShardMap::OwnedBy(std::string_view owner) const {
  std::vector<ShardRange> out;
  for (const ShardRange& r : ranges_) {
    if (r.ServedBy(owner)) out.push_back(r);
  }
  return out;
}

Status ShardMap::Split(const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("split key: empty (the key space starts there)");
  const size_t i = IndexOf(key);
  if (ranges_[i].start == key) {
    return Status::InvalidArgument(
        fmt::format("split key: '{}' already starts a range", PrintableKey(key)));
  }
  if (ranges_[i].moving() || !ranges_[i].cleanup_node.empty()) {
    return Status::FailedPrecondition(
        fmt::format("split key: range {} has a move under way; split it after the move",
                    ranges_[i].Describe()));
  }
  if (ranges_[i].replicated()) {
    return Status::FailedPrecondition(fmt::format(
        "split key: range {} is replicated; splitting a replicated range is not supported yet",
        ranges_[i].Describe()));
  }
  ShardRange left = ranges_[i], right = ranges_[i];
  left.end = key;
  left.id = next_range_id_++;
  right.start = key;
  right.id = next_range_id_++;
  ranges_[i] = std::move(left);
  ranges_.insert(ranges_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(right));
  ++version_;
  return Status::Ok();
}

Status ShardMap::Assign(const std::string& start, const std::string& owner) {
  const size_t i = IndexOf(start);
  if (ranges_[i].start != start) {
    return Status::InvalidArgument(
        fmt::format("range: no range starts at '{}'", PrintableKey(start)));
  }
  GROVE_RETURN_IF_ERROR(CheckNames("default", owner));
  if (ranges_[i].replicated() && ranges_[i].ReplicaOn(owner) == nullptr) {
    return Status::FailedPrecondition(
        fmt::format("range {} is replicated and '{}' is not one of its replicas",
                    ranges_[i].Describe(), owner));
  }
  if (ranges_[i].moving()) {
    return Status::FailedPrecondition(
        fmt::format("range {} is moving to '{}'", ranges_[i].Describe(), ranges_[i].moving_to));
  }
  ranges_[i].owner = owner;
  ++version_;
  return Status::Ok();
}

namespace {

Status NoSplitUnderWay(const ShardRange& r) {
  if (r.split_id == 0) return Status::Ok();
  return Status::FailedPrecondition(fmt::format(
      "range {} is being split at '{}': finish the split first (grovectl cluster split {})",
      r.Describe(), PrintableKey(r.split_key), PrintableKey(r.split_key)));
}

}  // namespace

StatusOr<uint64_t> ShardMap::ReserveSplit(const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("split key: must not be empty");
  const size_t i = IndexOf(key);
  ShardRange& r = ranges_[i];
  if (!r.replicated()) {
    return Status::FailedPrecondition(
        fmt::format("range {} is not replicated: Split cuts it", r.Describe()));
  }
  if (r.start == key) {
    return Status::InvalidArgument(
        fmt::format("split key: '{}' already starts a range", PrintableKey(key)));
  }
  if (r.split_id != 0) {
    if (r.split_key == key) return r.split_id;
    GROVE_RETURN_IF_ERROR(NoSplitUnderWay(r));
  }
  r.split_key = key;
  r.split_id = next_range_id_++;
  ++version_;
  return r.split_id;
}

Status ShardMap::CompleteSplit(const std::string& key) {
  const size_t i = IndexOf(key);
  ShardRange& r = ranges_[i];
  if (r.split_id == 0 || r.split_key != key) {
    return Status::FailedPrecondition(
        fmt::format("range {} is not being split at '{}'", r.Describe(), PrintableKey(key)));
  }
  ShardRange right;
  right.start = key;
  right.end = r.end;
  right.owner = r.owner;
  right.id = r.split_id;
  right.replicas = r.replicas;
  right.from_split = true;
  r.end = key;
  r.split_key.clear();
  r.split_id = 0;
  ranges_.insert(ranges_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(right));
  ++version_;
  return Status::Ok();
}

StatusOr<uint64_t> ShardMap::AddReplica(const std::string& start, const std::string& node) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  GROVE_RETURN_IF_ERROR(CheckNames("default", node));
  ShardRange& r = ranges_[i];
  GROVE_RETURN_IF_ERROR(NoSplitUnderWay(r));
  if (!r.replicated()) {
    return Status::FailedPrecondition(fmt::format(
        "range {} is not replicated (its owner alone holds it): grovectl cluster move gives it "
        "to another node",
        r.Describe()));
  }
  if (const RangeReplica* there = r.ReplicaOn(node); there != nullptr) {
    return Status::InvalidArgument(fmt::format("node: '{}' holds replica {} of range {} already",
                                               node, there->id, r.Describe()));
  }
  const uint64_t id = next_replica_id_++;
  r.replicas.push_back({node, id});
  r.reconfigured = true;
  ++version_;
  return id;
}

Status ShardMap::RemoveReplica(const std::string& start, const std::string& node) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  ShardRange& r = ranges_[i];
  GROVE_RETURN_IF_ERROR(NoSplitUnderWay(r));
  if (!r.replicated()) {
    return Status::FailedPrecondition(
        fmt::format("range {} is not replicated: it has no replica to remove", r.Describe()));
  }
  if (r.ReplicaOn(node) == nullptr) {
    return Status::InvalidArgument(
        fmt::format("node: '{}' holds no replica of range {}", node, r.Describe()));
  }
  if (r.replicas.size() == 1) {
    return Status::FailedPrecondition(
        fmt::format("range {} has one replica, on '{}': removing it would leave the range nowhere",
                    r.Describe(), node));
  }
  std::erase_if(r.replicas, [&](const RangeReplica& x) { return x.node == node; });
  if (r.owner == node) r.owner = r.replicas.front().node;
  r.reconfigured = true;
  ++version_;
  return Status::Ok();
}

const ShardRange* ShardMap::RangeWithId(uint64_t id) const {
  for (const ShardRange& r : ranges_) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

StatusOr<size_t> ShardMap::RangeAt(const std::string& start) const {
  const size_t i = IndexOf(start);
  if (ranges_[i].start != start) {
    return Status::InvalidArgument(fmt::format(
        "range: no range starts at '{}' (grovectl cluster status lists them; split first to "
        "move part of one)",
        PrintableKey(start)));
  }
  return i;
}

StatusOr<uint64_t> ShardMap::StartMove(const std::string& start, const std::string& to) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  GROVE_RETURN_IF_ERROR(CheckNames("default", to));
  ShardRange& r = ranges_[i];
  if (r.replicated()) {
    return Status::FailedPrecondition(fmt::format(
        "range {} is replicated: its data is on {} replicas; moving a replicated range is not "
        "supported yet",
        r.Describe(), r.replicas.size()));
  }
  if (r.owner == to) {
    return Status::InvalidArgument(
        fmt::format("node: '{}' owns range {} already", to, r.Describe()));
  }
  if (r.moving() && r.moving_to != to) {
    return Status::FailedPrecondition(
        fmt::format("range {} is moving to '{}' already; abort that move first (grovectl "
                    "cluster move --abort)",
                    r.Describe(), r.moving_to));
  }
  if (!r.cleanup_node.empty()) {
    return Status::FailedPrecondition(
        fmt::format("range {}: the previous owner '{}' has not dropped its copy yet; finish the "
                    "last move first (grovectl cluster move again)",
                    r.Describe(), r.cleanup_node));
  }
  r.moving_to = to;
  r.move_id = next_range_id_++;
  r.fenced = false;
  ++version_;
  return r.move_id;
}

Status ShardMap::Fence(const std::string& start, uint64_t move_id) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  ShardRange& r = ranges_[i];
  if (r.move_id != move_id || !r.moving()) {
    return Status::Aborted(
        fmt::format("range {}: move {} is no longer under way", r.Describe(), move_id));
  }
  r.fenced = true;
  ++version_;
  return Status::Ok();
}

Status ShardMap::Switch(const std::string& start, uint64_t move_id) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  ShardRange& r = ranges_[i];
  if (r.move_id != move_id || !r.fenced) {
    return Status::Aborted(
        fmt::format("range {}: move {} is not fenced and under way", r.Describe(), move_id));
  }
  r.cleanup_node = r.owner;
  r.owner = r.moving_to;
  r.moving_to.clear();
  r.move_id = 0;
  r.fenced = false;
  ++version_;
  return Status::Ok();
}

Status ShardMap::AbortMove(const std::string& start) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  ShardRange& r = ranges_[i];
  if (!r.moving()) {
    return Status::FailedPrecondition(fmt::format("range {} is not moving", r.Describe()));
  }
  r.moving_to.clear();
  r.move_id = 0;
  r.fenced = false;
  ++version_;
  return Status::Ok();
}

Status ShardMap::CleanupDone(const std::string& start) {
  GROVE_ASSIGN_OR_RETURN(size_t i, RangeAt(start));
  ranges_[i].cleanup_node.clear();
  ++version_;
  return Status::Ok();
}

std::string ShardMapKey(const std::string& cluster) { return ClusterPrefix(cluster) + "shardmap"; }

StatusOr<std::optional<StoredShardMap>> ReadShardMap(EtcdClient* etcd, const std::string& cluster) {
  GROVE_ASSIGN_OR_RETURN(std::optional<EtcdKv> kv, etcd->Get(ShardMapKey(cluster)));
  if (!kv) return std::optional<StoredShardMap>();
  auto map = ShardMap::Decode(kv->value);
  if (!map.ok()) return map.status().WithContext(ShardMapKey(cluster));
  return std::optional<StoredShardMap>(StoredShardMap{std::move(*map), kv->mod_revision});
}

StatusOr<ShardMap> CreateShardMap(EtcdClient* etcd, const std::string& cluster,
                                  const std::string& owner,
                                  const std::vector<std::pair<std::string, std::string>>& splits) {
  GROVE_RETURN_IF_ERROR(CheckNames(cluster, owner));
  GROVE_ASSIGN_OR_RETURN(ShardMap m, ShardMap::Initial(owner, splits));
  return CreateShardMap(etcd, cluster, std::move(m));
}

StatusOr<ShardMap> CreateShardMap(EtcdClient* etcd, const std::string& cluster, ShardMap m) {
  GROVE_RETURN_IF_ERROR(m.Validate());
  GROVE_ASSIGN_OR_RETURN(bool created, etcd->PutIfUnchanged(ShardMapKey(cluster), m.Encode(), 0));
  if (!created) {
    return Status::FailedPrecondition(fmt::format("cluster '{}' has a shard map already", cluster));
  }
  return m;
}

StatusOr<ShardMap> UpdateShardMap(EtcdClient* etcd, const std::string& cluster,
                                  uint64_t expect_version,
                                  const std::function<Status(ShardMap*)>& edit) {
  for (int attempt = 0; attempt < kUpdateAttempts; ++attempt) {
    GROVE_ASSIGN_OR_RETURN(std::optional<StoredShardMap> stored, ReadShardMap(etcd, cluster));
    if (!stored) {
      return Status::FailedPrecondition(
          fmt::format("cluster '{}' has no shard map (grovectl cluster init)", cluster));
    }
    if (expect_version != 0 && stored->map.version() != expect_version) {
      return Status::FailedPrecondition(
          fmt::format("the shard map is at version {}, not {}: it changed since you read it",
                      stored->map.version(), expect_version));
    }
    ShardMap next = stored->map;
    GROVE_RETURN_IF_ERROR(edit(&next));
    GROVE_RETURN_IF_ERROR(next.Validate());
    GROVE_ASSIGN_OR_RETURN(bool written, etcd->PutIfUnchanged(ShardMapKey(cluster), next.Encode(),
                                                              stored->mod_revision));
    if (written) return next;
  }
  return Status::Aborted(
      fmt::format("the shard map kept changing: {} attempts lost the race", kUpdateAttempts));
}

}  // namespace grove::cluster
