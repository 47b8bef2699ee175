// Every configured limit and every error code, against a real groved. Limits are set small in the
// config so that each can be hit cheaply.

#include <thread>

#include <gtest/gtest.h>

#include "service/integration.h"

namespace grove::testing {
namespace {

constexpr const char* kSmallLimits = R"(limits:
  max_key_bytes: 16
  max_value_bytes: 1KiB
  max_batch_entries: 4
  max_batch_bytes: 2KiB
  max_scan_limit: 50
  scan_message_bytes: 1KiB
  max_receive_message_bytes: 128KiB
)";

void ExpectStatus(const grpc::Status& s, grpc::StatusCode code, const std::string& message) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_EQ(s.error_message(), message);
}

class GrovedLimitsTest : public GrovedTest {
 protected:
  void SetUp() override { StartGroved(kSmallLimits); }
};

TEST_F(GrovedLimitsTest, KeySize) {
  ExpectStatus(Put("", "v"), grpc::StatusCode::INVALID_ARGUMENT, "key: must not be empty");
  ExpectStatus(Put(std::string(17, 'k'), "v"), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "key: 17 bytes is over limits.max_key_bytes (16)");
  EXPECT_TRUE(Put(std::string(16, 'k'), "v").ok());
  v1::GetRequest get;
  get.set_key(std::string(17, 'k'));
  v1::GetResponse gresp;
  ExpectStatus(kv_->Get(Ctx().get(), get, &gresp), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "key: 17 bytes is over limits.max_key_bytes (16)");
  v1::DeleteRequest del;
  v1::DeleteResponse dresp;
  ExpectStatus(kv_->Delete(Ctx().get(), del, &dresp), grpc::StatusCode::INVALID_ARGUMENT,
               "key: must not be empty");
}

TEST_F(GrovedLimitsTest, ValueSize) {
  ExpectStatus(Put("k", std::string(1025, 'v')), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "value: 1025 bytes is over limits.max_value_bytes (1024)");
  EXPECT_TRUE(Put("k", std::string(1024, 'v')).ok());
  EXPECT_EQ(Get("k").size(), 1024u);
}

