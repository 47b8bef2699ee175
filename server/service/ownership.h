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
// Thread safety: every method from any thread.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "cluster/map_watcher.h"
#include "cluster/shard_map.h"
#include "metrics/cluster_metrics.h"

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

    // OK when `key` is in a range this node owns, else OUT_OF_RANGE naming `field`.
    grpc::Status CheckKey(grpc::ServerContext* context, std::string_view key,
                          std::string_view field) const;
    // OK when every key of [start, end) (end "": no end) is in ranges this node owns.
    grpc::Status CheckSpan(grpc::ServerContext* context, std::string_view start,
                           std::string_view end) const;
    // A scan from its first key: OK when that key's range is this node's, and then narrows
    // [*lower, *upper) to the range. *stopped_at gets the boundary where the scan must go on
    // at the next range's owner (empty: the range holds the rest of the scan).
    grpc::Status ClipScan(grpc::ServerContext* context, bool reverse, std::string* lower,
                          std::string* upper, bool* has_upper, std::string* stopped_at) const;

    const cluster::ShardMap* map() const;

   private:
    friend class Ownership;
    grpc::Status NotOwner(grpc::ServerContext* context, const cluster::ShardRange& range,
                          std::string_view what) const;
    const Ownership* owner_ = nullptr;
    std::shared_ptr<Generation> generation_;
    bool write_ = false;
  };

  // Fills `ticket` for a call (see "Which map decides"); UNAVAILABLE when no map is known.
  grpc::Status Admit(grpc::ServerContext* context, bool write, Ticket* ticket);

  // ShardMapWatcher::Listener.
  void BeforePublish(const cluster::ShardMap* previous, const cluster::ShardMap& next) override;
  void AfterPublish(const cluster::ShardMap& map) override;

 private:
  cluster::ShardMapWatcher* const watcher_;
  const std::string cluster_, node_;
  metrics::ClusterMetrics* const metrics_;

  std::mutex mu_;  // guards current_ and every generation's write count
  std::condition_variable drained_;
  std::shared_ptr<Generation> current_;
  uint64_t retired_writes_ = 0;  // write tickets of every generation but current_
  bool losing_ = false;          // set by BeforePublish: the next map takes a range from this node
};

}  // namespace grove::service
