#pragma once

// Cluster-mode metrics (registered only when groved runs with a cluster: section):
//
//   grove_cluster_registered                 gauge, 1 while this node holds its liveness key
//   grove_cluster_registrations_total        counter, times the node claimed its liveness key
//   grove_cluster_keepalives_total{result}   counter, lease keep-alives: ok | failed
//   grove_cluster_map_version                gauge, the shard map version in force here
//   grove_cluster_owned_ranges               gauge, ranges of that map this node owns
//   grove_cluster_not_owner_total            counter, calls refused: key not this node's
//   grove_cluster_moves_recording            gauge, moves of this node's ranges under way
//   grove_cluster_move_recorded_keys         gauge, keys written into them not yet copied
//
// Thread safety: every method may be called concurrently.

#include <cstddef>
#include <cstdint>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace grove::metrics {

class ClusterMetrics {
 public:
  // Registers the families in `registry`, which must outlive this object.
  explicit ClusterMetrics(prometheus::Registry& registry);
  ClusterMetrics(const ClusterMetrics&) = delete;
  ClusterMetrics& operator=(const ClusterMetrics&) = delete;

  void SetRegistered(bool registered);
  void KeepAlive(bool answered) { (answered ? keepalive_ok_ : keepalive_failed_).Increment(); }
  void SetMap(uint64_t version, size_t owned_ranges);
  void NotOwner() { not_owner_.Increment(); }
  void SetMoves(size_t moves, size_t recorded_keys);

 private:
  prometheus::Gauge& registered_;
  prometheus::Counter& registrations_;
  prometheus::Family<prometheus::Counter>& keepalives_;
  prometheus::Counter& keepalive_ok_;
  prometheus::Counter& keepalive_failed_;
  prometheus::Gauge& map_version_;
  prometheus::Gauge& owned_ranges_;
  prometheus::Counter& not_owner_;
  prometheus::Gauge& moves_;
  prometheus::Gauge& recorded_keys_;
};

}  // namespace grove::metrics
