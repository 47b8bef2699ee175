#include "metrics/cluster_metrics.h"

namespace grove::metrics {

ClusterMetrics::ClusterMetrics(prometheus::Registry& registry)
    : registered_(prometheus::BuildGauge()
                      .Name("grove_cluster_registered")
                      .Help("1 while this node holds its liveness key in etcd.")
                      .Register(registry)
                      .Add({})),
      registrations_(prometheus::BuildCounter()
                         .Name("grove_cluster_registrations_total")
                         .Help("Times this node claimed its liveness key (start and after a "
                               "lost lease).")
                         .Register(registry)
                         .Add({})),
      keepalives_(prometheus::BuildCounter()
                      .Name("grove_cluster_keepalives_total")
                      .Help("Lease keep-alives sent to etcd, by result (ok, failed).")
                      .Register(registry)),
      keepalive_ok_(keepalives_.Add({{"result", "ok"}})),
      keepalive_failed_(keepalives_.Add({{"result", "failed"}})),
      map_version_(prometheus::BuildGauge()
                       .Name("grove_cluster_map_version")
                       .Help("Version of the shard map this node decides ownership by (0: none "
                             "known yet).")
                       .Register(registry)
                       .Add({})),
      owned_ranges_(prometheus::BuildGauge()
                        .Name("grove_cluster_owned_ranges")
                        .Help("Ranges of the shard map this node owns.")
                        .Register(registry)
                        .Add({})),
      not_owner_(prometheus::BuildCounter()
                     .Name("grove_cluster_not_owner_total")
                     .Help("Calls refused OUT_OF_RANGE because a key was not this node's.")
                     .Register(registry)
                     .Add({})),
      moves_(prometheus::BuildGauge()
                 .Name("grove_cluster_moves_recording")
                 .Help("Moves of ranges this node owns under way (it records their changes).")
                 .Register(registry)
                 .Add({})),
      recorded_keys_(prometheus::BuildGauge()
                         .Name("grove_cluster_move_recorded_keys")
                         .Help("Keys written into this node's moving ranges that the mover has "
                               "not taken yet.")
                         .Register(registry)
                         .Add({})) {}

void ClusterMetrics::SetMoves(size_t moves, size_t recorded_keys) {
  moves_.Set(static_cast<double>(moves));
  recorded_keys_.Set(static_cast<double>(recorded_keys));
}

void ClusterMetrics::SetMap(uint64_t version, size_t owned_ranges) {
  map_version_.Set(static_cast<double>(version));
  owned_ranges_.Set(static_cast<double>(owned_ranges));
}

void ClusterMetrics::SetRegistered(bool registered) {
  registered_.Set(registered ? 1 : 0);
  if (registered) registrations_.Increment();
}

}  // namespace grove::metrics
