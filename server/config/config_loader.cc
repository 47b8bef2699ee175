#include "config/config_loader.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "config/validate.h"
#include "config/yaml_reader.h"

namespace grove::config {
namespace {

void ReadEngine(YamlSection& top, Options* o) {
  top.String("data_dir", &o->data_dir);
  top.Bool("create_if_missing", &o->create_if_missing);
  top.Uint64("cache_bytes", &o->cache_bytes, /*sizes=*/true);
  top.Bool("direct_io", &o->direct_io);
  top.Uint32("scan_readahead_pages", &o->scan_readahead_pages);
  top.Uint32("inline_value_bytes", &o->inline_value_bytes, /*sizes=*/true);

  YamlSection io = top.Child("io");
  int backend = static_cast<int>(o->io.kind);
  // Order matches IoBackendKind.
  io.Enum("backend", {"auto", "uring", "psync"}, &backend);
  o->io.kind = static_cast<IoBackendKind>(backend);
  io.Uint32("queue_depth", &o->io.queue_depth);
  io.Uint32("psync_threads", &o->io.psync_threads);
  io.Finish();

  YamlSection index = top.Child("index");
  index.String("variant", &o->index.variant);
  index.StringMap("params", &o->index.params);
  index.Finish();

  YamlSection wal = top.Child("wal");
  int sync = static_cast<int>(o->wal.sync);
  // Order matches SyncMode.
  wal.Enum("sync", {"always", "batch", "none"}, &sync);
  o->wal.sync = static_cast<SyncMode>(sync);
  wal.Uint32("batch_interval_us", &o->wal.batch_interval_us);
  wal.Uint64("segment_bytes", &o->wal.segment_bytes, /*sizes=*/true);
  wal.Uint64("max_unsynced_bytes", &o->wal.max_unsynced_bytes, /*sizes=*/true);
  wal.Finish();

  YamlSection cp = top.Child("checkpoint");
  cp.Double("dirty_fraction", &o->checkpoint.dirty_fraction);
  cp.Uint64("wal_bytes", &o->checkpoint.wal_bytes, /*sizes=*/true);
  cp.Double("interval_seconds", &o->checkpoint.interval_seconds);
  cp.Double("spread", &o->checkpoint.spread);
  cp.Finish();

  YamlSection ex = top.Child("expiry");
  ex.Double("sweep_interval_seconds", &o->expiry.sweep_interval_seconds);
  ex.Uint64("sweep_keys_per_second", &o->expiry.sweep_keys_per_second);
  ex.Finish();
}

void ReadLimits(YamlSection& top, Options* o, Limits* l) {
  YamlSection s = top.Child("limits");
  s.Uint32("max_key_bytes", &o->max_key_bytes, /*sizes=*/true);
  s.Uint32("max_value_bytes", &o->max_value_bytes, /*sizes=*/true);
  s.Uint32("max_batch_entries", &o->max_batch_entries);
  s.Uint64("max_batch_bytes", &o->max_batch_bytes, /*sizes=*/true);
  s.Uint32("max_scan_limit", &l->max_scan_limit);
  s.Uint64("scan_message_bytes", &l->scan_message_bytes, /*sizes=*/true);
  s.Uint64("max_receive_message_bytes", &l->max_receive_message_bytes, /*sizes=*/true);
  s.Uint32("max_concurrent_streams", &l->max_concurrent_streams);
  s.Uint32("max_inflight_requests", &l->max_inflight_requests);
  s.Double("max_deadline_seconds", &l->max_deadline_seconds);
  s.Double("default_deadline_seconds", &l->default_deadline_seconds);
  s.Finish();
}

void ReadServer(YamlSection& top, ServerOptions* o) {
  YamlSection s = top.Child("server");
  s.String("listen", &o->listen);
  s.String("metrics_listen", &o->metrics_listen);
  s.Bool("allow_plaintext_remote", &o->allow_plaintext_remote);
  s.Double("shutdown_delay_seconds", &o->shutdown_delay_seconds);
  s.Double("drain_seconds", &o->drain_seconds);
  s.Finish();

  YamlSection tls = top.Child("tls");
  tls.String("cert_file", &o->tls.cert_file);
  tls.String("key_file", &o->tls.key_file);
  tls.String("client_ca_file", &o->tls.client_ca_file);
  tls.Finish();

  YamlSection auth = top.Child("auth");
  auth.String("tokens_file", &o->auth.tokens_file);
  auth.Finish();

  YamlSection backup = top.Child("backup");
  backup.String("dir", &o->backup.dir);
  backup.Finish();

  YamlSection trace = top.Child("trace");
  trace.String("dir", &o->trace.dir);
  trace.Uint64("max_bytes", &o->trace.max_bytes, /*sizes=*/true);
  trace.Finish();

  YamlSection cluster = top.Child("cluster");
  cluster.StringList("etcd_endpoints", &o->cluster.etcd_endpoints);
  cluster.String("name", &o->cluster.name);
  cluster.String("node_name", &o->cluster.node_name);
  cluster.String("advertise_address", &o->cluster.advertise_address);
  cluster.Uint32("lease_ttl_seconds", &o->cluster.lease_ttl_seconds);
  cluster.Double("etcd_timeout_seconds", &o->cluster.etcd_timeout_seconds);
  cluster.String("etcd_ca_file", &o->cluster.etcd_ca_file);
  cluster.String("etcd_cert_file", &o->cluster.etcd_cert_file);
  cluster.String("etcd_key_file", &o->cluster.etcd_key_file);
  YamlSection raft = cluster.Child("raft");
  raft.String("listen", &o->cluster.raft.listen);
  raft.String("advertise_address", &o->cluster.raft.advertise_address);
  raft.Uint32("election_timeout_ms", &o->cluster.raft.election_timeout_ms);
  raft.Uint32("heartbeat_ms", &o->cluster.raft.heartbeat_ms);
  raft.Uint32("snapshot_threshold", &o->cluster.raft.snapshot_threshold);
  raft.Uint32("snapshot_trailing", &o->cluster.raft.snapshot_trailing);
  raft.Finish();
  cluster.Finish();

  YamlSection log = top.Child("logging");
  int level = static_cast<int>(o->logging.level);
  // Order matches LogLevel.
  log.Enum("level", {"debug", "info", "warn", "error"}, &level);
  o->logging.level = static_cast<LogLevel>(level);
  int format = static_cast<int>(o->logging.format);
  log.Enum("format", {"text", "json"}, &format);
  o->logging.format = static_cast<LogFormat>(format);
  log.Finish();
}

}  // namespace

StatusOr<Config> ParseConfig(std::string_view yaml_text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(source) + ":" + std::to_string(e.mark.line + 1) +
                                   ": not valid YAML: " + e.msg);
  }
  Config config;
  ErrorList errors;
  YamlSection top(root, "", std::string(source), &errors);
  ReadEngine(top, &config.engine);
  ReadLimits(top, &config.engine, &config.server.limits);
  ReadServer(top, &config.server);
  top.Finish();
  if (!errors.empty()) return Status::InvalidArgument(errors.Join());
  return config;
}

StatusOr<Config> LoadConfig(const std::string& path, const Overrides& overrides) {
  std::string text;
  std::string source = "embedded default config";
  if (path.empty()) {
    text = std::string(EmbeddedDefaultConfig());
  } else {
    std::ifstream in(path);
    if (!in) {
      return Status::InvalidArgument("--config: cannot read '" + path + "'");
    }
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
    source = path;
  }
  GROVE_ASSIGN_OR_RETURN(Config config, ParseConfig(text, source));
  if (overrides.data_dir) config.engine.data_dir = *overrides.data_dir;
  if (overrides.listen) config.server.listen = *overrides.listen;
  Status s = ValidateConfig(config);
  if (!s.ok()) {
    // One "<source>: <field>: <problem>" line per problem.
    std::string lines;
    std::istringstream problems{std::string(s.message())};
    for (std::string line; std::getline(problems, line);) {
      if (!lines.empty()) lines += '\n';
      lines += source + ": " + line;
    }
    return Status::InvalidArgument(lines);
  }
  return config;
}

}  // namespace grove::config