TEST_F(GrovedLimitsTest, BatchEntriesAndBytes) {
  v1::BatchInsertRequest req;
  for (int i = 0; i < 5; ++i) {
    v1::Mutation* m = req.add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key("k" + std::to_string(i));
    m->set_value("v");
  }
  v1::BatchInsertResponse resp;
  ExpectStatus(kv_->BatchInsert(Ctx().get(), req, &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "mutations: 5 mutations is over limits.max_batch_entries (4)");
  req.mutable_mutations()->RemoveLast();
  for (auto& m : *req.mutable_mutations()) m.set_value(std::string(600, 'v'));
  ExpectStatus(kv_->BatchInsert(Ctx().get(), req, &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "mutations: 2408 bytes of keys and values is over limits.max_batch_bytes (2048)");
  EXPECT_EQ(Get("k0"), "<absent>") << "nothing of a refused batch is applied";

  v1::BatchGetRequest bg;
  for (int i = 0; i < 5; ++i) bg.add_keys("k");
  v1::BatchGetResponse bgr;
  ExpectStatus(kv_->BatchGet(Ctx().get(), bg, &bgr), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "keys: 5 keys is over limits.max_batch_entries (4)");
}

TEST_F(GrovedLimitsTest, BatchGetResponseBytes) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(Put("big" + std::to_string(i), std::string(1000, 'x')).ok());
  v1::BatchGetRequest req;
  for (int i = 0; i < 3; ++i) req.add_keys("big" + std::to_string(i));
  v1::BatchGetResponse resp;
  ExpectStatus(kv_->BatchGet(Ctx().get(), req, &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "keys: the found keys and values exceed limits.max_batch_bytes (2048); ask for "
               "fewer keys per call");
  req.mutable_keys()->RemoveLast();
  EXPECT_TRUE(kv_->BatchGet(Ctx().get(), req, &resp).ok());
}

TEST_F(GrovedLimitsTest, MalformedRequests) {
  v1::BatchInsertRequest req;
  v1::BatchInsertResponse resp;
  ExpectStatus(kv_->BatchInsert(Ctx().get(), req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
               "mutations: must not be empty");
  v1::Mutation* m = req.add_mutations();
  m->set_key("k");
  ExpectStatus(kv_->BatchInsert(Ctx().get(), req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
               "mutations[0].type: must be PUT or DELETE");
  m->set_type(v1::Mutation::DELETE);
  m->set_value("x");
  ExpectStatus(kv_->BatchInsert(Ctx().get(), req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
               "mutations[0].value: must be empty for DELETE");
  v1::BatchGetRequest bg;
  v1::BatchGetResponse bgr;
  ExpectStatus(kv_->BatchGet(Ctx().get(), bg, &bgr), grpc::StatusCode::INVALID_ARGUMENT,
               "keys: must not be empty");
}

TEST_F(GrovedLimitsTest, ScanLimitAndBounds) {
  v1::ScanRequest req;
  req.set_limit(51);
  auto ctx = Ctx();
  auto reader = kv_->Scan(ctx.get(), req);
  v1::ScanResponse msg;
  EXPECT_FALSE(reader->Read(&msg));
  ExpectStatus(reader->Finish(), grpc::StatusCode::RESOURCE_EXHAUSTED,
               "limit: 51 is over limits.max_scan_limit (50)");

  req.set_limit(0);
  req.set_start("b");
  req.set_end("a");
  ctx = Ctx();
  reader = kv_->Scan(ctx.get(), req);
  EXPECT_FALSE(reader->Read(&msg));
  ExpectStatus(reader->Finish(), grpc::StatusCode::INVALID_ARGUMENT,
               "start: must not be after end (the range is [start, end) in either direction)");
}

TEST_F(GrovedLimitsTest, ScanLimitZeroMeansTheCap) {
  v1::BatchInsertRequest req;
  for (int round = 0; round < 20; ++round) {
    req.Clear();
    for (int i = 0; i < 4; ++i) {
      v1::Mutation* m = req.add_mutations();
      m->set_type(v1::Mutation::PUT);
      m->set_key(U64Key(round * 4 + i));
    }
    v1::BatchInsertResponse resp;
    ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), req, &resp).ok());
  }
  auto ctx = Ctx();
  auto reader = kv_->Scan(ctx.get(), v1::ScanRequest());
  v1::ScanResponse msg;
  int n = 0;
  bool more = false;
  while (reader->Read(&msg)) {
    n += msg.entries_size();
    more = msg.more();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(n, 50);
  EXPECT_TRUE(more);
}

TEST_F(GrovedLimitsTest, MaxReceiveMessageSizeIsCheckedBeforeDecoding) {
  grpc::Status s = Put("k", std::string(200 << 10, 'v'));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("larger than max"), std::string::npos) << s.error_message();
}

TEST_F(GrovedLimitsTest, LimitRejectionsAreCounted) {
  ASSERT_FALSE(Put("k", std::string(2000, 'v')).ok());
  const std::string m = MetricsText();
  EXPECT_NE(m.find("grove_limit_rejections_total{limit=\"max_value_bytes\"} 1"), std::string::npos)
      << m;
}

// ---- Limits that need a call held open on the server ------------------------------------------

// A channel whose flow-control window stays small, so that a Scan the client does not read blocks
// the server in Write() after a few messages: the call stays in flight until we read.
std::shared_ptr<grpc::Channel> SlowReaderChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 1024);
  return Plaintext(address, args);
}

