#include "config/config_loader.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace grove::config {
namespace {

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// The embedded default must describe exactly the defaults of the structs: groved behaves the
// same with no --config as with --config config/grove.yaml, and the YAML documents the truth.
TEST(ConfigLoaderTest, EmbeddedDefaultEqualsStructDefaults) {
  StatusOr<Config> parsed = ParseConfig(EmbeddedDefaultConfig(), "embedded");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Config d;
  const Options& e = parsed->engine;
  EXPECT_EQ(e.data_dir, d.engine.data_dir);
  EXPECT_EQ(e.create_if_missing, d.engine.create_if_missing);
  EXPECT_EQ(e.cache_bytes, d.engine.cache_bytes);
  EXPECT_EQ(e.direct_io, d.engine.direct_io);
  EXPECT_EQ(e.inline_value_bytes, d.engine.inline_value_bytes);
  EXPECT_EQ(e.io.kind, d.engine.io.kind);
  EXPECT_EQ(e.io.queue_depth, d.engine.io.queue_depth);
  EXPECT_EQ(e.io.psync_threads, d.engine.io.psync_threads);
  EXPECT_EQ(e.index.variant, d.engine.index.variant);
  EXPECT_EQ(e.index.params, d.engine.index.params);
  EXPECT_EQ(e.wal.sync, d.engine.wal.sync);
  EXPECT_EQ(e.wal.batch_interval_us, d.engine.wal.batch_interval_us);
  EXPECT_EQ(e.wal.segment_bytes, d.engine.wal.segment_bytes);
  EXPECT_EQ(e.wal.max_unsynced_bytes, d.engine.wal.max_unsynced_bytes);
  EXPECT_EQ(e.checkpoint.dirty_fraction, d.engine.checkpoint.dirty_fraction);
  EXPECT_EQ(e.checkpoint.wal_bytes, d.engine.checkpoint.wal_bytes);
  EXPECT_EQ(e.checkpoint.interval_seconds, d.engine.checkpoint.interval_seconds);
  EXPECT_EQ(e.expiry.sweep_interval_seconds, d.engine.expiry.sweep_interval_seconds);
  EXPECT_EQ(e.expiry.sweep_keys_per_second, d.engine.expiry.sweep_keys_per_second);
  EXPECT_EQ(e.max_key_bytes, d.engine.max_key_bytes);
  EXPECT_EQ(e.max_value_bytes, d.engine.max_value_bytes);
  EXPECT_EQ(e.max_batch_entries, d.engine.max_batch_entries);
  EXPECT_EQ(e.max_batch_bytes, d.engine.max_batch_bytes);

  const ServerOptions& s = parsed->server;
  EXPECT_EQ(s.listen, d.server.listen);
  EXPECT_EQ(s.metrics_listen, d.server.metrics_listen);
  EXPECT_EQ(s.allow_plaintext_remote, d.server.allow_plaintext_remote);
  EXPECT_EQ(s.shutdown_delay_seconds, d.server.shutdown_delay_seconds);
  EXPECT_EQ(s.drain_seconds, d.server.drain_seconds);
  EXPECT_EQ(s.limits.max_scan_limit, d.server.limits.max_scan_limit);
  EXPECT_EQ(s.limits.scan_message_bytes, d.server.limits.scan_message_bytes);
  EXPECT_EQ(s.limits.max_receive_message_bytes, d.server.limits.max_receive_message_bytes);
  EXPECT_EQ(s.limits.max_concurrent_streams, d.server.limits.max_concurrent_streams);
  EXPECT_EQ(s.limits.max_inflight_requests, d.server.limits.max_inflight_requests);
  EXPECT_EQ(s.limits.max_deadline_seconds, d.server.limits.max_deadline_seconds);
  EXPECT_EQ(s.limits.default_deadline_seconds, d.server.limits.default_deadline_seconds);
  EXPECT_EQ(s.tls.cert_file, d.server.tls.cert_file);
  EXPECT_EQ(s.tls.key_file, d.server.tls.key_file);
  EXPECT_EQ(s.tls.client_ca_file, d.server.tls.client_ca_file);
  EXPECT_EQ(s.auth.tokens_file, d.server.auth.tokens_file);
  EXPECT_EQ(s.logging.level, d.server.logging.level);
  EXPECT_EQ(s.logging.format, d.server.logging.format);
}

TEST(ConfigLoaderTest, DefaultsServeOnLoopbackWithSeparateMetricsPort) {
  StatusOr<Config> c = LoadConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server.listen, "127.0.0.1:7400");
  EXPECT_EQ(c->server.metrics_listen, "127.0.0.1:7401");
  EXPECT_EQ(c->engine.data_dir, "./data");
  EXPECT_EQ(c->engine.index.variant, "btree");
  EXPECT_EQ(c->engine.io.kind, IoBackendKind::kAuto);
}

