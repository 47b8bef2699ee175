#include "service/server.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include "grove/db.h"

#include "config/address.h"
#include "service/logging.h"
#include "service/metrics_interceptor.h"
#include "service/tls.h"
#include "service/version.h"

namespace grove::service {
namespace {

// gRPC needs a few threads besides the ones running handlers (pollers, health watches).
constexpr int kSpareThreads = 16;
// How often the drain looks whether calls are still in flight.
constexpr auto kIdleCheck = std::chrono::milliseconds(20);

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

KvServiceOptions ServiceOptions(const config::Config& c) {
  KvServiceOptions o;
  o.limits.max_key_bytes = c.engine.max_key_bytes;
  o.limits.max_value_bytes = c.engine.max_value_bytes;
  o.limits.max_batch_entries = c.engine.max_batch_entries;
  o.limits.max_batch_bytes = c.engine.max_batch_bytes;
  o.limits.max_scan_limit = c.server.limits.max_scan_limit;
  o.deadlines.max = SecondsToDuration(c.server.limits.max_deadline_seconds);
  o.deadlines.fallback = SecondsToDuration(c.server.limits.default_deadline_seconds);
  o.scan_message_bytes = c.server.limits.scan_message_bytes;
  o.max_inflight_requests = c.server.limits.max_inflight_requests;
  return o;
}

// `address` with its port replaced by the bound one (they differ when the config said port 0).
std::string WithPort(const std::string& address, int port) {
  StatusOr<config::HostPort> hp = config::ParseHostPort(address, "");
  if (!hp.ok()) return address;
  hp->port = static_cast<uint16_t>(port);
  return hp->ToString();
}

}  // namespace

GroveServer::GroveServer(config::Config config, std::shared_ptr<spdlog::logger> log)
    : config_(std::move(config)), log_(std::move(log)) {}

GroveServer::~GroveServer() {
  // Run() normally drained already; this covers a failed or skipped Run(). The metrics server
  // goes first: its scrapes read the replicas.
  http_.reset();
  if (grpc_) grpc_->Shutdown(std::chrono::system_clock::now());
  if (replicas_) replicas_->Stop();  // before the engine its replicas write
  engine_.Close().IgnoreError();
}

StatusOr<std::unique_ptr<GroveServer>> GroveServer::Start(config::Config config,
                                                          std::shared_ptr<spdlog::logger> log) {
  std::unique_ptr<GroveServer> s(new GroveServer(std::move(config), std::move(log)));
  const config::ServerOptions& so = s->config_.server;

  s->registry_ = std::make_shared<prometheus::Registry>();
  s->grpc_metrics_ = std::make_unique<metrics::GrpcMetrics>(*s->registry_);
  s->server_metrics_ = std::make_unique<metrics::ServerMetrics>(*s->registry_, kVersion);
  EngineHandle* engine = &s->engine_;
  s->engine_collector_ =
      std::make_shared<metrics::EngineCollector>([engine] { return engine->Stats(); });

  if (so.auth.enabled()) {
    GROVE_ASSIGN_OR_RETURN(TokenStore tokens, TokenStore::LoadFile(so.auth.tokens_file));
    s->tokens_ = std::make_unique<TokenStore>(std::move(tokens));
  }
  s->authorizer_ = std::make_unique<Authorizer>(s->tokens_.get());
  // Cluster mode: ownership is in force from the first call (keys are refused until the map is
  // known); the watcher starts in Run, membership once the engine is open.
  if (s->config_.server.cluster.enabled()) GROVE_RETURN_IF_ERROR(s->PrepareCluster());
  if (!so.trace.dir.empty()) {
    s->tracer_ =
        std::make_unique<trace::Tracer>(trace::TracerOptions{so.trace.dir, so.trace.max_bytes});
  }
  trace::Tracer* tracer = s->tracer_.get();
  ReplicaHost* replicas = s->replicas_.get();
  s->raft_collector_ = std::make_shared<metrics::RaftCollector>([replicas] {
    return replicas == nullptr ? std::vector<metrics::RaftGroupFigures>() : replicas->Figures();
  });
  s->trace_collector_ = std::make_shared<metrics::TraceCollector>([tracer] {
    metrics::TraceTotals t;
    if (tracer == nullptr) return t;
    t.written = tracer->records_written_total();
    t.dropped = tracer->records_dropped_total();
    t.active = tracer->Sampling();
    return t;
  });
  s->kv_ = std::make_unique<KvService>(
      ServiceOptions(s->config_), &s->engine_, s->authorizer_.get(), s->server_metrics_.get(),
      s->log_.get(), s->ownership_.get(), s->grpc_metrics_.get(), tracer, s->replicas_.get());
  s->admin_ = std::make_unique<AdminService>(so.backup.dir, &s->engine_, s->authorizer_.get(),
                                             s->log_.get(), s->ownership_.get(), tracer);

  // Metrics first, so that /livez answers while the engine recovers.
  HealthService* health = &s->health_;
  GROVE_ASSIGN_OR_RETURN(
      s->http_, metrics::HttpServer::Start(
                    so.metrics_listen,
                    {s->registry_, s->engine_collector_, s->trace_collector_, s->raft_collector_},
                    [health] { return health->serving(); }));
  s->metrics_port_ = s->http_->port();
  GROVE_RETURN_IF_ERROR(s->BuildGrpcServer());

  s->log_->info("groved {} listening on {} ({}{}), metrics on http://{}/metrics", kVersion,
                WithPort(so.listen, s->grpc_port_),
                so.tls.mutual()    ? "mutual TLS"
                : so.tls.enabled() ? "TLS"
                                   : "plaintext",
                so.auth.enabled() ? ", token auth" : "",
                WithPort(so.metrics_listen, s->metrics_port_));
  return s;
}

Status GroveServer::BuildGrpcServer() {
  const config::ServerOptions& so = config_.server;
  GROVE_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                         MakeServerCredentials(so.tls));

