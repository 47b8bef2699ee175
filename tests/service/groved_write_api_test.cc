// The write API beyond plain puts, against a real groved: versions and preconditions
// (FAILED_PRECONDITION with the key's state in trailing metadata), DeleteRange, and puts with a
// time to live; every bad field named with the right code.

#include <thread>

#include <gtest/gtest.h>

#include "service/integration.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

// Trailing metadata of a finished call, as a map.
std::map<std::string, std::string> Trailers(const grpc::ClientContext& ctx) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : ctx.GetServerTrailingMetadata()) {
    out[std::string(k.data(), k.size())] = std::string(v.data(), v.size());
  }
  return out;
}

class GrovedWriteApiTest : public GrovedTest {
 protected:
  void SetUp() override { StartGroved("limits:\n  max_batch_entries: 100\n"); }

  v1::GetResponse GetFull(const std::string& key) {
    v1::GetRequest req;
    req.set_key(key);
    v1::GetResponse resp;
    EXPECT_TRUE(kv_->Get(Ctx().get(), req, &resp).ok());
    return resp;
  }
  grpc::Status DeleteRange(const std::string& start, const std::string& end, uint32_t limit,
                           v1::DeleteRangeResponse* resp) {
    v1::DeleteRangeRequest req;
    req.set_start(start);
    req.set_end(end);
    req.set_limit(limit);
    return kv_->DeleteRange(Ctx().get(), req, resp);
  }
};

TEST_F(GrovedWriteApiTest, CompareAndSwapByVersionAndValue) {
  v1::PutRequest put;
  put.set_key("k");
  put.set_value("v1");
  put.mutable_precondition()->set_absent(true);
  v1::PutResponse resp;
  ASSERT_TRUE(kv_->Put(Ctx().get(), put, &resp).ok());
  const uint64_t v1 = resp.version();
  EXPECT_GT(v1, 0u);
  EXPECT_EQ(GetFull("k").version(), v1);

  // absent fails now, and says what the key holds (its value only when asked).
  auto ctx = Ctx();
  grpc::Status s = kv_->Put(ctx.get(), put, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message().rfind("precondition: ", 0), 0u) << s.error_message();
  auto t = Trailers(*ctx);
  EXPECT_EQ(t["grove-current-found"], "1");
  EXPECT_EQ(t["grove-current-version"], std::to_string(v1));
  EXPECT_EQ(t.count("grove-current-value-bin"), 0u);

  put.mutable_precondition()->set_version_equals(v1 + 7);
  put.set_return_current(true);
  ctx = Ctx();
  s = kv_->Put(ctx.get(), put, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  t = Trailers(*ctx);
  EXPECT_EQ(t["grove-current-value-bin"], "v1");

  put.mutable_precondition()->set_version_equals(v1);
  put.set_value("v2");
  ASSERT_TRUE(kv_->Put(Ctx().get(), put, &resp).ok());
  EXPECT_GT(resp.version(), v1);
  EXPECT_EQ(GetFull("k").value(), "v2");

  v1::DeleteRequest del;
  del.set_key("k");
  del.mutable_precondition()->set_value_equals("v1");
  v1::DeleteResponse dresp;
  EXPECT_EQ(kv_->Delete(Ctx().get(), del, &dresp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  del.mutable_precondition()->set_value_equals("v2");
  ASSERT_TRUE(kv_->Delete(Ctx().get(), del, &dresp).ok());
  EXPECT_FALSE(GetFull("k").found());

  // A precondition with nothing set, or absent=false, is malformed.
  put.clear_precondition();
  put.mutable_precondition();
  s = kv_->Put(Ctx().get(), put, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("precondition"), std::string::npos) << s.error_message();
  put.mutable_precondition()->set_absent(false);
  s = kv_->Put(Ctx().get(), put, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("precondition.absent"), std::string::npos);
}

TEST_F(GrovedWriteApiTest, BatchPreconditionsAreAllOrNothingAndNameTheMutation) {
  ASSERT_TRUE(Put("a", "1").ok());
  v1::BatchInsertRequest req;
  auto* m0 = req.add_mutations();
  m0->set_type(v1::Mutation::PUT);
  m0->set_key("b");
  m0->set_value("2");
  m0->mutable_precondition()->set_absent(true);
  auto* m1 = req.add_mutations();
  m1->set_type(v1::Mutation::PUT);
  m1->set_key("a");
  m1->set_value("changed");
  m1->mutable_precondition()->set_value_equals("not 1");
  v1::BatchInsertResponse resp;
  auto ctx = Ctx();
  grpc::Status s = kv_->BatchInsert(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message().rfind("mutations[1].precondition: ", 0), 0u) << s.error_message();
  EXPECT_EQ(Trailers(*ctx)["grove-failed-mutation"], "1");
  EXPECT_EQ(Get("b"), "<absent>") << "nothing of a refused batch applies";
  m1->mutable_precondition()->set_value_equals("1");
  ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(GetFull("a").version(), resp.version());
  EXPECT_EQ(GetFull("b").version(), resp.version());
}

TEST_F(GrovedWriteApiTest, DeleteRangeInCallsThatSayWhereToContinue) {
  v1::BatchInsertRequest batch;
  for (int i = 0; i < 90; ++i) {
    auto* m = batch.add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(U64Key(i));
    m->set_value("v");
  }
  v1::BatchInsertResponse bresp;
  ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), batch, &bresp).ok());
  ASSERT_TRUE(Put("zzz", "stays").ok());

  v1::DeleteRangeResponse resp;
  ASSERT_TRUE(DeleteRange(U64Key(10), U64Key(80), 25, &resp).ok());
  EXPECT_EQ(resp.deleted(), 25u);
  EXPECT_TRUE(resp.more());
  EXPECT_EQ(resp.resume_key(), U64Key(35));
  EXPECT_EQ(resp.limited_by(), "limit");
  EXPECT_GT(resp.version(), bresp.version());
  // limit 0: the configured most per call (100) covers the rest.
  ASSERT_TRUE(DeleteRange(resp.resume_key(), U64Key(80), 0, &resp).ok());
  EXPECT_EQ(resp.deleted(), 45u);
  EXPECT_FALSE(resp.more());
  EXPECT_EQ(Get(U64Key(9)), "v");
  EXPECT_EQ(Get(U64Key(10)), "<absent>");
  EXPECT_EQ(Get(U64Key(79)), "<absent>");
  EXPECT_EQ(Get(U64Key(80)), "v");
  // Unbounded end, and the configured limit named when it stops a call.
  ASSERT_TRUE(DeleteRange("", "", 0, &resp).ok());
  EXPECT_EQ(resp.deleted(), 21u);  // 0..9, 80..89 and "zzz"
  EXPECT_FALSE(resp.more());

  grpc::Status s = DeleteRange("b", "a", 0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("end: ", 0), 0u) << s.error_message();
  s = DeleteRange(std::string(200, 'k'), "", 0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message().rfind("start: ", 0), 0u) << s.error_message();
}

