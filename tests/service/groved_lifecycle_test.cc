// groved's lifecycle: readiness, draining on SIGTERM/SIGINT with calls in flight, restarts with the
// data intact, and startup failures.

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "service/integration.h"

namespace grove::testing {
namespace {

using grpc::health::v1::HealthCheckResponse;

// See groved_limits_test.cc: a small window keeps an unread Scan blocked in the server's Write.
std::shared_ptr<grpc::Channel> SlowReaderChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 1024);
  return Plaintext(address, args);
}

void LoadBulk(v1::KV::Stub* kv, int n) {
  for (int i = 0; i < n; i += 1000) {
    v1::BatchInsertRequest req;
    for (int j = i; j < i + 1000 && j < n; ++j) {
      v1::Mutation* m = req.add_mutations();
      m->set_type(v1::Mutation::PUT);
      m->set_key(U64Key(j));
      m->set_value(std::string(1000, static_cast<char>('a' + j % 26)));
    }
    v1::BatchInsertResponse resp;
    ASSERT_TRUE(kv->BatchInsert(Ctx().get(), req, &resp).ok());
  }
}

// Polls a fresh connection until calls are refused with UNAVAILABLE (the listener closed).
bool WaitUntilRefused(const std::string& address, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto kv = v1::KV::NewStub(Plaintext(address));
    v1::GetRequest get;
    get.set_key("k");
    v1::GetResponse resp;
    if (kv->Get(Ctx(std::chrono::milliseconds(500)).get(), get, &resp).error_code() ==
        grpc::StatusCode::UNAVAILABLE) {
      return true;
    }
  }
  return false;
}

class GrovedLifecycleTest : public GrovedTest {};

TEST_F(GrovedLifecycleTest, ReadinessFollowsTheEngine) {
  StartGroved();
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/livez").status, 200);
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/readyz").status, 200);
  const std::string log = groved_->Log();
  const size_t open = log.find("engine open in");
  const size_t serving = log.find("info groved: serving");
  ASSERT_NE(open, std::string::npos) << log;
  ASSERT_NE(serving, std::string::npos) << log;
  EXPECT_LT(open, serving) << "SERVING only after the engine opened";
  EXPECT_NE(MetricsText().find("\ngrove_ready 1\n"), std::string::npos);
}

TEST_F(GrovedLifecycleTest, GracefulShutdownDrainsCallsInFlight) {
  StartGroved("limits:\n  scan_message_bytes: 64KiB\nserver:\n  drain_seconds: 60\n");
  LoadBulk(kv_.get(), 4000);

  auto watch_ctx = Ctx(std::chrono::seconds(60));
  auto watch = health_->Watch(watch_ctx.get(), {});
  HealthCheckResponse h;
  ASSERT_TRUE(watch->Read(&h));
  EXPECT_EQ(h.status(), HealthCheckResponse::SERVING);

  auto slow = v1::KV::NewStub(SlowReaderChannel(groved_->address()));
  auto scan_ctx = Ctx(std::chrono::seconds(60));
  auto scan = slow->Scan(scan_ctx.get(), v1::ScanRequest());
  v1::ScanResponse msg;
  ASSERT_TRUE(scan->Read(&msg));  // the call is in the handler now, and stays there
  int entries = msg.entries_size();

  groved_->Signal(SIGTERM);
  ASSERT_TRUE(watch->Read(&h));
  EXPECT_EQ(h.status(), HealthCheckResponse::NOT_SERVING);
  while (watch->Read(&h)) EXPECT_EQ(h.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::UNAVAILABLE) << "watches end";
  EXPECT_TRUE(groved_->WaitReadyz(503, std::chrono::seconds(10)));
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/livez").status, 200) << "alive while draining";
  EXPECT_TRUE(WaitUntilRefused(groved_->address(), std::chrono::seconds(10)))
      << "new calls are refused while draining";
  EXPECT_TRUE(groved_->running()) << "still draining the held scan";

  while (scan->Read(&msg)) entries += msg.entries_size();
  grpc::Status s = scan->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(entries, 4000) << "the call in flight finished completely";

  ASSERT_EQ(groved_->Wait(std::chrono::seconds(60)), 0) << groved_->Log();
  const std::string log = groved_->Log();
  EXPECT_NE(log.find("received SIGTERM, draining"), std::string::npos) << log;
  EXPECT_NE(log.find("engine closed (final checkpoint written)"), std::string::npos) << log;
}

