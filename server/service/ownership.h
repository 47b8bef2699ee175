#pragma once

// Ownership: in cluster mode, the keys this node serves are those of the shard map's ranges it
// owns (cluster/shard_map.h); every other key is refused with OUT_OF_RANGE, trailing metadata
// grove-not-owner: 1 and grove-map-version: <the node's map version> (grove/v1/metadata.h), so a
// client routing by a stale map learns it at once, refreshes and retries at the owner.
//
// Which map decides: the newest this node knows. A client sends the version it routes by
// (grove-map-version); when that is newer than the node's, the node reads the map from etcd
// before deciding, so a node that has not yet seen a change cannot act on the old map for a
// client that has.
//
// Fencing. A write holds a ticket from admission until it is applied. A ticket belongs to the
// generation (the map) it was admitted under. When a new map takes a range away from this node,
// the new generation is installed first and AfterPublish then waits until every write of the
// older generations has finished: from then on no write decided by the old map is in flight,
// and none is admitted under it. The code that hands a range to another node (a move) waits for
// that point before the new owner serves the range. Reads take no ticket: a read that races the
// switch may answer from the node the range just left.
//
// No map known (etcd unreachable since start, or the cluster has none yet): every key call is
// refused UNAVAILABLE with grove-not-applied, safe to retry.
//
// Moves (docs/cluster.md, "Moving a range"). While a range this node owns is moving, the node
// records the keys written into it (RecordWrites, after each applied write; read back by the
// mover through TakeChanges) and refuses DeleteRange into it; once the map fences the range the
// node refuses writes to it with UNAVAILABLE and grove-not-applied (clients retry; the switch
// takes one etcd transaction). The receiving node accepts the copy's writes, marked with the
// move's id (grove-move-ingest), for that range only. A DeleteRange marked grove-drop-foreign
// may remove keys of ranges this node neither owns nor receives (what a move left behind).
//
// Thread safety: every method from any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grove/v1/admin.pb.h"

#include "cluster/map_watcher.h"
#include "cluster/shard_map.h"
#include "metrics/cluster_metrics.h"
#include "service/call_metadata.h"
#include "util/mutex.h"

namespace grove::service {

class Ownership final : public cluster::ShardMapWatcher::Listener {
 public:
  // `watcher` and `metrics` must outlive this object; register it with watcher->set_listener.
  Ownership(cluster::ShardMapWatcher* watcher, std::string cluster, std::string node,
            metrics::ClusterMetrics* metrics);
  ~Ownership() override;

  struct Generation;

  // A call's view of the map; for a write, also its place in the fence (see above).
  class Ticket {
   public:
    Ticket() = default;
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

    // OK when `key` is in a range this node owns (a write: and that is not fenced), or, for a
    // move's copy, in the range this node receives; else OUT_OF_RANGE naming `field`.
    grpc::Status CheckKey(CallMetadata* md, std::string_view key, std::string_view field) const;
    // OK when every key of [start, end) (end "": no end) is in ranges this node owns and that
    // are not moving (or, for a move's copy, receives; or, with drop-foreign, neither owns nor
    // receives).
    grpc::Status CheckSpan(CallMetadata* md, std::string_view start, std::string_view end) const;
    // A scan from its first key: OK when that key's range is this node's, and then narrows
    // [*lower, *upper) to the range. *stopped_at gets the boundary where the scan must go on
    // at the next range's owner (empty: the range holds the rest of the scan).
    grpc::Status ClipScan(CallMetadata* md, bool reverse, std::string* lower, std::string* upper,
                          bool* has_upper, std::string* stopped_at) const;

    const cluster::ShardMap* map() const;

   private:
    friend class Ownership;
    grpc::Status NotOwner(CallMetadata* md, const cluster::ShardRange& range,
                          std::string_view what) const;
    // UNAVAILABLE (not applied) for a write into a fenced range.
    grpc::Status Switching(CallMetadata* md, const cluster::ShardRange& range) const;
    const Ownership* owner_ = nullptr;
    std::shared_ptr<Generation> generation_;
    bool write_ = false;
    uint64_t ingest_ = 0;        // grove-move-ingest: the move whose copy this call writes
    bool drop_foreign_ = false;  // grove-drop-foreign
  };

  // Fills `ticket` for a call (see "Which map decides"); UNAVAILABLE when no map is known.
  grpc::Status Admit(CallMetadata* md, bool write, Ticket* ticket);

  // After a write was applied: records its keys that fall in a range this node owns and is
  // moving (by the map in force now: see "Moves" above).
  void RecordWrites(const std::vector<std::string_view>& keys);
  // Grove.v1.Admin/MoveChanges: takes up to `max_keys` recorded keys of move `move_id`, in key
  // order. FAILED_PRECONDITION when there is no record of it, or when `token` (non-zero) is not
  // the record's: it restarted since, so keys written meanwhile may be missing.
  // First brings the node to the map version the caller names (grove-map-version) and waits
  // until that map is settled: every write admitted under an older one has finished.
  grpc::Status TakeChanges(CallMetadata* md, uint64_t move_id, uint64_t token, uint32_t max_keys,
                           v1::MoveChangesResponse* response);

  // At most this many keys recorded per move; beyond it the record is dropped and restarted
  // (the mover then copies the range again).
  static constexpr size_t kMaxRecordedKeys = 1 << 20;

  // ShardMapWatcher::Listener.
  void BeforePublish(const cluster::ShardMap* previous, const cluster::ShardMap& next) override;
  void AfterPublish(const cluster::ShardMap& map) override;

 private:
  cluster::ShardMapWatcher* const watcher_;
  const std::string cluster_, node_;
  metrics::ClusterMetrics* const metrics_;

  Mutex mu_;  // guards the members below and every generation's write count
  CondVar drained_{&mu_};
  std::shared_ptr<Generation> current_ GROVE_GUARDED_BY(mu_);
  // Write tickets of every generation but current_.
  uint64_t retired_writes_ GROVE_GUARDED_BY(mu_) = 0;
  // The newest map whose fence (if any) has drained.
  uint64_t settled_version_ GROVE_GUARDED_BY(mu_) = 0;
  // Set by BeforePublish: the next map takes a range from this node.
  bool losing_ GROVE_GUARDED_BY(mu_) = false;

  // The keys written into each moving range this node owns, by move id.
  struct ChangeRecord {
    uint64_t token = 0;
    std::set<std::string> keys;
  };
  std::map<uint64_t, ChangeRecord> records_ GROVE_GUARDED_BY(mu_);
  size_t RecordedKeysLocked() const GROVE_REQUIRES(mu_);
  std::mt19937_64 token_rng_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove::service
