#pragma once

// ShardMap: the cluster's key ranges and their owners, as stored in etcd at
// /grove/<cluster>/shardmap (a grove.v1.ShardMap, docs/cluster.md "Shard map").
//
//   ""          "g"            "p"                   (end of key space)
//   |--range 1--|----range 4----|-------range 5--------|
//     node-1        node-2            node-1
//
// Ranges are [start, end), in key order, and cover the key space with no gap: the first starts
// at "", each one's end is the next one's start, and the last ends at "" (no end). Each has an
// owner and an id that no other range of the map's history had. The version grows by one at
// every change; a change is written only if the map is still the one it was computed from.
//
// A replicated range (docs/cluster.md, "Replicated ranges") also lists its replicas: the voters
// of its Raft group, whose id is the range's id. Its owner is one of them, the one clients try
// first; whichever replica leads the group serves the range. Each replica has an id in the group
// that no replica of the map's history had (a node removed and added again gets a new one, as
// Raft needs for a replica that lost its state).
//
// Thread safety: a ShardMap is a value; share it as shared_ptr<const ShardMap>.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grove/status.h"

#include "cluster/etcd_client.h"

namespace grove::cluster {

struct RangeReplica {
  std::string node;
  uint64_t id = 0;  // its id in the range's Raft group

  bool operator==(const RangeReplica&) const = default;
};

struct ShardRange {
  std::string start, end;  // end "" in the last range: no end
  std::string owner;
  uint64_t id = 0;
  // A move under way (see "Moving a range" in docs/cluster.md): the receiving node, the move's
  // id, and whether the owner has stopped taking writes for the switch.
  std::string moving_to;
  uint64_t move_id = 0;
  bool fenced = false;
  std::string cleanup_node;            // a previous owner that may still hold the range's keys
  std::vector<RangeReplica> replicas;  // empty: not replicated, the owner alone holds it
  // Replicas were added or removed since the group was created: a replica with no Raft state
  // joins the group the leader has instead of bootstrapping one from `replicas`.
  bool reconfigured = false;
  // A replicated range being split (ReserveSplit, CompleteSplit): the key and the right-hand
  // range's id; split_id 0: none under way.
  std::string split_key;
  uint64_t split_id = 0;
  // Made by a split of a replicated range: a replica without the parent's keys installs first.
  bool from_split = false;

  bool moving() const { return !moving_to.empty(); }
  bool replicated() const { return !replicas.empty(); }
  // The replica on `node`, or null.
  const RangeReplica* ReplicaOn(std::string_view node) const;
  // Whether `node` serves the range: its owner, or one of its replicas.
  bool ServedBy(std::string_view node) const { return owner == node || ReplicaOn(node) != nullptr; }

  bool Contains(std::string_view key) const { return key >= start && (end.empty() || key < end); }
  // "[start, end)" with keys printed for people (escapes non-printing bytes).
  std::string Describe() const;
};

class ShardMap {
 public:
  // One range over the whole key space owned by `owner`: version 1.
  static ShardMap Initial(const std::string& owner);
  // The same cut at each (key, node) of `splits` into a range [key, next key) of that node;
  // version 1. InvalidArgument for an empty or repeated key or a bad node name.
  static StatusOr<ShardMap> Initial(const std::string& owner,
                                    std::vector<std::pair<std::string, std::string>> splits);
  // The same, replicated: each range's replicas are its owner and the `factor` - 1 nodes after
  // it in `nodes` (taken as a ring), so the ranges' leaders and copies spread over the nodes.
  // InvalidArgument (naming `nodes` or `replication factor`) when a name is bad or repeated,
  // an owner is not in `nodes`, or `factor` is 0 or more than the nodes.
  static StatusOr<ShardMap> InitialReplicated(
      const std::string& owner, std::vector<std::pair<std::string, std::string>> splits,
      const std::vector<std::string>& nodes, uint32_t factor);
  // Decodes and checks (Validate) the value of the shardmap key.
  static StatusOr<ShardMap> Decode(std::string_view bytes);
  std::string Encode() const;
  // The invariants above; the message names the first that fails.
  Status Validate() const;

  uint64_t version() const { return version_; }
  // Replicas per range of a replicated cluster (0: unreplicated).
  uint32_t replication_factor() const { return replication_factor_; }
  const std::vector<ShardRange>& ranges() const { return ranges_; }
  // The range holding `key` (there is always one).
  const ShardRange& Find(std::string_view key) const { return ranges_[IndexOf(key)]; }
  size_t IndexOf(std::string_view key) const;
  // The range with id `id`, or null.
  const ShardRange* RangeWithId(uint64_t id) const;
  // The ranges `owner` holds, in key order: those it owns and those it is a replica of.
  std::vector<ShardRange> OwnedBy(std::string_view owner) const;