TEST_F(GrovedLifecycleTest, DrainDeadlineCancelsStuckCalls) {
  StartGroved("limits:\n  scan_message_bytes: 64KiB\nserver:\n  drain_seconds: 1\n");
  LoadBulk(kv_.get(), 4000);
  auto slow = v1::KV::NewStub(SlowReaderChannel(groved_->address()));
  auto scan_ctx = Ctx(std::chrono::seconds(60));
  auto scan = slow->Scan(scan_ctx.get(), v1::ScanRequest());
  v1::ScanResponse msg;
  ASSERT_TRUE(scan->Read(&msg));

  groved_->Signal(SIGTERM);
  // The reader never reads on: the drain deadline cancels the call and groved still exits 0.
  ASSERT_EQ(groved_->Wait(std::chrono::seconds(60)), 0) << groved_->Log();
  int entries = msg.entries_size();
  while (scan->Read(&msg)) entries += msg.entries_size();
  EXPECT_FALSE(scan->Finish().ok());
  EXPECT_LT(entries, 4000);
}

TEST_F(GrovedLifecycleTest, ShutdownDelayKeepsServingWhileNotReady) {
  StartGroved("server:\n  shutdown_delay_seconds: 6\n");
  ASSERT_TRUE(Put("early", "ok").ok());  // the connection is up before the delay starts
  groved_->Signal(SIGTERM);
  ASSERT_TRUE(groved_->WaitReadyz(503, std::chrono::seconds(10)));
  // Load balancers see 503 now, but calls already on their way are still served.
  EXPECT_TRUE(Put("late", "ok").ok());
  grpc::health::v1::HealthCheckResponse h;
  ASSERT_TRUE(health_->Check(Ctx().get(), {}, &h).ok());
  EXPECT_EQ(h.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(groved_->Wait(std::chrono::seconds(60)), 0);
}

// Draining ends when no call is in flight, not at drain_seconds: idle client connections (gRPC
// and a keep-alive metrics scrape) do not hold it.
TEST_F(GrovedLifecycleTest, DrainEndsWhenNoCallIsInFlight) {
  StartGroved("server:\n  drain_seconds: 120\n");
  ASSERT_TRUE(Put("k", "v").ok());  // the channel stays connected, idle
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/metrics").status, 200);
  groved_->Signal(SIGTERM);
  ASSERT_EQ(groved_->Wait(std::chrono::seconds(60)), 0) << groved_->Log();
  // Well inside drain_seconds (120), and not the seconds an idle C++ channel (this test's, which
  // nothing reads while the test waits) takes to close after gRPC's GOAWAY: groved closed it.
  const std::string log = groved_->Log();
  const size_t at = log.find("gRPC drained in ");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_LT(std::stod(log.substr(at + 16)), 3.0) << log;
}

TEST_F(GrovedLifecycleTest, SigintDrainsToo) {
  StartGroved();
  groved_->Signal(SIGINT);
  ASSERT_EQ(groved_->Wait(std::chrono::seconds(60)), 0);
  EXPECT_NE(groved_->Log().find("received SIGINT, draining"), std::string::npos);
}

TEST_F(GrovedLifecycleTest, RestartKeepsTheData) {
  StartGroved();
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(Put(U64Key(i), "value-" + std::to_string(i)).ok());
  }
  v1::DeleteRequest del;
  del.set_key(U64Key(7));
  v1::DeleteResponse dresp;
  ASSERT_TRUE(kv_->Delete(Ctx().get(), del, &dresp).ok());
  StopGroved();

  StartGroved();
  auto ctx = Ctx();
  auto reader = kv_->Scan(ctx.get(), v1::ScanRequest());
  v1::ScanResponse msg;
  int i = 0;
  while (reader->Read(&msg)) {
    for (const auto& kv : msg.entries()) {
      if (i == 7) ++i;
      EXPECT_EQ(kv.key(), U64Key(i));
      EXPECT_EQ(kv.value(), "value-" + std::to_string(i));
      ++i;
    }
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(i, 300);
  v1::StatsResponse stats;
  ASSERT_TRUE(kv_->Stats(Ctx().get(), {}, &stats).ok());
  EXPECT_EQ(stats.storage().recovery_replayed_records(), 0u)
      << "the final checkpoint left nothing to replay";
}

TEST_F(GrovedLifecycleTest, KillNineKeepsAcknowledgedWrites) {
  StartGroved("wal:\n  sync: always\n");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Put(U64Key(i), std::to_string(i)).ok());
  groved_->Signal(SIGKILL);
  ASSERT_EQ(groved_->Wait(std::chrono::seconds(30)), 128 + SIGKILL);
  StartGroved("wal:\n  sync: always\n");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Get(U64Key(i)), std::to_string(i));
}

