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

struct ShardRange {
  std::string start, end;  // end "" in the last range: no end
  std::string owner;
  uint64_t id = 0;
  // A move under way (see "Moving a range" in docs/cluster.md): the receiving node, the move's
  // id, and whether the owner has stopped taking writes for the switch.
  std::string moving_to;
  uint64_t move_id = 0;
  bool fenced = false;
  std::string cleanup_node;  // a previous owner that may still hold the range's keys

  bool moving() const { return !moving_to.empty(); }

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
  // Decodes and checks (Validate) the value of the shardmap key.
  static StatusOr<ShardMap> Decode(std::string_view bytes);
  std::string Encode() const;
  // The invariants above; the message names the first that fails.
  Status Validate() const;

  uint64_t version() const { return version_; }
  const std::vector<ShardRange>& ranges() const { return ranges_; }
  // The range holding `key` (there is always one).
  const ShardRange& Find(std::string_view key) const { return ranges_[IndexOf(key)]; }
  size_t IndexOf(std::string_view key) const;
  // The ranges `owner` holds, in key order.
  std::vector<ShardRange> OwnedBy(std::string_view owner) const;

  // Edits. Each checks its arguments, changes the map and bumps the version.
  // Splits the range holding `key` at `key` into [start, key) and [key, end), both owned by the
  // same node, with new ids. InvalidArgument when `key` is "" or already a range start.
  Status Split(const std::string& key);
  // Gives the range starting at `start` to `owner` (no move under way). For a range whose keys
  // are all elsewhere already: a new cluster's layout, tests. Moving data is Move's.
  Status Assign(const std::string& start, const std::string& owner);

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
  uint64_t version_ = 0;
  uint64_t next_range_id_ = 1;
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

// Reads the map, applies `edit` and writes the result only if the map is unchanged since it was
// read (an etcd transaction on its mod revision). When another change came first, reads again
// and applies `edit` to the new map (up to a few times), so two administrators never lose each
// other's changes and an edit that no longer applies fails with its own message. `expect_version`
// (0: any) refuses with FailedPrecondition unless the map read has that version.
StatusOr<ShardMap> UpdateShardMap(EtcdClient* etcd, const std::string& cluster,
                                  uint64_t expect_version,
                                  const std::function<Status(ShardMap*)>& edit);

}  // namespace grove::cluster
