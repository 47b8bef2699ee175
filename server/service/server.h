#pragma once

// GroveServer: groved's lifecycle. It owns every server-side object (metrics registry, token store,
// services, the gRPC server, the metrics HTTP server and the engine); nothing is global.
//
//   Start()    metrics HTTP up (/livez 200, /readyz 503); gRPC listening, health NOT_SERVING,
//              KV calls UNAVAILABLE
//   Run()      opens (recovers) the engine; in cluster mode registers the node in etcd; ->
//              SERVING, /readyz 200; then waits for RequestStop() and drains:
//                health NOT_SERVING, /readyz 503       (load balancers stop sending)
//                cluster mode: the node's lease revoked (it is shown down at once)
//                wait server.shutdown_delay_seconds    (... and have time to notice)
//                gRPC Shutdown: no new calls; in-flight ones get server.drain_seconds, then are
//                cancelled
//                Db::Close (final checkpoint)
//                metrics HTTP down
//
// Thread safety: RequestStop() may be called from any thread (the signal thread) at any time,
// also before or during Run(); everything else from one thread.

#include <atomic>
#include <memory>
#include <string>

#include <grpcpp/server.h>
#include <prometheus/registry.h>
#include <spdlog/logger.h>

#include "grove/status.h"

#include "cluster/map_watcher.h"
#include "cluster/membership.h"
#include "config/config.h"
#include "metrics/cluster_metrics.h"
#include "metrics/engine_metrics.h"
#include "metrics/grpc_metrics.h"
#include "metrics/http_server.h"
#include "metrics/raft_metrics.h"
#include "metrics/server_metrics.h"
#include "metrics/trace_metrics.h"
#include "service/admin_service.h"
#include "service/auth.h"
#include "service/engine_handle.h"
#include "service/health_service.h"
#include "service/kv_service.h"
#include "service/membership_service.h"
#include "service/replica_host.h"
#include "service/token_store.h"
#include "util/mutex.h"

namespace grove::service {

class GroveServer {
 public:
  // Loads tokens and TLS material, binds both listeners and starts serving health and metrics.
  // Fails (naming the config field) when a file is bad or an address cannot be bound.
  static StatusOr<std::unique_ptr<GroveServer>> Start(config::Config config,
                                                      std::shared_ptr<spdlog::logger> log);

  ~GroveServer();
  GroveServer(const GroveServer&) = delete;
  GroveServer& operator=(const GroveServer&) = delete;

  // Opens the engine, serves until RequestStop(), then drains and closes. Returns the engine's
  // open or close error, if any.
  Status Run() GROVE_EXCLUDES(mu_);

  // Asks Run() to drain and return.
  void RequestStop() GROVE_EXCLUDES(mu_);

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  explicit GroveServer(config::Config config, std::shared_ptr<spdlog::logger> log);
  Status BuildGrpcServer();
  // Cluster mode: the etcd client, the shard map watcher and ownership (before serving).
  Status PrepareCluster();
  // Cluster mode: registers this node in etcd (cluster/membership.h).
  Status JoinCluster();
  void SetReady(bool ready);
  Status Drain();

  const config::Config config_;
  const std::shared_ptr<spdlog::logger> log_;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<metrics::GrpcMetrics> grpc_metrics_;
  std::unique_ptr<metrics::ServerMetrics> server_metrics_;
  std::shared_ptr<metrics::EngineCollector> engine_collector_;
  std::unique_ptr<trace::Tracer> tracer_;  // trace.dir set
  std::shared_ptr<metrics::TraceCollector> trace_collector_;
  std::shared_ptr<metrics::RaftCollector> raft_collector_;  // replicated ranges (may be none)
  std::unique_ptr<TokenStore> tokens_;
  std::unique_ptr<Authorizer> authorizer_;

  EngineHandle engine_;
  HealthService health_;
  std::unique_ptr<KvService> kv_;
  std::unique_ptr<AdminService> admin_;
  // Calls the gRPC server holds, of every service (MetricsInterceptorFactory); before grpc_, so
  // that it outlives the calls.
  std::atomic<int64_t> calls_in_flight_{0};
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<metrics::HttpServer> http_;
  std::unique_ptr<metrics::ClusterMetrics> cluster_metrics_;
  std::shared_ptr<Logger> cluster_logger_;
  std::unique_ptr<cluster::Membership::Listener> cluster_listener_;
  // Null unless cluster mode, as are the next three. The watcher is destroyed (stopped) before
  // the ownership it calls.
  std::shared_ptr<cluster::EtcdClient> etcd_;
  std::unique_ptr<Ownership> ownership_;
  std::unique_ptr<cluster::ShardMapWatcher> map_watcher_;
  std::unique_ptr<cluster::Membership> membership_;
  // Cluster mode with cluster.raft: the replicas of replicated ranges. Before kv_ is built;
  // stopped in Drain after gRPC, before the engine closes.
  std::unique_ptr<ReplicaHost> replicas_;
  // Their configuration changes (grove.v1.RangeMembership); null when replicas_ is.
  std::unique_ptr<MembershipService> range_membership_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;

  Mutex mu_;
  CondVar stop_requested_cv_{&mu_};
  bool stop_requested_ GROVE_GUARDED_BY(mu_) = false;
};

}  // namespace grove::service
