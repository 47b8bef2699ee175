// Every RPC of grove.v1.KV against a real groved, plus health and reflection.

#include <gtest/gtest.h>

#include "service/integration.h"
#include "service/reflection.grpc.pb.h"

namespace grove::testing {
namespace {

class GrovedRpcTest : public GrovedTest {
 protected:
  void SetUp() override {
    // Small scan messages so that a few entries already span several messages.
    StartGroved("limits:\n  scan_message_bytes: 1KiB\n");
  }

  // Scans and returns every message.
  std::vector<v1::ScanResponse> ScanMessages(const v1::ScanRequest& req, grpc::Status* status) {
    auto ctx = Ctx();
    auto reader = kv_->Scan(ctx.get(), req);
    std::vector<v1::ScanResponse> out;
    v1::ScanResponse msg;
    while (reader->Read(&msg)) out.push_back(msg);
    *status = reader->Finish();
    return out;
  }

  std::vector<std::string> ScanKeys(const v1::ScanRequest& req, bool* more = nullptr) {
    grpc::Status s;
    std::vector<std::string> keys;
    std::vector<v1::ScanResponse> msgs = ScanMessages(req, &s);
    EXPECT_TRUE(s.ok()) << s.error_message();
    for (const auto& m : msgs) {
      for (const auto& kv : m.entries()) keys.push_back(kv.key());
    }
    if (more != nullptr) *more = !msgs.empty() && msgs.back().more();
    return keys;
  }
};

TEST_F(GrovedRpcTest, PutGetDelete) {
  ASSERT_TRUE(Put("alpha", "1").ok());
  EXPECT_EQ(Get("alpha"), "1");
  ASSERT_TRUE(Put("alpha", "2").ok());
  EXPECT_EQ(Get("alpha"), "2");
  ASSERT_TRUE(Put("empty", "").ok());
  EXPECT_EQ(Get("empty"), "") << "an empty value is a value";

  v1::DeleteRequest del;
  del.set_key("alpha");
  v1::DeleteResponse dresp;
  ASSERT_TRUE(kv_->Delete(Ctx().get(), del, &dresp).ok());
  EXPECT_EQ(Get("alpha"), "<absent>");
  EXPECT_TRUE(kv_->Delete(Ctx().get(), del, &dresp).ok()) << "deleting an absent key is OK";
}

TEST_F(GrovedRpcTest, MissingKeyIsFoundFalseNotAnError) {
  v1::GetRequest req;
  req.set_key("never-written");
  v1::GetResponse resp;
  grpc::Status s = kv_->Get(Ctx().get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.found());
  EXPECT_EQ(resp.value(), "");
}

TEST_F(GrovedRpcTest, BinaryKeysAndValues) {
  const std::string key("\x00\xff\x01", 3);
  const std::string value("\x00\x00\xfe", 3);
  ASSERT_TRUE(Put(key, value).ok());
  EXPECT_EQ(Get(key), value);
}

TEST_F(GrovedRpcTest, BatchGetAnswersInOrderWithDuplicatesAndMisses) {
  ASSERT_TRUE(Put("a", "A").ok());
  ASSERT_TRUE(Put("c", "C").ok());
  v1::BatchGetRequest req;
  for (const char* k : {"c", "b", "a", "c"}) req.add_keys(k);
  v1::BatchGetResponse resp;
  ASSERT_TRUE(kv_->BatchGet(Ctx().get(), req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 4);
  EXPECT_TRUE(resp.results(0).found());
  EXPECT_EQ(resp.results(0).value(), "C");
  EXPECT_FALSE(resp.results(1).found());
  EXPECT_EQ(resp.results(2).value(), "A");
  EXPECT_EQ(resp.results(3).value(), "C");
}

TEST_F(GrovedRpcTest, BatchGetOfManyKeysSpansChunks) {
  v1::BatchInsertRequest ins;
  for (int i = 0; i < 500; ++i) {
    v1::Mutation* m = ins.add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(U64Key(i));
    m->set_value("v" + std::to_string(i));
  }
  v1::BatchInsertResponse iresp;
  ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), ins, &iresp).ok());
  v1::BatchGetRequest req;
  for (int i = 0; i < 1000; i += 2) req.add_keys(U64Key(i));
  v1::BatchGetResponse resp;
  ASSERT_TRUE(kv_->BatchGet(Ctx().get(), req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 500);
  for (int j = 0; j < 500; ++j) {
    const int i = 2 * j;
    EXPECT_EQ(resp.results(j).found(), i < 500) << i;
    if (i < 500) {
      EXPECT_EQ(resp.results(j).value(), "v" + std::to_string(i));
    }
  }
}

TEST_F(GrovedRpcTest, BatchInsertAppliesPutsAndDeletesInOrder) {
  ASSERT_TRUE(Put("gone", "x").ok());
  v1::BatchInsertRequest req;
  auto add = [&](v1::Mutation::Type t, const char* k, const char* v) {
    v1::Mutation* m = req.add_mutations();
    m->set_type(t);
    m->set_key(k);
    if (t == v1::Mutation::PUT) m->set_value(v);
  };
  add(v1::Mutation::PUT, "k1", "first");
  add(v1::Mutation::PUT, "k2", "two");
  add(v1::Mutation::DELETE, "gone", "");
  add(v1::Mutation::PUT, "k1", "second");  // a later mutation of the same key wins
  v1::BatchInsertResponse resp;
  ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.applied(), 4u);
  EXPECT_EQ(Get("k1"), "second");
  EXPECT_EQ(Get("k2"), "two");
  EXPECT_EQ(Get("gone"), "<absent>");
}