  grpc::ServerBuilder builder;
  builder.AddListeningPort(so.listen, creds, &grpc_port_);
  builder.RegisterService(kv_.get());
  builder.RegisterService(admin_.get());
  builder.RegisterService(&health_);
  if (replicas_ != nullptr) {
    builder.RegisterService(replicas_->service());
    range_membership_ = std::make_unique<MembershipService>(replicas_.get());
    builder.RegisterService(range_membership_.get());
  }
  // gRPC adds reflection through a process-wide plugin list; the call is idempotent.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  // Two servers must never split one port's traffic (gRPC enables SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(so.limits.max_receive_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(so.limits.max_concurrent_streams));
  // The synchronous server keeps at most MAX_POLLERS idle threads polling for calls and lets the
  // others exit; gRPC's default of 2 made every call beyond two in flight create a thread and
  // every finished one end it (16 clients of Put: 8.4k calls/s; kept: 14.9k). Threads are bounded
  // by the resource quota below, so keeping up to that many costs memory, not CPU.
  builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS,
                              static_cast<int>(so.limits.max_inflight_requests));
  grpc::ResourceQuota quota("groved");
  quota.SetMaxThreads(static_cast<int>(so.limits.max_inflight_requests) + kSpareThreads);
  builder.SetResourceQuota(quota);

  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(
      std::make_unique<MetricsInterceptorFactory>(grpc_metrics_.get(), &calls_in_flight_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));

  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr || grpc_port_ == 0) {
    grpc_.reset();
    return Status::Unavailable("server.listen: cannot listen on " + so.listen +
                               " (address in use, or not an address of this machine)");
  }
  return Status::Ok();
}

void GroveServer::SetReady(bool ready) {
  // Health (and so /readyz) changes last when going ready and first when going not ready, so
  // whoever sees /readyz 200 also sees grove_ready 1 and the "serving" log line.
  if (ready) {
    server_metrics_->SetReady(true);
    health_.SetServing(true);
  } else {
    health_.SetServing(false);
    server_metrics_->SetReady(false);
  }
}

namespace {

// Membership events into the cluster metrics.
class ClusterMetricsListener final : public cluster::Membership::Listener {
 public:
  explicit ClusterMetricsListener(metrics::ClusterMetrics* m) : m_(m) {}
  void OnRegistered(bool registered) override { m_->SetRegistered(registered); }
  void OnKeepAlive(bool answered) override { m_->KeepAlive(answered); }

 private:
  metrics::ClusterMetrics* const m_;
};

}  // namespace

Status GroveServer::PrepareCluster() {
  const config::ClusterConfig& c = config_.server.cluster;
  cluster::EtcdOptions eo;
  eo.endpoints = c.etcd_endpoints;
  eo.ca_file = c.etcd_ca_file;
  eo.cert_file = c.etcd_cert_file;
  eo.key_file = c.etcd_key_file;
  eo.call_timeout_seconds = c.etcd_timeout_seconds;
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<cluster::EtcdClient> etcd,
                         cluster::EtcdClient::Create(eo));
  etcd_ = std::move(etcd);
  cluster_metrics_ = std::make_unique<metrics::ClusterMetrics>(*registry_);
  cluster_listener_ = std::make_unique<ClusterMetricsListener>(cluster_metrics_.get());
  cluster_logger_ = std::make_shared<SpdlogLogger>(log_);
  map_watcher_ = std::make_unique<cluster::ShardMapWatcher>(etcd_, c.name, cluster_logger_.get());
  ownership_ =
      std::make_unique<Ownership>(map_watcher_.get(), c.name, c.node_name, cluster_metrics_.get());
  map_watcher_->set_listener(ownership_.get());
  if (c.raft.enabled()) {
    ReplicaHostOptions ro;
    ro.cluster = c.name;
    ro.node = c.node_name;
    ro.raft = c.raft;
    ro.dir = config_.engine.data_dir + "/raft";
    ro.max_key_bytes = config_.engine.max_key_bytes;
    ro.max_value_bytes = config_.engine.max_value_bytes;
    ro.max_batch_bytes = config_.engine.max_batch_bytes;
    ro.max_batch_entries = config_.engine.max_batch_entries;
    GROVE_ASSIGN_OR_RETURN(replicas_, ReplicaHost::Start(std::move(ro), etcd_, map_watcher_.get(),
                                                         cluster_logger_.get()));
    log_->info("raft transport listening on {} (advertised as {})", c.raft.listen,
               replicas_->raft_address());
  }
  return Status::Ok();
}

