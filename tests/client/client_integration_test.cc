// The client library against a real groved: every call, paging, retries while the server is
// down, and a scan that resumes after the server was killed mid-stream.

#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "grove/client/client.h"

#include "service/integration.h"

namespace grove::testing {
namespace {

using client::Client;
using client::ClientOptions;

class ClientIntegrationTest : public GrovedTest {
 protected:
  std::unique_ptr<Client> Connect(ClientOptions o = {}) {
    o.address = groved_->address();
    std::unique_ptr<Client> c;
    EXPECT_TRUE(Client::Create(o, &c).ok());
    return c;
  }

  // All keys a scan delivers.
  static std::vector<std::string> Keys(Client* c, const client::ScanRange& r) {
    std::vector<std::string> keys;
    grpc::Status s = c->Scan(r, [&](std::string_view k, std::string_view) {
      keys.emplace_back(k);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.error_message();
    return keys;
  }
};

TEST_F(ClientIntegrationTest, EveryCall) {
  StartGroved();
  auto c = Connect();
  ASSERT_TRUE(c->Put("a", "1").ok());
  std::string v;
  bool found = false;
  ASSERT_TRUE(c->Get("a", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(c->BatchInsert({{client::Mutation::Type::kPut, "b", "2"},
                              {client::Mutation::Type::kDelete, "a", ""}})
                  .ok());
  std::vector<std::optional<std::string>> values;
  ASSERT_TRUE(c->BatchGet({"a", "b"}, &values).ok());
  ASSERT_EQ(values.size(), 2u);
  EXPECT_FALSE(values[0].has_value());
  EXPECT_EQ(values[1], "2");
  ASSERT_TRUE(c->Delete("b").ok());
  ASSERT_TRUE(c->Get("b", &v, &found).ok());
  EXPECT_FALSE(found);
  v1::StatsResponse stats;
  ASSERT_TRUE(c->Stats(&stats).ok());
  EXPECT_EQ(stats.variant(), "btree");
  grpc::health::v1::HealthCheckResponse::ServingStatus h{};
  ASSERT_TRUE(c->Health("", &h).ok());
  EXPECT_EQ(h, grpc::health::v1::HealthCheckResponse::SERVING);
  // Server errors come back with the server's message.
  grpc::Status s = c->Put("", "x");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "key: must not be empty");
}

TEST_F(ClientIntegrationTest, ScanPagesThroughEverythingInBothDirections) {
  StartGroved("limits:\n  max_scan_limit: 10\n");
  auto c = Connect();
  std::vector<client::Mutation> batch;
  for (int i = 0; i < 95; ++i) batch.push_back({client::Mutation::Type::kPut, U64Key(i), "v"});
  ASSERT_TRUE(c->BatchInsert(batch).ok());

  client::ScanRange r;
  r.page_size = 7;  // under the server's cap of 10, so every page is a new request
  std::vector<std::string> keys = Keys(c.get(), r);
  ASSERT_EQ(keys.size(), 95u);
  for (int i = 0; i < 95; ++i) EXPECT_EQ(keys[i], U64Key(i));

  r.reverse = true;
  r.start = U64Key(10);
  r.end = U64Key(50);
  keys = Keys(c.get(), r);
  ASSERT_EQ(keys.size(), 40u);
  EXPECT_EQ(keys.front(), U64Key(49));
  EXPECT_EQ(keys.back(), U64Key(10));

  r = {};
  r.page_size = 7;
  r.limit = 23;
  EXPECT_EQ(Keys(c.get(), r).size(), 23u);

  int seen = 0;
  r = {};
  r.page_size = 7;
  ASSERT_TRUE(c->Scan(r, [&](std::string_view, std::string_view) { return ++seen < 5; }).ok());
  EXPECT_EQ(seen, 5) << "the visitor stops the scan";

  r = {};
  r.page_size = 11;  // over the server's cap: the server's error comes back
  EXPECT_EQ(c->Scan(r, [](std::string_view, std::string_view) { return true; }).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(ClientIntegrationTest, RetriesWhileTheServerIsNotThereYet) {
  GrovedConfig config;
  config.data_dir = dir_.Sub("data");
  config.grpc_port = PickFreePort();
  config.metrics_port = PickFreePort();
  ClientOptions o;
  o.address = "127.0.0.1:" + std::to_string(config.grpc_port);
  o.max_attempts = 1000;
  o.max_backoff = std::chrono::milliseconds(100);
  std::unique_ptr<Client> c;
  ASSERT_TRUE(Client::Create(o, &c).ok());

  // The call starts before groved does, sees UNAVAILABLE and backs off until groved serves.
  grpc::Status put;
  std::thread caller([&] { put = c->Put("early", "bird"); });
  groved_ = GrovedProcess::Start(dir_.path(), config);
  caller.join();
  ASSERT_NE(groved_, nullptr);
  EXPECT_TRUE(put.ok()) << put.error_message();
  std::string v;
  bool found = false;
  ASSERT_TRUE(c->Get("early", &v, &found).ok());
  EXPECT_EQ(v, "bird");
}

TEST_F(ClientIntegrationTest, ScanResumesAfterTheServerDiedMidStream) {
  GrovedConfig config;
  config.data_dir = dir_.Sub("data");
  config.grpc_port = PickFreePort();
  config.metrics_port = PickFreePort();
  config.yaml = "limits:\n  scan_message_bytes: 64KiB\n";
  groved_ = GrovedProcess::Start(dir_.path(), config);
  ASSERT_NE(groved_, nullptr);
  ClientOptions o;
  o.max_attempts = 1000;
  o.max_backoff = std::chrono::milliseconds(100);
  auto c = Connect(o);
  // 20 MB: far more than the connection buffers, so the stream is cut while data is outstanding.
  constexpr int kKeys = 20000;
  for (int i = 0; i < kKeys; i += 1000) {
    std::vector<client::Mutation> batch;
    for (int j = i; j < i + 1000; ++j) {
      batch.push_back({client::Mutation::Type::kPut, U64Key(j), std::string(1000, 'v')});
    }
    ASSERT_TRUE(c->BatchInsert(batch).ok());
  }

  std::vector<std::string> keys;
  bool restarted = false;
  grpc::Status s = c->Scan({}, [&](std::string_view k, std::string_view) {
    keys.emplace_back(k);
    if (keys.size() == 20 && !restarted) {
      // Kill the server in the middle of the stream and bring it back on the same port.
      restarted = true;
      groved_->Signal(SIGKILL);
      groved_->Wait(std::chrono::seconds(30));
      groved_ = GrovedProcess::Start(dir_.path(), config);
    }
    return true;
  });
  ASSERT_TRUE(restarted);
  ASSERT_NE(groved_, nullptr);
  EXPECT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(keys.size(), static_cast<size_t>(kKeys)) << "every key exactly once";
  for (int i = 0; i < kKeys; ++i) ASSERT_EQ(keys[i], U64Key(i)) << i;
  EXPECT_NE(MetricsText().find("grpc_server_started_total{grpc_method=\"Scan\""), std::string::npos)
      << "the new server served the rest of the scan";
}

}  // namespace
}  // namespace grove::testing