TEST_F(GrovedRpcTest, BatchInsertIsAllOrNothingOnABadMutation) {
  v1::BatchInsertRequest req;
  v1::Mutation* ok = req.add_mutations();
  ok->set_type(v1::Mutation::PUT);
  ok->set_key("would-be-written");
  v1::Mutation* bad = req.add_mutations();
  bad->set_type(v1::Mutation::PUT);
  bad->set_key("");
  v1::BatchInsertResponse resp;
  grpc::Status s = kv_->BatchInsert(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "mutations[1].key: must not be empty");
  EXPECT_EQ(Get("would-be-written"), "<absent>");
}

class GrovedScanTest : public GrovedRpcTest {
 protected:
  void SetUp() override {
    GrovedRpcTest::SetUp();
    // 100 keys of 8 bytes with 100-byte values: ~10 entries per 1 KiB message.
    v1::BatchInsertRequest req;
    for (int i = 0; i < 100; ++i) {
      v1::Mutation* m = req.add_mutations();
      m->set_type(v1::Mutation::PUT);
      m->set_key(U64Key(i));
      m->set_value(std::string(100, static_cast<char>('a' + i % 26)));
    }
    v1::BatchInsertResponse resp;
    ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), req, &resp).ok());
  }
};

TEST_F(GrovedScanTest, ForwardWholeRangeInKeyOrderAcrossMessages) {
  grpc::Status s;
  std::vector<v1::ScanResponse> msgs = ScanMessages({}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(msgs.size(), 5u) << "1 KiB messages";
  uint64_t next = 0;
  for (const v1::ScanResponse& m : msgs) {
    ASSERT_GT(m.entries_size(), 0);
    EXPECT_EQ(m.last_key(), m.entries(m.entries_size() - 1).key())
        << "last_key names the resume point";
    uint64_t bytes = 0;
    for (const v1::KeyValue& kv : m.entries()) {
      EXPECT_EQ(kv.key(), U64Key(next++));
      EXPECT_EQ(kv.value().size(), 100u);
      bytes += kv.key().size() + kv.value().size();
    }
    EXPECT_LE(bytes, 1024u);
    EXPECT_FALSE(m.more());
  }
  EXPECT_EQ(next, 100u);
}

TEST_F(GrovedScanTest, RangeIsStartInclusiveEndExclusive) {
  v1::ScanRequest req;
  req.set_start(U64Key(10));
  req.set_end(U64Key(20));
  std::vector<std::string> keys = ScanKeys(req);
  ASSERT_EQ(keys.size(), 10u);
  EXPECT_EQ(keys.front(), U64Key(10));
  EXPECT_EQ(keys.back(), U64Key(19));
}

TEST_F(GrovedScanTest, ReverseVisitsTheSameRangeBackwards) {
  v1::ScanRequest req;
  req.set_start(U64Key(10));
  req.set_end(U64Key(20));
  req.set_reverse(true);
  std::vector<std::string> keys = ScanKeys(req);
  ASSERT_EQ(keys.size(), 10u);
  EXPECT_EQ(keys.front(), U64Key(19));
  EXPECT_EQ(keys.back(), U64Key(10));
}

TEST_F(GrovedScanTest, LimitSetsMoreWhenKeysRemain) {
  v1::ScanRequest req;
  req.set_limit(25);
  bool more = false;
  std::vector<std::string> keys = ScanKeys(req, &more);
  EXPECT_EQ(keys.size(), 25u);
  EXPECT_TRUE(more);
  req.set_start(U64Key(90));
  keys = ScanKeys(req, &more);
  EXPECT_EQ(keys.size(), 10u);
  EXPECT_FALSE(more) << "the range ended before the limit";
  req.set_start(U64Key(75));
  keys = ScanKeys(req, &more);
  EXPECT_EQ(keys.size(), 25u);
  EXPECT_FALSE(more) << "exactly the last 25 keys: nothing remains";
}

TEST_F(GrovedScanTest, ResumeAfterLastKeyInBothDirections) {
  v1::ScanRequest req;
  req.set_limit(30);
  std::vector<std::string> first = ScanKeys(req);
  req.set_start(first.back() + std::string(1, '\0'));
  std::vector<std::string> second = ScanKeys(req);
  EXPECT_EQ(second.front(), U64Key(30));

  v1::ScanRequest rev;
  rev.set_reverse(true);
  rev.set_limit(30);
  first = ScanKeys(rev);
  EXPECT_EQ(first.back(), U64Key(70));
  rev.set_end(first.back());
  second = ScanKeys(rev);
  EXPECT_EQ(second.front(), U64Key(69));
}

TEST_F(GrovedScanTest, KeysOnlyCarriesNoValues) {
  v1::ScanRequest req;
  req.set_keys_only(true);
  grpc::Status s;
  std::vector<v1::ScanResponse> msgs = ScanMessages(req, &s);
  ASSERT_TRUE(s.ok());
  size_t n = 0;
  for (const auto& m : msgs) {
    for (const auto& kv : m.entries()) {
      EXPECT_TRUE(kv.value().empty());
      ++n;
    }
  }
  EXPECT_EQ(n, 100u);
  EXPECT_EQ(msgs.size(), 1u) << "800 bytes of keys fit one 1 KiB message";
}

TEST_F(GrovedScanTest, EmptyRangeSendsNothing) {
  v1::ScanRequest req;
  req.set_start(U64Key(500));
  grpc::Status s;
  EXPECT_TRUE(ScanMessages(req, &s).empty());
  EXPECT_TRUE(s.ok());
  req.set_start(U64Key(5));
  req.set_end(U64Key(5));
  EXPECT_TRUE(ScanMessages(req, &s).empty());
  EXPECT_TRUE(s.ok());
}

TEST_F(GrovedRpcTest, StatsReflectTheEngine) {
  ASSERT_TRUE(Put("s1", "v").ok());
  EXPECT_EQ(Get("s1"), "v");
  v1::StatsResponse stats;
  ASSERT_TRUE(kv_->Stats(Ctx().get(), {}, &stats).ok());
  EXPECT_EQ(stats.variant(), "btree");
  EXPECT_TRUE(stats.io_backend() == "uring" || stats.io_backend() == "psync") << stats.io_backend();
  EXPECT_FALSE(stats.version().empty());
  EXPECT_GE(stats.operations().puts(), 1u);
  EXPECT_GE(stats.operations().gets(), 1u);
  EXPECT_GE(stats.wal().records(), 1u);
  EXPECT_GE(stats.index().height(), 1u);
  EXPECT_GT(stats.cache().capacity_pages(), 0u);
  EXPECT_TRUE(stats.cache().page_reads().contains("demand"));
}

TEST_F(GrovedRpcTest, HealthIsServingForTheServerAndTheKvService) {
  for (const char* service : {"", "grove.v1.KV"}) {
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health_->Check(Ctx().get(), req, &resp).ok());
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("grove.v1.Nope");
  grpc::health::v1::HealthCheckResponse resp;
  EXPECT_EQ(health_->Check(Ctx().get(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrovedRpcTest, ReflectionListsAndDescribesTheServices) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(channel_);
  auto ctx = Ctx();
  auto stream = stub->ServerReflectionInfo(ctx.get());
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  EXPECT_NE(std::find(names.begin(), names.end(), "grove.v1.KV"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());

  req.set_file_containing_symbol("grove.v1.KV");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_GT(resp.file_descriptor_response().file_descriptor_proto_size(), 0)
      << resp.error_response().error_message();
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace grove::testing