TEST_F(GrovedLifecycleTest, SecondServerOnTheSameDirectoryNeverServes) {
  StartGroved();
  GrovedConfig c;
  c.data_dir = dir_.Sub("data");
  c.wait_ready = false;
  auto second = GrovedProcess::Start(dir_.path(), c);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->Wait(std::chrono::seconds(30)), 1);
  const std::string log = second->Log();
  EXPECT_NE(log.find("cannot open the engine in"), std::string::npos) << log;
  EXPECT_EQ(log.find("info groved: serving"), std::string::npos) << log;
  EXPECT_EQ(Get("still"), "<absent>") << "the first server is unaffected";
}

TEST(GrovedConfigTest, InvalidConfigNamesTheFieldAndExitsOne) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = "wal:\n  sync: sometimes\nlimits:\n  max_key_bytes: 5000\n";
  c.wait_ready = false;
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  EXPECT_EQ(groved->Wait(std::chrono::seconds(30)), 1);
  const std::string log = groved->Log();
  EXPECT_NE(log.find("wal.sync: 'sometimes' is not allowed (allowed: always, batch, none)"),
            std::string::npos)
      << log;
}

TEST(GrovedConfigTest, RangeErrorsNameTheFieldAndTheAllowedValues) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = "limits:\n  max_key_bytes: 5000\n";
  c.wait_ready = false;
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  EXPECT_EQ(groved->Wait(std::chrono::seconds(30)), 1);
  EXPECT_NE(
      groved->Log().find("limits.max_key_bytes: 5000 is out of range (allowed: 1..1024 bytes)"),
      std::string::npos)
      << groved->Log();
}

TEST(GrovedConfigTest, PrintDefaultConfigIsTheRepositoryFile) {
  TempDir dir;
  const std::string out = dir.Sub("default.yaml");
  ASSERT_EQ(system((std::string(GROVED_PATH) + " --print-default-config > " + out).c_str()), 0);
  std::ifstream printed(out), source(GROVE_SOURCE_DIR "/config/grove.yaml");
  std::stringstream a, b;
  a << printed.rdbuf();
  b << source.rdbuf();
  EXPECT_EQ(a.str(), b.str());
}

TEST(GrovedConfigTest, UsageErrorsExitTwo) {
  EXPECT_EQ(WEXITSTATUS(system((std::string(GROVED_PATH) + " --bogus 2>/dev/null").c_str())), 2);
  EXPECT_EQ(WEXITSTATUS(system((std::string(GROVED_PATH) + " --help >/dev/null").c_str())), 0);
}

}  // namespace
}  // namespace grove::testing
