#include "config/validate.h"

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "engine/db_impl.h"
#include "testutil/temp_dir.h"

namespace grove::config {
namespace {

std::string Problems(const Config& c) {
  Status s = ValidateConfig(c);
  return s.ok() ? "" : std::string(s.message());
}

bool Mentions(const Config& c, const std::string& text) {
  return Problems(c).find(text) != std::string::npos;
}

TEST(ValidateTest, DefaultsAreValid) { EXPECT_EQ(Problems(Config{}), ""); }

TEST(ValidateTest, EngineRanges) {
  Config c;
  c.engine.max_key_bytes = 2000;
  c.engine.inline_value_bytes = 4096;
  c.engine.io.queue_depth = 0;
  c.engine.checkpoint.dirty_fraction = 0.9;
  c.engine.data_dir = "";
  const std::string p = Problems(c);
  EXPECT_NE(p.find("limits.max_key_bytes: 2000 is out of range (allowed: 1..1024 bytes)"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("inline_value_bytes: 4096 is out of range"), std::string::npos) << p;
  EXPECT_NE(p.find("io.queue_depth: 0 is out of range (allowed: 1..4096)"), std::string::npos);
  EXPECT_NE(p.find("checkpoint.dirty_fraction: must be in (0, 0.45]"), std::string::npos);
  EXPECT_NE(p.find("data_dir: must not be empty"), std::string::npos);
}

TEST(ValidateTest, VariantName) {
  Config c;
  c.engine.index.variant = "B-Tree";
  EXPECT_TRUE(Mentions(
      c, "index.variant: 'B-Tree' is not a variant name (lowercase letters, digits and _)"));
}

TEST(ValidateTest, WalMustHoldTwoBatches) {
  Config c;
  c.engine.max_batch_bytes = 16ull << 20;
  c.server.limits.max_receive_message_bytes = 64ull << 20;
  EXPECT_TRUE(Mentions(c, "wal.max_unsynced_bytes: must be at least twice limits.max_batch_bytes"));
}

TEST(ValidateTest, WalSegmentMustHoldTheUnsyncedBytes) {
  Config c;
  c.engine.wal.segment_bytes = 1ull << 20;  // below the default 16 MiB of max_unsynced_bytes
  EXPECT_TRUE(Mentions(c, "wal.segment_bytes: must be at least wal.max_unsynced_bytes"))
      << Problems(c);
}

// Whatever passes validation, the engine opens with: groved never starts on a config that the
// engine then refuses. Random combinations of values at and around every engine bound.
TEST(ValidateTest, WhatValidationAcceptsTheEngineAccepts) {
  std::mt19937_64 rng(7);
  auto pick = [&rng](std::initializer_list<double> values) {
    std::vector<double> v(values);
    return v[rng() % v.size()];
  };
  constexpr double kMiB = 1 << 20;
  int accepted = 0;
  // Most random combinations break some rule; enough draws leave a few hundred valid ones.
  for (int i = 0; i < 400000; ++i) {
    Config c;
    Options& o = c.engine;
    o.cache_bytes = static_cast<uint64_t>(pick({0, kMiB - 1, kMiB, 64 * kMiB}));
    o.max_key_bytes = static_cast<uint32_t>(pick({0, 1, 876, 1024, 1025}));
    o.inline_value_bytes = static_cast<uint32_t>(pick({0, 876, 877, 1024, 1025}));
    o.max_value_bytes = static_cast<uint32_t>(pick({0, 1000, 1e6, 1e6 + 1, kMiB}));
    o.max_batch_entries = static_cast<uint32_t>(pick({0, 1, 1000}));
    o.max_batch_bytes = static_cast<uint64_t>(pick({1, 1023, 1024, 4096, kMiB, 4 * kMiB}));
    o.checkpoint.dirty_fraction = pick({0, 0.1, 0.45, 0.46, 0.5});
    o.checkpoint.wal_bytes = static_cast<uint64_t>(pick({kMiB - 1, kMiB}));
    o.checkpoint.interval_seconds = pick({-1, 0, 2.5, 1e9});
    o.wal.segment_bytes = static_cast<uint64_t>(pick({kMiB - 1, kMiB, 8 * kMiB, 64 * kMiB}));
    o.wal.max_unsynced_bytes = static_cast<uint64_t>(pick({kMiB, 2 * kMiB, 16 * kMiB}));
    o.wal.sync = rng() % 2 ? SyncMode::kBatch : SyncMode::kAlways;
    o.wal.batch_interval_us = static_cast<uint32_t>(pick({0, 1000}));
    c.server.limits.max_receive_message_bytes = 64ull << 20;
    if (!ValidateConfig(c).ok()) continue;
    ++accepted;
    StatusOr<Options> engine = CheckOptions(o);
    ASSERT_TRUE(engine.ok()) << "validation accepted what the engine refuses: "
                             << engine.status().ToString();
  }
  EXPECT_GT(accepted, 100) << "the sample should hold valid configurations too";
}

TEST(ValidateTest, ReceiveLimitMustHoldAFullBatch) {
  Config c;
  c.server.limits.max_receive_message_bytes = 4ull << 20;
  EXPECT_TRUE(Mentions(c, "limits.max_receive_message_bytes: must hold a full batch"));
}

TEST(ValidateTest, BatchMustHoldOneEntry) {
  Config c;
  c.engine.max_batch_bytes = 1000;
  EXPECT_TRUE(Mentions(c, "limits.max_batch_bytes: must be at least 1KiB"));
  c.engine.max_batch_bytes = 64 << 10;  // below max_key_bytes + max_value_bytes
  EXPECT_TRUE(Mentions(c, "limits.max_batch_bytes: must hold one entry"));
}

TEST(ValidateTest, ExpirySweepBounds) {
  Config c;
  c.engine.expiry.sweep_keys_per_second = 10;
  EXPECT_TRUE(Mentions(c, "expiry.sweep_keys_per_second: must be at least 100"));
  c.engine.expiry.sweep_keys_per_second = 1000;
  c.engine.expiry.sweep_interval_seconds = -1;
  EXPECT_TRUE(Mentions(c, "expiry.sweep_interval_seconds: -1 is out of range"));
}

TEST(ValidateTest, ScanMessageBytesBounded) {
  Config c;
  c.server.limits.scan_message_bytes = 8ull << 20;
  EXPECT_TRUE(Mentions(c, "limits.scan_message_bytes: 8388608 is out of range"));
}

TEST(ValidateTest, DeadlinesOrdered) {
  Config c;
  c.server.limits.default_deadline_seconds = 100;
  EXPECT_TRUE(Mentions(c, "limits.default_deadline_seconds: must not exceed"));
  c = Config{};
  c.server.limits.max_deadline_seconds = 0;
  EXPECT_TRUE(Mentions(c, "limits.max_deadline_seconds: 0 is out of range"));
}

TEST(ValidateTest, PlaintextListenerStaysOnLoopbackUnlessAllowed) {
  Config c;
  c.server.listen = "0.0.0.0:7400";
  EXPECT_TRUE(
      Mentions(c, "server.listen: '0.0.0.0:7400' is not a loopback address and TLS is off"));
  c.server.allow_plaintext_remote = true;
  EXPECT_EQ(Problems(c), "");
  c.server.listen = "[::1]:7400";
  c.server.allow_plaintext_remote = false;
  EXPECT_EQ(Problems(c), "");
}

TEST(ValidateTest, TlsAllowsAnyAddress) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("c.pem")) << "x";
  std::ofstream(dir.Sub("k.pem")) << "x";
  Config c;
  c.server.listen = "0.0.0.0:7400";
  c.server.tls.cert_file = dir.Sub("c.pem");
  c.server.tls.key_file = dir.Sub("k.pem");
  EXPECT_EQ(Problems(c), "");
}

TEST(ValidateTest, TlsFilesMustBePairedAndReadable) {
  Config c;
  c.server.tls.cert_file = "/nonexistent/cert.pem";
  std::string p = Problems(c);
  EXPECT_NE(p.find("tls.key_file: tls.cert_file and tls.key_file must be set together"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("tls.cert_file: cannot read '/nonexistent/cert.pem'"), std::string::npos) << p;

  c = Config{};
  c.server.tls.client_ca_file = "/nonexistent/ca.pem";
  EXPECT_TRUE(Mentions(c, "tls.client_ca_file: mutual TLS needs tls.cert_file"));
}

TEST(ValidateTest, TokensFileMustBeReadable) {
  Config c;
  c.server.auth.tokens_file = "/nonexistent/tokens";
  EXPECT_TRUE(Mentions(c, "auth.tokens_file: cannot read '/nonexistent/tokens'"));
}

TEST(ValidateTest, ListenAddresses) {
  Config c;
  c.server.metrics_listen = "127.0.0.1:7400";
  EXPECT_TRUE(Mentions(c, "server.metrics_listen: must use another port than server.listen"));
  c.server.metrics_listen = "nonsense";
  EXPECT_TRUE(Mentions(c, "server.metrics_listen: 'nonsense' is not host:port"));
  c.server.listen = "127.0.0.1:0";
  c.server.metrics_listen = "127.0.0.1:0";
  EXPECT_EQ(Problems(c), "") << "two port-0 listeners get different ports";
}

TEST(ValidateTest, OneLinePerProblem) {
  Config c;
  c.server.drain_seconds = -1;
  c.server.limits.max_inflight_requests = 0;
  const std::string p = Problems(c);
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 1) << p;
}

TEST(ValidateTest, WriteRoomWarningCountsTheLargestValueAndTheVariantsPagesPerOperation) {
  Options o;
  o.cache_bytes = 4ull << 20;  // 1024 frames, 512 of them write room
  o.checkpoint.dirty_fraction = 0.25;
  o.max_value_bytes = 1000000;
  // 1 MB is 246 blob pages of 4072 bytes: with btree's 8 + 2 pages it fits.
  EXPECT_EQ(WriteRoomWarning(o), "") << "btree: 8 + 2 + 246 pages fit in 512";
  // hln at 1 MiB leaves: a split rewrites two leaves of 256 subnodes.
  const std::string w = WriteRoomWarning(o, 2 * 256 + 2);
  EXPECT_NE(w.find("may dirty up to 522 pages"), std::string::npos) << w;
  // The leaf change alone (514 + 8 pages) overflows the 512 pages of room: the warning names the
  // cause, not the value limit.
  EXPECT_EQ(w.rfind("cache_bytes: ", 0), 0u) << w;
  EXPECT_NE(w.find("choose smaller leaves in index.params"), std::string::npos) << w;
  EXPECT_EQ(w.find("max_value_bytes"), std::string::npos) << w;
  o.cache_bytes = 8ull << 20;  // 1024 pages of write room
  const std::string w2 = WriteRoomWarning(o, 2 * 256 + 2);
  EXPECT_EQ(w2, "") << w2;
  // Batches never matter: they are applied operation by operation when they do not fit at once.
  o.max_batch_entries = 1000000;
  EXPECT_EQ(WriteRoomWarning(o), "");
}

}  // namespace
}  // namespace grove::config
