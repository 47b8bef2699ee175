#pragma once

// Config: everything groved reads from its YAML file (config/grove.yaml documents every field).
// `engine` is the grove::Options the Db opens with; `server` configures the gRPC listener, request
// limits, security, draining and logging. The defaults below equal config/grove.yaml, which is also
// compiled into groved; a test keeps the two in step.
//
// This header knows no YAML: the parser lives in config_loader.h and is the only yaml-cpp user.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/logger.h"
#include "grove/options.h"

namespace grove::config {

// Limits the service checks before doing any work. The key, value and batch limits live in
// grove::Options (max_key_bytes, max_value_bytes, max_batch_entries, max_batch_bytes) because the
// engine enforces them as well; YAML groups all of them under `limits:`.
struct Limits {
  uint32_t max_scan_limit = 100000;          // entries per Scan; limit 0 means this many
  uint64_t scan_message_bytes = 1ull << 20;  // keys + values per Scan response message
  uint64_t max_receive_message_bytes = 8ull << 20;
  uint32_t max_concurrent_streams = 128;  // per connection
  uint32_t max_inflight_requests = 512;   // whole server
  double max_deadline_seconds = 60;       // client deadlines are cut to this
  double default_deadline_seconds = 10;   // deadline of calls that carry none
};

// TLS is on when cert_file is set; mTLS when client_ca_file is set too.
struct TlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty(); }
  bool mutual() const { return !client_ca_file.empty(); }
};

struct AuthConfig {
  std::string tokens_file;  // empty: authentication off

  bool enabled() const { return !tokens_file.empty(); }
};

enum class LogFormat { kText, kJson };

struct LoggingConfig {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
};

// Online backups (grove.v1.Admin/Backup, grovectl backup).
struct BackupConfig {
  std::string dir;  // backups are directories under it; empty: Backup is refused
};

// Workload traces (grove.v1.Admin/StartTrace, grovectl trace; docs/operations.md, "Trace the
// workload").
struct TraceConfig {
  std::string dir;                  // traces are <dir>/<name>.trace; empty: tracing is refused
  uint64_t max_bytes = 1ull << 30;  // the cap of one trace file (records past it are dropped)
};

// Replicated ranges (docs/cluster.md, "Replicated ranges"): the node's Raft transport, one port
// for every range it replicates, and the groups' timing. Off when listen is empty: the node then
// serves no replicated range (and refuses their keys as unavailable).
struct RaftConfig {
  std::string listen;                   // host:port the transport binds, e.g. 0.0.0.0:7402
  std::string advertise_address;        // host:port other nodes dial; listen's when empty
  uint32_t election_timeout_ms = 1000;  // randomised by libraft to 1-2x
  uint32_t heartbeat_ms = 100;
  uint32_t snapshot_threshold = 1024;  // entries applied between a replica's snapshots
  uint32_t snapshot_trailing = 2048;   // entries kept in the log behind a snapshot

  bool enabled() const { return !listen.empty(); }
};

// Cluster mode (docs/cluster.md): membership and metadata in etcd. Off when etcd_endpoints is
// empty; then groved behaves as a single node.
struct ClusterConfig {
  std::vector<std::string> etcd_endpoints;  // host:port of etcd's client API
  std::string name = "default";             // the cluster: keys live under /grove/<name>/
  std::string node_name;                    // unique in the cluster
  std::string advertise_address;            // host:port clients reach this node's gRPC API at
  uint32_t lease_ttl_seconds = 10;          // a node is shown down this long after it stops
  double etcd_timeout_seconds = 5;          // per call to etcd
  // TLS to etcd: the CA that signed etcd's certificate; a client certificate and key when etcd
  // asks for one.
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
  RaftConfig raft;

  bool enabled() const { return !etcd_endpoints.empty(); }
};

struct ServerOptions {
  std::string listen = "127.0.0.1:7400";
  std::string metrics_listen = "127.0.0.1:7401";
  bool allow_plaintext_remote = false;  // plaintext on a non-loopback address needs this
  double shutdown_delay_seconds = 0;    // NOT_SERVING before the listener closes
  double drain_seconds = 15;            // in-flight RPCs get this long to finish
  Limits limits;
  TlsConfig tls;
  AuthConfig auth;
  LoggingConfig logging;
  BackupConfig backup;
  TraceConfig trace;
  ClusterConfig cluster;
};

struct Config {
  Options engine;
  ServerOptions server;
};

}  // namespace grove::config
