// The client's Batch stream transport against a real groved: many threads multiplexed onto one
// client's streams get the right answers, a kill -9 loses no write the stream acknowledged and
// leaves every other write reported as refused or of unknown outcome, and after a drain the
// client goes on against the restarted server.

#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "grove/client/client.h"

#include "service/integration.h"

namespace grove::testing {
namespace {

using client::Client;
using client::ClientOptions;
using namespace std::chrono_literals;

class ClientStreamTest : public GrovedTest {
 protected:
  std::unique_ptr<Client> Connect(const std::string& address, int streams = 1,
                                  size_t messages_in_flight = 2) {
    ClientOptions o;
    o.address = address;
    o.transport = ClientOptions::Transport::kStream;
    o.streams = streams;
    o.stream_messages_in_flight = messages_in_flight;
    o.stream_lone_calls_unary = false;  // every call on the stream, also when it is alone
    o.max_backoff = 100ms;
    o.max_attempts = 50;
    std::unique_ptr<Client> c;
    EXPECT_TRUE(Client::Create(o, &c).ok());
    return c;
  }
  GrovedConfig FixedPorts() {
    GrovedConfig config;
    config.data_dir = dir_.Sub("data");
    config.grpc_port = PickFreePort();
    config.metrics_port = PickFreePort();
    return config;
  }

  // 16 threads of Put, Get and a refused conditional Put through one client with `streams`
  // streams of `messages_in_flight` messages each: every answer is the call's own, and every call
  // went over those streams, not an RPC each.
  void ManyThreadsShareTheStreams(int streams, size_t messages_in_flight) {
    StartGroved();
    std::unique_ptr<Client> c = Connect(groved_->address(), streams, messages_in_flight);
    constexpr int kThreads = 16;
    constexpr int kPerThread = 200;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
          ASSERT_TRUE(c->Put(key, key + "-v").ok());
          std::string v;
          bool found = false;
          ASSERT_TRUE(c->Get(key, &v, &found).ok());
          ASSERT_TRUE(found);
          ASSERT_EQ(v, key + "-v");
          if (i % 50 == 0) {
            client::WriteOptions cas;
            cas.precondition = client::Precondition::Absent();
            client::WriteOutcome out;
            ASSERT_EQ(c->Put(key, "again", cas, &out).error_code(),
                      grpc::StatusCode::FAILED_PRECONDITION);
            ASSERT_TRUE(out.failure.found);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    const std::string m = MetricsText();
    EXPECT_NE(m.find("grpc_server_started_total{grpc_method=\"Batch\",grpc_service=\"grove.v1.KV\","
                     "grpc_type=\"bidi_stream\"} " +
                     std::to_string(streams)),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Put\","
                     "grpc_service=\"grove.v1.KV\",grpc_type=\"batched\"} " +
                     std::to_string(kThreads * kPerThread)),
              std::string::npos)
        << m;
  }
};

TEST_F(ClientStreamTest, ManyThreadsShareTheStreams) { ManyThreadsShareTheStreams(1, 2); }
TEST_F(ClientStreamTest, ManyThreadsOneMessageInFlightPerStream) {
  ManyThreadsShareTheStreams(2, 1);
}
TEST_F(ClientStreamTest, ManyThreadsManyMessagesInFlight) { ManyThreadsShareTheStreams(3, 4); }

// Writers through the stream while groved is killed: every acknowledged write is there after the
// restart, and every failed one says it was not applied or that its outcome is unknown.
TEST_F(ClientStreamTest, KillNineLosesNoAcknowledgedWrite) {
  GrovedConfig config = FixedPorts();
  groved_ = GrovedProcess::Start(dir_.path(), config);
  ASSERT_NE(groved_, nullptr);
  ClientOptions o;
  o.address = groved_->address();
  o.max_attempts = 1;
  std::unique_ptr<Client> c;
  ASSERT_TRUE(Client::Create(o, &c).ok());
  std::mutex mu;
  std::vector<std::string> acked;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !stop.load() && i < 100000; ++i) {
        const std::string key = U64Key(static_cast<uint64_t>(t) << 32 | i);
        const grpc::Status s = c->Put(key, "v" + std::to_string(i));
        if (s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          acked.push_back(key);
        } else {
          EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
          stop = true;
        }
      }
    });
  }
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (acked.size() >= 2000) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  groved_->Signal(SIGKILL);
  ASSERT_EQ(groved_->Wait(30s), 128 + SIGKILL);
  stop = true;
  for (auto& w : writers) w.join();
  groved_ = GrovedProcess::Start(dir_.path(), config);
  ASSERT_NE(groved_, nullptr);
  std::unique_ptr<Client> check = Connect(groved_->address());
  for (const std::string& key : acked) {
    std::string v;
    bool found = false;
    ASSERT_TRUE(check->Get(key, &v, &found).ok());
    ASSERT_TRUE(found) << "an acknowledged write was lost";
  }
}

// SIGTERM ends the client's open streams; the next calls reach the restarted server. A read goes
// first: until the client has seen its old stream end (its reader thread may not have run yet on
// a loaded machine), a call may still be written to that stream and fail with it, and only a
// call that cannot have changed anything (a read) is then resent without asking; a write is
// reported as "may or may not have been applied" (client.h). After the read, the stream is new.
TEST_F(ClientStreamTest, GoesOnAfterTheServerRestarts) {
  GrovedConfig config = FixedPorts();
  groved_ = GrovedProcess::Start(dir_.path(), config);
  ASSERT_NE(groved_, nullptr);
  std::unique_ptr<Client> c = Connect(groved_->address());
  ASSERT_TRUE(c->Put("before", "1").ok());
  StopGroved();
  groved_ = GrovedProcess::Start(dir_.path(), config);
  ASSERT_NE(groved_, nullptr);
  std::string v;
  bool found = false;
  const grpc::Status read = c->Get("before", &v, &found);
  ASSERT_TRUE(read.ok()) << read.error_code() << ": " << read.error_message();
  EXPECT_EQ(v, "1");
  const grpc::Status after = c->Put("after", "2");
  ASSERT_TRUE(after.ok()) << after.error_code() << ": " << after.error_message();
  ASSERT_TRUE(c->Get("after", &v, &found).ok());
  EXPECT_EQ(v, "2");
}

}  // namespace
}  // namespace grove::testing