TEST(ConfigLoaderTest, EveryFieldMapsOntoOptions) {
  const char* yaml = R"(
data_dir: /srv/grove
create_if_missing: false
cache_bytes: 1GiB
direct_io: false
inline_value_bytes: 512
io: {backend: psync, queue_depth: 64, psync_threads: 8}
index:
  variant: btree
  params: {fanout: 200, prefetch: shortcut}
wal: {sync: batch, batch_interval_us: 500, segment_bytes: 32MiB, max_unsynced_bytes: 32MiB}
checkpoint: {dirty_fraction: 0.1, wal_bytes: 1GiB, interval_seconds: 2.5}
expiry: {sweep_interval_seconds: 0.5, sweep_keys_per_second: 5000}
limits:
  max_key_bytes: 64
  max_value_bytes: 1MiB
  max_batch_entries: 100
  max_batch_bytes: 2MiB
  max_scan_limit: 500
  scan_message_bytes: 64KiB
  max_receive_message_bytes: 4MiB
  max_concurrent_streams: 16
  max_inflight_requests: 32
  max_deadline_seconds: 5
  default_deadline_seconds: 0.5
server:
  listen: 127.0.0.1:0
  metrics_listen: 127.0.0.1:0
  allow_plaintext_remote: true
  shutdown_delay_seconds: 2
  drain_seconds: 3
tls: {cert_file: /c.pem, key_file: /k.pem, client_ca_file: /ca.pem}
auth: {tokens_file: /tokens}
logging: {level: debug, format: json}
)";
  StatusOr<Config> c = ParseConfig(yaml, "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Options& e = c->engine;
  EXPECT_EQ(e.data_dir, "/srv/grove");
  EXPECT_FALSE(e.create_if_missing);
  EXPECT_EQ(e.cache_bytes, 1ull << 30);
  EXPECT_FALSE(e.direct_io);
  EXPECT_EQ(e.inline_value_bytes, 512u);
  EXPECT_EQ(e.io.kind, IoBackendKind::kPsync);
  EXPECT_EQ(e.io.queue_depth, 64u);
  EXPECT_EQ(e.io.psync_threads, 8u);
  EXPECT_EQ(e.index.variant, "btree");
  EXPECT_EQ(e.index.params.at("fanout"), "200");
  EXPECT_EQ(e.index.params.at("prefetch"), "shortcut");
  EXPECT_EQ(e.wal.sync, SyncMode::kBatch);
  EXPECT_EQ(e.wal.batch_interval_us, 500u);
  EXPECT_EQ(e.wal.segment_bytes, 32ull << 20);
  EXPECT_EQ(e.wal.max_unsynced_bytes, 32ull << 20);
  EXPECT_DOUBLE_EQ(e.checkpoint.dirty_fraction, 0.1);
  EXPECT_EQ(e.checkpoint.wal_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(e.checkpoint.interval_seconds, 2.5) << "durations take fractions";
  EXPECT_DOUBLE_EQ(e.expiry.sweep_interval_seconds, 0.5);
  EXPECT_EQ(e.expiry.sweep_keys_per_second, 5000u);
  EXPECT_EQ(e.max_key_bytes, 64u);
  EXPECT_EQ(e.max_value_bytes, 1u << 20);
  EXPECT_EQ(e.max_batch_entries, 100u);
  EXPECT_EQ(e.max_batch_bytes, 2ull << 20);
  const ServerOptions& s = c->server;
  EXPECT_EQ(s.limits.max_scan_limit, 500u);
  EXPECT_EQ(s.limits.scan_message_bytes, 64u << 10);
  EXPECT_EQ(s.limits.max_receive_message_bytes, 4u << 20);
  EXPECT_EQ(s.limits.max_concurrent_streams, 16u);
  EXPECT_EQ(s.limits.max_inflight_requests, 32u);
  EXPECT_DOUBLE_EQ(s.limits.max_deadline_seconds, 5);
  EXPECT_DOUBLE_EQ(s.limits.default_deadline_seconds, 0.5);
  EXPECT_EQ(s.listen, "127.0.0.1:0");
  EXPECT_EQ(s.metrics_listen, "127.0.0.1:0");
  EXPECT_TRUE(s.allow_plaintext_remote);
  EXPECT_DOUBLE_EQ(s.shutdown_delay_seconds, 2);
  EXPECT_DOUBLE_EQ(s.drain_seconds, 3);
  EXPECT_EQ(s.tls.cert_file, "/c.pem");
  EXPECT_EQ(s.tls.key_file, "/k.pem");
  EXPECT_EQ(s.tls.client_ca_file, "/ca.pem");
  EXPECT_TRUE(s.tls.enabled());
  EXPECT_TRUE(s.tls.mutual());
  EXPECT_EQ(s.auth.tokens_file, "/tokens");
  EXPECT_EQ(s.logging.level, LogLevel::kDebug);
  EXPECT_EQ(s.logging.format, LogFormat::kJson);
}

TEST(ConfigLoaderTest, BadEnumNamesFieldLineAndAllowedValues) {
  StatusOr<Config> c = ParseConfig("wal:\n  sync: sometimes\n", "grove.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "grove.yaml:2: wal.sync: 'sometimes' is not allowed (allowed: always, batch, none)");
}

TEST(ConfigLoaderTest, UnknownFieldIsRejectedWithTheAllowedNames) {
  StatusOr<Config> c = ParseConfig("limits:\n  max_key_byte: 10\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  const std::string msg(c.status().message());
  EXPECT_NE(msg.find("g.yaml:2: limits.max_key_byte: unknown field"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_key_bytes"), std::string::npos) << msg;
}

TEST(ConfigLoaderTest, UnknownTopLevelSection) {
  StatusOr<Config> c = ParseConfig("metrics:\n  port: 1\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("g.yaml:1: metrics: unknown field"), std::string::npos)
      << c.status().message();
}

TEST(ConfigLoaderTest, RepeatedKeysAreRejected) {
  StatusOr<Config> c =
      ParseConfig("server:\n  listen: 127.0.0.1:1\nserver:\n  drain_seconds: 1\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("g.yaml:3: server: appears more than once"),
            std::string_view::npos)
      << c.status().message();
  c = ParseConfig("wal:\n  sync: none\n  sync: always\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("g.yaml:3: wal.sync: appears more than once"),
            std::string_view::npos)
      << c.status().message();
}

TEST(ConfigLoaderTest, ReportsAllProblemsAtOnce) {
  StatusOr<Config> c =
      ParseConfig("cache_bytes: lots\nio:\n  backend: spdk\nlogging:\n  format: xml\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  const std::string msg(c.status().message());
  EXPECT_NE(msg.find("cache_bytes: 'lots' is not a size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("io.backend: 'spdk' is not allowed (allowed: auto, uring, psync)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("logging.format: 'xml' is not allowed (allowed: text, json)"),
            std::string::npos)
      << msg;
}

TEST(ConfigLoaderTest, SyntaxErrorNamesTheLine) {
  StatusOr<Config> c = ParseConfig("limits:\n  max_key_bytes: [1, 2\n", "g.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("g.yaml:"), std::string_view::npos);
  EXPECT_NE(c.status().message().find("not valid YAML"), std::string_view::npos);
}

TEST(ConfigLoaderTest, EmptyFileMeansDefaults) {
  StatusOr<Config> c = ParseConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server.listen, "127.0.0.1:7400");
}

TEST(ConfigLoaderTest, OverridesReplaceFileValuesBeforeValidation) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir.Sub("g.yaml"), "data_dir: /from/file\n");
  Overrides o;
  o.data_dir = dir.Sub("data");
  o.listen = "127.0.0.1:9999";
  StatusOr<Config> c = LoadConfig(path, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine.data_dir, dir.Sub("data"));
  EXPECT_EQ(c->server.listen, "127.0.0.1:9999");

  o.listen = "0.0.0.0:9999";
  c = LoadConfig(path, o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path + ": server.listen: '0.0.0.0:9999' is not a loopback"),
            std::string_view::npos)
      << c.status().message();
}

// The shipped configuration files are valid as they stand.
TEST(ConfigLoaderTest, ExamplesInConfigDirectoryAreValid) {
  for (const char* name : {"grove.yaml", "btree.yaml", "treeline.yaml", "aulid.yaml", "aha.yaml"}) {
    StatusOr<Config> c = LoadConfig(std::string(GROVE_SOURCE_DIR) + "/config/" + name, {});
    EXPECT_TRUE(c.ok()) << name << ": " << c.status().ToString();
  }
}

TEST(ConfigLoaderTest, MissingFileIsAClearError) {
  StatusOr<Config> c = LoadConfig("/nonexistent/grove.yaml", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "--config: cannot read '/nonexistent/grove.yaml'");
}

}  // namespace
}  // namespace grove::config