  // Edits. Each checks its arguments, changes the map and bumps the version.
  // Splits the range holding `key` at `key` into [start, key) and [key, end), both owned by the
  // same node, with new ids. InvalidArgument when `key` is "" or already a range start.
  Status Split(const std::string& key);
  // Gives the range starting at `start` to `owner` (no move under way). For a range whose keys
  // are all elsewhere already: a new cluster's layout, tests. Moving data is Move's.
  Status Assign(const std::string& start, const std::string& owner);

  // Membership of a replicated range (the one starting at `start`), written around the Raft
  // configuration changes that make it true (docs/cluster.md, "Changing a range's replicas").
  // AddReplica lists a new replica on `node` and returns its id; RemoveReplica takes the one on
  // `node` out (the owner passes to the first other replica when it was the owner). Both mark
  // the range reconfigured. FailedPrecondition for a range that is not replicated or would be
  // left with no replica; InvalidArgument when `node` holds a replica already / holds none.
  StatusOr<uint64_t> AddReplica(const std::string& start, const std::string& node);
  Status RemoveReplica(const std::string& start, const std::string& node);

  // A split of the replicated range holding `key`, in two map writes around the split entry
  // its Raft group commits (docs/cluster.md, "Splitting a replicated range"): ReserveSplit
  // records the split and gives the right-hand range its id (returned; the same split reserved
  // again returns the same id); CompleteSplit ends the range at `key` and lists [key, end) as
  // that id's range, on the same replicas, from_split. FailedPrecondition for a range that is
  // not replicated or is being split at another key; InvalidArgument when `key` is "" or a
  // range start.
  StatusOr<uint64_t> ReserveSplit(const std::string& key);
  Status CompleteSplit(const std::string& key);

  // The steps of a range move (docs/cluster.md, "Moving a range"), for the range that starts at
  // `start`. StartMove begins one to `to` (or restarts one already going there: a new move id,
  // unfenced) and returns the move's id; Fence stops the owner's writes; Switch makes `to` the
  // owner and the old one the cleanup node; AbortMove ends a move without a switch;
  // CleanupDone forgets the cleanup node. Each checks the move it acts on is the one under way.
  StatusOr<uint64_t> StartMove(const std::string& start, const std::string& to);
  Status Fence(const std::string& start, uint64_t move_id);
  Status Switch(const std::string& start, uint64_t move_id);
  Status AbortMove(const std::string& start);
  Status CleanupDone(const std::string& start);
  // The index of the range starting exactly at `start`; InvalidArgument naming it otherwise.
  StatusOr<size_t> RangeAt(const std::string& start) const;

 private:
  Status ValidateReplicas(const ShardRange& r) const;

  uint64_t version_ = 0;
  uint64_t next_range_id_ = 1;
  uint64_t next_replica_id_ = 1;
  uint32_t replication_factor_ = 0;
  std::vector<ShardRange> ranges_;
};

// "abc", or with non-printing bytes as \xNN; "" prints as (start) or (end) per `as_end`.
std::string PrintableKey(std::string_view key, bool as_end = false);

std::string ShardMapKey(const std::string& cluster);

// The map stored for `cluster` and its etcd mod revision; nullopt when there is none yet.
struct StoredShardMap {
  ShardMap map;
  int64_t mod_revision = 0;
};
StatusOr<std::optional<StoredShardMap>> ReadShardMap(EtcdClient* etcd, const std::string& cluster);

// Creates the map of a new cluster: one range owned by `owner`, cut at each `splits` key into a
// range [key, next key) owned by its node (version 1). FailedPrecondition when the cluster has a
// map already; InvalidArgument for an empty or repeated split key or a bad node name.
StatusOr<ShardMap> CreateShardMap(
    EtcdClient* etcd, const std::string& cluster, const std::string& owner,
    const std::vector<std::pair<std::string, std::string>>& splits = {});
// Creates a map built by the caller (ShardMap::InitialReplicated, say), on the same terms.
StatusOr<ShardMap> CreateShardMap(EtcdClient* etcd, const std::string& cluster, ShardMap map);

// Reads the map, applies `edit` and writes the result only if the map is unchanged since it was
// read (an etcd transaction on its mod revision). When another change came first, reads again
// and applies `edit` to the new map (up to a few times), so two administrators never lose each
// other's changes and an edit that no longer applies fails with its own message. `expect_version`
// (0: any) refuses with FailedPrecondition unless the map read has that version.
StatusOr<ShardMap> UpdateShardMap(EtcdClient* etcd, const std::string& cluster,
                                  uint64_t expect_version,
                                  const std::function<Status(ShardMap*)>& edit);

}  // namespace grove::cluster