Status GroveServer::JoinCluster() {
  const config::ClusterConfig& c = config_.server.cluster;
  cluster::MembershipOptions mo;
  mo.cluster = c.name;
  mo.node_name = c.node_name;
  mo.advertise_address = c.advertise_address;
  mo.lease_ttl_seconds = c.lease_ttl_seconds;
  mo.version = kVersion;
  if (replicas_ != nullptr) mo.raft_address = replicas_->raft_address();
  std::string endpoints;
  for (const std::string& e : c.etcd_endpoints) endpoints += (endpoints.empty() ? "" : ",") + e;
  log_->info("joining cluster '{}' as node '{}' (etcd {})", c.name, c.node_name, endpoints);
  membership_ = std::make_unique<cluster::Membership>(etcd_, mo, cluster_logger_.get(),
                                                      cluster_listener_.get());
  return membership_->Start();
}

void GroveServer::RequestStop() {
  MutexLock lock(&mu_);
  stop_requested_ = true;
  stop_requested_cv_.SignalAll();
}

Status GroveServer::Run() {
  if (map_watcher_) map_watcher_->Start();
  Options options = config_.engine;
  options.logger = std::make_shared<SpdlogLogger>(log_);
  log_->info("opening the engine in {} (variant {})", options.data_dir, options.index.variant);
  const auto open_start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Db>> db = Db::Open(options);
  if (!db.ok()) {
    log_->error("cannot open the engine in {}: {}", options.data_dir, db.status().ToString());
    grpc_->Shutdown(std::chrono::system_clock::now());
    return db.status();
  }
  engine_.Set(std::move(*db));
  if (std::optional<DbStats> stats = engine_.Stats()) {
    log_->info("engine open in {:.3f}s: variant {}, io backend {}, {} log records replayed",
               SecondsSince(open_start), stats->index.variant, stats->io_backend,
               stats->recovery_replayed_records);
  }

  if (config_.server.cluster.enabled()) {
    Status joined = JoinCluster();
    if (!joined.ok()) {
      log_->error("cannot join the cluster: {}", joined.ToString());
      grpc_->Shutdown(std::chrono::system_clock::now());
      engine_.Close().IgnoreError();
      return joined;
    }
    if (replicas_ != nullptr) {
      // The engine stays open until Drain has stopped the replicas.
      EngineHandle::Lease lease(&engine_);
      replicas_->Open(lease.db());
    }
  }

  {
    MutexLock lock(&mu_);
    if (!stop_requested_) {
      log_->info("serving");
      SetReady(true);
    }
    while (!stop_requested_) stop_requested_cv_.Wait();
  }
  return Drain();
}

Status GroveServer::Drain() {
  const auto start = std::chrono::steady_clock::now();
  SetReady(false);
  if (membership_) membership_->Stop();
  const config::ServerOptions& so = config_.server;
  log_->info(
      "stopping: health NOT_SERVING; closing the listener in {}s, then draining {} "
      "in-flight calls for up to {}s",
      so.shutdown_delay_seconds, kv_->inflight(), so.drain_seconds);
  if (so.shutdown_delay_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(so.shutdown_delay_seconds));
  }
  health_.Shutdown();
  kv_->BeginDrain();  // Batch streams end once the message in hand is answered
  // gRPC's graceful shutdown ends once every call is done *and* every client connection has
  // closed after its GOAWAY. A client that does not read its idle connection (a C++ channel with
  // no call pending) closes it late: groved waited 5 s for one. So once no call is in flight
  // the connections left are closed from this side; calls still running keep theirs until they
  // end or drain_seconds passes. A Batch stream waiting for its next message is idle too: it
  // takes no message once the streams are closed, so no write starts after this point.
  std::atomic<bool> drained{false};
  std::thread idle_closer([&] {
    while (!drained.load()) {
      std::this_thread::sleep_for(kIdleCheck);
      if (kv_->CloseStreamsIfIdle(calls_in_flight_.load())) {
        grpc_server_cancel_all_calls(grpc_->c_server());
        return;
      }
    }
  });
  grpc_->Shutdown(std::chrono::system_clock::now() + SecondsToDuration(so.drain_seconds));
  drained = true;
  idle_closer.join();
  log_->info("gRPC drained in {:.3f}s", SecondsSince(start));
  if (replicas_ != nullptr) {
    replicas_->Stop();  // no call holds a replica any more; the engine keeps what they applied
    log_->info("replicas closed");
  }
  if (map_watcher_) map_watcher_->Stop();

  Status closed = engine_.Close();
  if (closed.ok()) {
    log_->info("engine closed (final checkpoint written)");
  } else {
    log_->error("closing the engine failed: {}", closed.ToString());
  }
  http_.reset();
  log_->info("stopped after {:.3f}s", SecondsSince(start));
  return closed;
}

}  // namespace grove::service
