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
      keepalive_failed_(keepalives_.Add({{"result", "failed"}})) {}

void ClusterMetrics::SetRegistered(bool registered) {
  registered_.Set(registered ? 1 : 0);
  if (registered) registrations_.Increment();
}

}  // namespace grove::metrics
