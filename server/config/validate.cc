#include "config/validate.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "grove/limits.h"

#include "config/address.h"

namespace grove::config {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// The engine's rules (options/check_options.h) and what only a configuration names.
void CheckEngine(const Options& o, Problems* p) {
  CheckEngineOptions(o, p);
  // Narrower than what the IO backend accepts: what a server's configuration may ask for.
  p->Range("io.queue_depth", o.io.queue_depth, 1, limits::kMaxIoQueueDepth, "");
  p->Range("io.psync_threads", o.io.psync_threads, 1, limits::kMaxPsyncThreads, "");
  if (o.index.variant.empty()) {
    // The engine's registry lists the available variants when it opens; see docs/variants.md.
    p->Add("index.variant", "must name a variant (see docs/variants.md)");
  } else if (o.index.variant.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
             std::string::npos) {
    p->Add("index.variant",
           "'" + o.index.variant + "' is not a variant name (lowercase letters, digits and _)");
  }
}

// The server's limits; the engine's (limits.max_key_bytes, ...) are CheckEngineOptions'.
void CheckLimits(const Options& o, const Limits& l, Problems* p) {
  // A client may send one entry of the largest size the limits allow, alone in a batch.
  if (o.max_batch_bytes >= limits::kMinBatchBytes &&
      o.max_batch_bytes < uint64_t{o.max_key_bytes} + o.max_value_bytes) {
    p->Add("limits.max_batch_bytes",
           "must hold one entry: at least max_key_bytes + max_value_bytes (" +
               std::to_string(uint64_t{o.max_key_bytes} + o.max_value_bytes) + " bytes)");
  }
  p->Range("limits.max_scan_limit", l.max_scan_limit, 1, 100'000'000, "");
  // Messages stay below gRPC's default 4 MiB client receive limit: at most this much plus one
  // entry of at most 1 MiB + 1 KiB.
  p->Range("limits.scan_message_bytes", static_cast<double>(l.scan_message_bytes), 1 * kKiB,
           2 * kMiB, " bytes");
  const uint64_t batch_message = o.max_batch_bytes + 16ull * o.max_batch_entries + 64 * kKiB;
  if (l.max_receive_message_bytes < batch_message) {
    p->Add("limits.max_receive_message_bytes",
           "must hold a full batch: at least max_batch_bytes + 16 bytes per entry + 64KiB (" +
               std::to_string(batch_message) + " bytes)");
  }
  if (l.max_receive_message_bytes > 1024 * kMiB) {
    p->Add("limits.max_receive_message_bytes", "must be at most 1GiB");
  }
  p->Range("limits.max_concurrent_streams", l.max_concurrent_streams, 1, 100'000, "");
  p->Range("limits.max_inflight_requests", l.max_inflight_requests, 1, 100'000, "");
  p->Range("limits.max_deadline_seconds", l.max_deadline_seconds, 0.001, 86400, " s");
  p->Range("limits.default_deadline_seconds", l.default_deadline_seconds, 0.001, 86400, " s");
  if (l.default_deadline_seconds > l.max_deadline_seconds) {
    p->Add("limits.default_deadline_seconds", "must not exceed limits.max_deadline_seconds");
  }
}

bool ClusterName(const std::string& n) {
  if (n.empty() || n.size() > 63) return false;
  return n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

void CheckRaft(const RaftConfig& r, Problems* p) {
  if (!r.enabled()) {
    if (!r.advertise_address.empty()) {
      p->Add("cluster.raft.listen", "must be set for cluster.raft.advertise_address to apply");
    }
    return;
  }
  StatusOr<HostPort> listen = ParseHostPort(r.listen, "cluster.raft.listen");
  if (!listen.ok()) p->Add(listen.status());
  if (!r.advertise_address.empty()) {
    StatusOr<HostPort> hp = ParseHostPort(r.advertise_address, "cluster.raft.advertise_address");
    if (!hp.ok()) {
      p->Add(hp.status());
    } else if (hp->port == 0) {
      p->Add("cluster.raft.advertise_address", "needs a port other than 0");
    }
  } else if (listen.ok() && listen->port == 0) {
    p->Add("cluster.raft.listen",
           "needs a port other than 0 (other nodes dial it), or set advertise_address");
  } else if (listen.ok() && (listen->host == "0.0.0.0" || listen->host == "::")) {
    p->Add("cluster.raft.advertise_address",
           "must be set when cluster.raft.listen binds every interface ('" + r.listen +
               "'): other nodes need an address they can dial");
  }
  p->Range("cluster.raft.election_timeout_ms", r.election_timeout_ms, 100, 60000, " ms");
  p->Range("cluster.raft.heartbeat_ms", r.heartbeat_ms, 10, 10000, " ms");
  if (r.heartbeat_ms * 2 > r.election_timeout_ms) {
    p->Add("cluster.raft.heartbeat_ms", "must be at most half of election_timeout_ms (" +
                                            std::to_string(r.election_timeout_ms) + ")");
  }
  p->Range("cluster.raft.snapshot_threshold", r.snapshot_threshold, 16, 1u << 24, "");
  p->Range("cluster.raft.snapshot_trailing", r.snapshot_trailing, 0, 1u << 24, "");
}

void CheckCluster(const ClusterConfig& c, Problems* p) {
  const bool other = !c.node_name.empty() || !c.advertise_address.empty() ||
                     !c.etcd_ca_file.empty() || !c.etcd_cert_file.empty() ||
                     !c.etcd_key_file.empty() || c.raft.enabled();
  if (!c.enabled()) {
    if (other)
      p->Add("cluster.etcd_endpoints", "must be set for the other cluster fields to apply");
    return;
  }
  for (size_t i = 0; i < c.etcd_endpoints.size(); ++i) {
    StatusOr<HostPort> hp =
        ParseHostPort(c.etcd_endpoints[i], "cluster.etcd_endpoints[" + std::to_string(i) + "]");
    if (!hp.ok()) p->Add(hp.status());
  }
  if (!ClusterName(c.name))
    p->Add("cluster.name", "'" + c.name + "' is not 1..63 of a-z, 0-9, _ and -");
  if (c.node_name.empty()) {
    p->Add("cluster.node_name", "must be set in cluster mode");
  } else if (!ClusterName(c.node_name)) {
    p->Add("cluster.node_name", "'" + c.node_name + "' is not 1..63 of a-z, 0-9, _ and -");
  }
  if (c.advertise_address.empty()) {
    p->Add("cluster.advertise_address",
           "must be set in cluster mode (host:port of server.listen "
           "as clients reach it)");
  } else {
    StatusOr<HostPort> hp = ParseHostPort(c.advertise_address, "cluster.advertise_address");
    if (!hp.ok()) {
      p->Add(hp.status());
    } else if (hp->port == 0) {
      p->Add("cluster.advertise_address", "needs a port other than 0");
    }
  }
  p->Range("cluster.lease_ttl_seconds", c.lease_ttl_seconds, 2, 3600, " s");
  p->Range("cluster.etcd_timeout_seconds", c.etcd_timeout_seconds, 0.1, 600, " s");
  if (c.etcd_cert_file.empty() != c.etcd_key_file.empty()) {
    p->Add(c.etcd_cert_file.empty() ? "cluster.etcd_cert_file" : "cluster.etcd_key_file",
           "cluster.etcd_cert_file and cluster.etcd_key_file must be set together");
  }
  if (!c.etcd_cert_file.empty() && c.etcd_ca_file.empty()) {
    p->Add("cluster.etcd_ca_file", "a client certificate for etcd needs TLS: set etcd_ca_file");
  }
  if (!c.etcd_ca_file.empty()) p->Readable("cluster.etcd_ca_file", c.etcd_ca_file);
  if (!c.etcd_cert_file.empty()) p->Readable("cluster.etcd_cert_file", c.etcd_cert_file);
  if (!c.etcd_key_file.empty()) p->Readable("cluster.etcd_key_file", c.etcd_key_file);
  CheckRaft(c.raft, p);
}

// Replicas copy ranges from each other over the gRPC port (grove.v1.Replication), as a client
// with neither certificate nor token: not yet possible beside TLS or token auth.
void CheckRaftBesideSecurity(const ServerOptions& s, Problems* p) {
  if (!s.cluster.enabled() || !s.cluster.raft.enabled()) return;
  if (s.tls.enabled()) {
    p->Add("cluster.raft.listen", "replicated ranges do not run with server.tls yet");
  }
  if (s.auth.enabled()) {
    p->Add("cluster.raft.listen", "replicated ranges do not run with server.auth yet");
  }
}

void CheckServer(const ServerOptions& s, Problems* p) {
  StatusOr<HostPort> grpc = ParseHostPort(s.listen, "server.listen");
  StatusOr<HostPort> http = ParseHostPort(s.metrics_listen, "server.metrics_listen");
  if (!grpc.ok()) p->Add(grpc.status());
  if (!http.ok()) p->Add(http.status());
  if (grpc.ok() && http.ok() && grpc->port != 0 && grpc->port == http->port) {
    p->Add("server.metrics_listen", "must use another port than server.listen");
  }
  if (grpc.ok() && !s.tls.enabled() && !s.allow_plaintext_remote && !IsLoopbackHost(grpc->host)) {
    p->Add("server.listen", "'" + s.listen +
                                "' is not a loopback address and TLS is off; configure tls, or set "
                                "server.allow_plaintext_remote: true for a private network");
  }
  p->Range("server.shutdown_delay_seconds", s.shutdown_delay_seconds, 0, 3600, " s");
  p->Range("server.drain_seconds", s.drain_seconds, 0, 3600, " s");

  const TlsConfig& t = s.tls;
  if (t.cert_file.empty() != t.key_file.empty()) {
    p->Add(t.cert_file.empty() ? "tls.cert_file" : "tls.key_file",
           "tls.cert_file and tls.key_file must be set together");
  }
  if (!t.client_ca_file.empty() && t.cert_file.empty()) {
    p->Add("tls.client_ca_file", "mutual TLS needs tls.cert_file and tls.key_file too");
  }
  if (!t.cert_file.empty()) p->Readable("tls.cert_file", t.cert_file);
  if (!t.key_file.empty()) p->Readable("tls.key_file", t.key_file);
  if (!t.client_ca_file.empty()) p->Readable("tls.client_ca_file", t.client_ca_file);
  if (s.auth.enabled()) p->Readable("auth.tokens_file", s.auth.tokens_file);
  CheckCluster(s.cluster, p);
  CheckRaftBesideSecurity(s, p);
}

}  // namespace

Status ValidateConfig(const Config& config) {
  Problems p;
  CheckEngine(config.engine, &p);
  CheckLimits(config.engine, config.server.limits, &p);
  CheckServer(config.server, &p);
  // Backups and traces beside the database, never inside it: a data directory holds only the
  // engine's files.
  for (const auto& [field, b] :
       {std::pair<const char*, const std::string&>{"backup.dir", config.server.backup.dir},
        {"trace.dir", config.server.trace.dir}}) {
    if (b.empty()) continue;
    // Compared as absolute, normalised paths without a trailing separator.
    auto normal = [](const std::string& path) {
      std::error_code ec;
      std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
      if (ec) p = std::filesystem::absolute(path, ec);
      p = p.lexically_normal();
      if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
      return p;
    };
    const auto data = normal(config.engine.data_dir);
    const auto dir = normal(b);
    const auto [d, _] = std::mismatch(data.begin(), data.end(), dir.begin(), dir.end());
    if (d == data.end()) {
      p.Add(field, "must not be data_dir or inside it ('" + b + "')");
    }
  }
  if (config.server.trace.max_bytes < 4096) {
    p.Add("trace.max_bytes",
          "must be at least 4096 (got " + std::to_string(config.server.trace.max_bytes) + ")");
  }
  return p.ToStatus();
}

}  // namespace grove::config