TEST_F(GrovedWriteApiTest, PutsWithATimeToLiveExpire) {
  v1::PutRequest put;
  put.set_key("session");
  put.set_value("token");
  put.set_ttl_ms(300);
  v1::PutResponse resp;
  const auto before = std::chrono::system_clock::now();
  ASSERT_TRUE(kv_->Put(Ctx().get(), put, &resp).ok());
  const auto expires = before + 300ms;
  v1::GetResponse got = GetFull("session");
  if (std::chrono::system_clock::now() < expires) {
    EXPECT_TRUE(got.found());
    const auto at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(got.expires_at_ms()));
    EXPECT_GE(at, std::chrono::time_point_cast<std::chrono::milliseconds>(expires));
    EXPECT_LT(at, expires + 5s);
  }
  ASSERT_TRUE(Put("plain", "x").ok());
  EXPECT_EQ(GetFull("plain").expires_at_ms(), 0u);
  std::this_thread::sleep_until(expires + 50ms);
  EXPECT_EQ(Get("session"), "<absent>");
  v1::StatsRequest sreq;
  v1::StatsResponse stats;
  ASSERT_TRUE(kv_->Stats(Ctx().get(), sreq, &stats).ok());
  EXPECT_GE(stats.expiry().expired_reads(), 1u);
  EXPECT_TRUE(stats.expiry().sweeping());
  EXPECT_NE(MetricsText().find("grove_expired_reads_total"), std::string::npos);

  put.set_ttl_ms(100ull * 365 * 24 * 3600 * 1000 + 1);
  grpc::Status s = kv_->Put(Ctx().get(), put, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("ttl_ms: ", 0), 0u) << s.error_message();
  v1::BatchInsertRequest batch;
  auto* m = batch.add_mutations();
  m->set_type(v1::Mutation::DELETE);
  m->set_key("session");
  m->set_ttl_ms(5);
  v1::BatchInsertResponse bresp;
  s = kv_->BatchInsert(Ctx().get(), batch, &bresp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("mutations[0].ttl_ms: ", 0), 0u) << s.error_message();
}

}  // namespace
}  // namespace grove::testing