class HeldScan {
 public:
  HeldScan(v1::KV::Stub* stub, std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : ctx_(Ctx(timeout)), reader_(stub->Scan(ctx_.get(), v1::ScanRequest())) {}
  // Reads one message: the call has reached the handler.
  bool ReadOne() { return reader_->Read(&msg_); }
  // Reads the rest; returns the entries read in total (including the first message) and the status.
  grpc::Status Drain(int* entries) {
    *entries = msg_.entries_size();
    while (reader_->Read(&msg_)) *entries += msg_.entries_size();
    return reader_->Finish();
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReader<v1::ScanResponse>> reader_;
  v1::ScanResponse msg_;
};

// Loads `n` entries of 1 KiB values: enough data that a scan fills any flow-control window.
void LoadBulk(v1::KV::Stub* kv, int n, int batch) {
  for (int i = 0; i < n; i += batch) {
    v1::BatchInsertRequest req;
    for (int j = i; j < i + batch && j < n; ++j) {
      v1::Mutation* m = req.add_mutations();
      m->set_type(v1::Mutation::PUT);
      m->set_key(U64Key(j));
      m->set_value(std::string(1000, 'x'));
    }
    v1::BatchInsertResponse resp;
    ASSERT_TRUE(kv->BatchInsert(Ctx().get(), req, &resp).ok());
  }
}

constexpr const char* kHoldLimits = R"(limits:
  max_scan_limit: 100000
  scan_message_bytes: 64KiB
)";

TEST(GrovedHeldCallTest, MaxInflightRequests) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = std::string(kHoldLimits) + "  max_inflight_requests: 1\n";
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  auto kv = v1::KV::NewStub(Plaintext(groved->address()));
  LoadBulk(kv.get(), 4000, 1000);

  auto slow = v1::KV::NewStub(SlowReaderChannel(groved->address()));
  HeldScan held(slow.get());
  ASSERT_TRUE(held.ReadOne());
  v1::GetRequest get;
  get.set_key("k");
  v1::GetResponse resp;
  grpc::Status s = kv->Get(Ctx().get(), get, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "server busy: limits.max_inflight_requests (1) calls in flight; retry with backoff");
  int entries = 0;
  EXPECT_TRUE(held.Drain(&entries).ok());
  EXPECT_EQ(entries, 4000);
  EXPECT_TRUE(kv->Get(Ctx().get(), get, &resp).ok()) << "the slot is free again";
}

TEST(GrovedHeldCallTest, MaxConcurrentStreamsQueuesCallsOnAConnection) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = std::string(kHoldLimits) + "  max_concurrent_streams: 1\n";
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  LoadBulk(v1::KV::NewStub(Plaintext(groved->address())).get(), 4000, 1000);

  // Both calls share one connection, which allows one stream at a time.
  auto kv = v1::KV::NewStub(SlowReaderChannel(groved->address()));
  HeldScan held(kv.get());
  ASSERT_TRUE(held.ReadOne());
  v1::GetRequest get;
  get.set_key("k");
  v1::GetResponse resp;
  grpc::Status s = kv->Get(Ctx(std::chrono::milliseconds(500)).get(), get, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << "the second stream waits for the first: " << s.error_message();
  int entries = 0;
  EXPECT_TRUE(held.Drain(&entries).ok());
  EXPECT_TRUE(kv->Get(Ctx().get(), get, &resp).ok());
}

TEST(GrovedHeldCallTest, DeadlinesAreCappedAndDefaulted) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = std::string(kHoldLimits) + "  max_deadline_seconds: 1\n  default_deadline_seconds: 1\n";
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  LoadBulk(v1::KV::NewStub(Plaintext(groved->address())).get(), 4000, 1000);
  auto slow = v1::KV::NewStub(SlowReaderChannel(groved->address()));

  for (const bool client_deadline : {true, false}) {
    SCOPED_TRACE(client_deadline ? "a 60 s client deadline is cut to 1 s" : "no client deadline");
    std::unique_ptr<grpc::ClientContext> ctx =
        client_deadline ? Ctx(std::chrono::seconds(60)) : std::make_unique<grpc::ClientContext>();
    auto reader = slow->Scan(ctx.get(), v1::ScanRequest());
    v1::ScanResponse msg;
    ASSERT_TRUE(reader->Read(&msg));
    // Elapsing time is what is under test here: the server's 1 s budget runs out while the
    // client holds the stream.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    int entries = msg.entries_size();
    std::string last_key = msg.last_key();
    while (reader->Read(&msg)) {
      entries += msg.entries_size();
      last_key = msg.last_key();
    }
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    EXPECT_EQ(s.error_message(), "deadline exceeded during Scan; resume after last_key");
    EXPECT_LT(entries, 4000);
    EXPECT_EQ(last_key, U64Key(entries - 1)) << "entries sent before the deadline are whole";
  }
}

}  // namespace
}  // namespace grove::testing
