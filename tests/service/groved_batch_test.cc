// grove.v1.KV/Batch against a real groved, through raw stubs: every sub-request kind, errors per
// sub-request (codes, messages, metadata), the same-key ordering rule, one log sync per message,
// deadlines, roles, limits, metrics, a broken stream, kill -9 and the drain.

#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "grove/v1/metadata.h"

#include "service/integration.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;
using Results = std::map<uint64_t, v1::SubResult>;

// A sub-request of each kind, tagged.
v1::SubRequest PutSub(uint64_t tag, const std::string& key, const std::string& value) {
  v1::SubRequest r;
  r.set_tag(tag);
  r.mutable_put()->set_key(key);
  r.mutable_put()->set_value(value);
  return r;
}
v1::SubRequest GetSub(uint64_t tag, const std::string& key) {
  v1::SubRequest r;
  r.set_tag(tag);
  r.mutable_get()->set_key(key);
  return r;
}
v1::SubRequest DeleteSub(uint64_t tag, const std::string& key) {
  v1::SubRequest r;
  r.set_tag(tag);
  r.mutable_delete_()->set_key(key);
  return r;
}

// One Batch stream: Send a message, Collect results until every tag sent is answered.
class Stream {
 public:
  explicit Stream(v1::KV::Stub* kv, const std::string& token = "",
                  std::chrono::milliseconds timeout = 60s)
      : ctx_(Ctx(timeout, token)), rw_(kv->Batch(ctx_.get())) {}

  bool Send(const std::vector<v1::SubRequest>& subs) {
    v1::BatchRequest m;
    for (const v1::SubRequest& s : subs) *m.add_requests() = s;
    outstanding_ += subs.size();
    return rw_->Write(m);
  }
  // Reads until every sub-request sent is answered; fails the test on a short stream.
  Results Collect() {
    Results out;
    v1::BatchResponse m;
    while (outstanding_ > 0 && rw_->Read(&m)) {
      ++messages_;
      for (const v1::SubResult& r : m.results()) {
        EXPECT_TRUE(out.emplace(r.tag(), r).second) << "tag " << r.tag() << " answered twice";
        --outstanding_;
      }
    }
    EXPECT_EQ(outstanding_, 0u) << "the stream ended before every sub-request was answered";
    return out;
  }
  Results Call(const std::vector<v1::SubRequest>& subs) {
    EXPECT_TRUE(Send(subs));
    return Collect();
  }
  grpc::Status Finish() {
    rw_->WritesDone();
    return rw_->Finish();
  }
  grpc::ClientContext* context() { return ctx_.get(); }
  auto* raw() { return rw_.get(); }
  int messages() const { return messages_; }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::BatchRequest, v1::BatchResponse>> rw_;
  size_t outstanding_ = 0;
  int messages_ = 0;
};

grpc::StatusCode Code(const v1::SubResult& r) {
  return static_cast<grpc::StatusCode>(r.status().code());
}

class GrovedBatchTest : public GrovedTest {
 protected:
  void SetUp() override { StartGroved("limits:\n  max_batch_entries: 20000\n"); }

  uint64_t Syncs() {
    v1::StatsResponse stats;
    EXPECT_TRUE(kv_->Stats(Ctx().get(), {}, &stats).ok());
    return stats.wal().syncs();
  }
};

TEST_F(GrovedBatchTest, EveryKindAnswersAsItsUnaryCall) {
  Stream s(kv_.get());
  v1::SubRequest batch_insert;
  batch_insert.set_tag(4);
  for (const char* k : {"b1", "b2", "b3"}) {
    v1::Mutation* m = batch_insert.mutable_batch_insert()->add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(k);
    m->set_value(std::string("v-") + k);
  }
  Results r =
      s.Call({PutSub(1, "a", "A"), PutSub(2, "gone", "x"), DeleteSub(3, "gone"), batch_insert});
  ASSERT_EQ(r.size(), 4u);
  for (auto& [tag, res] : r) ASSERT_EQ(Code(res), grpc::StatusCode::OK) << tag;
  EXPECT_GT(r[1].put().version(), 0u);
  EXPECT_GT(r[3].delete_().version(), r[2].put().version());
  EXPECT_EQ(r[4].batch_insert().applied(), 3u);

  v1::SubRequest batch_get;
  batch_get.set_tag(12);
  for (const char* k : {"b3", "missing", "a"}) batch_get.mutable_batch_get()->add_keys(k);
  v1::SubRequest delete_range;
  delete_range.set_tag(13);
  delete_range.mutable_delete_range()->set_start("b1");
  delete_range.mutable_delete_range()->set_end("b3");
  r = s.Call({GetSub(10, "a"), GetSub(11, "gone"), batch_get, delete_range, GetSub(14, "b2")});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[10].get().found());
  EXPECT_EQ(r[10].get().value(), "A");
  EXPECT_FALSE(r[11].get().found());
  ASSERT_EQ(r[12].batch_get().results_size(), 3);
  EXPECT_EQ(r[12].batch_get().results(0).value(), "v-b3");
  EXPECT_FALSE(r[12].batch_get().results(1).found());
  EXPECT_EQ(r[12].batch_get().results(2).value(), "A");
  EXPECT_EQ(r[13].delete_range().deleted(), 2u);
  EXPECT_FALSE(r[14].get().found()) << "the range delete came first in the message";
  EXPECT_TRUE(s.Finish().ok());
  EXPECT_EQ(Get("b3"), "v-b3");
  EXPECT_EQ(Get("b1"), "<absent>");
}

TEST_F(GrovedBatchTest, ErrorsAreEachSubRequestsOwn) {
  ASSERT_TRUE(Put("held", "old").ok());
  v1::SubRequest cas = PutSub(3, "held", "new");
  cas.mutable_put()->mutable_precondition()->set_absent(true);
  cas.mutable_put()->set_return_current(true);
  v1::SubRequest empty;
  empty.set_tag(4);
  v1::SubRequest bad_mutation;
  bad_mutation.set_tag(5);
  for (const char* k : {"ok", ""}) {
    v1::Mutation* m = bad_mutation.mutable_batch_insert()->add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(k);
  }
  Stream s(kv_.get());
  Results r = s.Call({PutSub(1, "", "v"), PutSub(2, "fine", "v"), cas, empty, bad_mutation,
                      GetSub(6, std::string(200, 'k'))});
  ASSERT_EQ(r.size(), 6u);

  // Each refusal is the unary call's: code and message.
  v1::PutRequest unary_put;
  unary_put.set_value("v");
  v1::PutResponse unary_resp;
  const grpc::Status unary = kv_->Put(Ctx().get(), unary_put, &unary_resp);
  EXPECT_EQ(Code(r[1]), unary.error_code());
  EXPECT_EQ(r[1].status().message(), unary.error_message());
  EXPECT_FALSE(r[1].has_put()) << "no response with an error";

  EXPECT_EQ(Code(r[2]), grpc::StatusCode::OK);
  EXPECT_EQ(Code(r[3]), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(r[3].status().message().rfind("precondition: ", 0), 0u) << r[3].status().message();
  EXPECT_EQ(r[3].status().metadata().at("grove-current-found"), "1");
  EXPECT_EQ(r[3].status().metadata().at("grove-current-value-bin"), "old");
  EXPECT_EQ(Code(r[4]), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r[4].status().message().find("requests[3]: no call set"), std::string::npos);
  EXPECT_EQ(Code(r[5]), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r[5].status().message().find("mutations[1].key"), std::string::npos)
      << r[5].status().message();
  v1::GetRequest long_get;
  long_get.set_key(std::string(200, 'k'));
  v1::GetResponse long_resp;
  const grpc::Status unary_get = kv_->Get(Ctx().get(), long_get, &long_resp);
  EXPECT_EQ(Code(r[6]), unary_get.error_code());
  EXPECT_EQ(r[6].status().message(), unary_get.error_message());
  EXPECT_TRUE(s.Finish().ok());
  EXPECT_EQ(Get("fine"), "v");
  EXPECT_EQ(Get("held"), "old");
  EXPECT_EQ(Get("ok"), "<absent>") << "a refused BatchInsert applies none of its mutations";
}

// Sub-requests on one key take effect in message order; a read after a write of its key sees it.
TEST_F(GrovedBatchTest, OneKeyInMessageOrder) {
  v1::SubRequest cas = PutSub(3, "k", "2");
  cas.mutable_put()->mutable_precondition()->set_value_equals("1");
  Stream s(kv_.get());
  Results r = s.Call({GetSub(0, "k"), PutSub(1, "k", "1"), GetSub(2, "k"), cas, GetSub(4, "k"),
                      DeleteSub(5, "k"), GetSub(6, "k"), PutSub(7, "k", "3")});
  ASSERT_EQ(r.size(), 8u);
  for (auto& [tag, res] : r) ASSERT_EQ(Code(res), grpc::StatusCode::OK) << tag;
  EXPECT_FALSE(r[0].get().found());
  EXPECT_EQ(r[2].get().value(), "1");
  EXPECT_EQ(r[2].get().version(), r[1].put().version());
  EXPECT_EQ(r[4].get().value(), "2");
  EXPECT_FALSE(r[6].get().found());
  EXPECT_LT(r[1].put().version(), r[3].put().version());
  EXPECT_LT(r[5].delete_().version(), r[7].put().version());
  EXPECT_EQ(Get("k"), "3");
}

// Messages sent back to back, without waiting for answers, keep one key in stream order: each
// message's Get reads the previous message's Put, and the Puts' versions follow the messages.
TEST_F(GrovedBatchTest, OneKeyInStreamOrderAcrossMessages) {
  constexpr int kMessages = 60;
  Stream s(kv_.get());
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(s.Send({GetSub(3 * i, "k"), PutSub(3 * i + 1, "k", std::to_string(i)),
                        PutSub(3 * i + 2, U64Key(i), "other")}));
  }
  Results r = s.Collect();
  ASSERT_EQ(r.size(), 3u * kMessages);
  for (auto& [tag, res] : r) ASSERT_EQ(Code(res), grpc::StatusCode::OK) << tag;
  EXPECT_FALSE(r[0].get().found());
  for (int i = 1; i < kMessages; ++i) {
    EXPECT_EQ(r[3 * i].get().value(), std::to_string(i - 1)) << "message " << i;
    EXPECT_EQ(r[3 * i].get().version(), r[3 * i - 2].put().version()) << "message " << i;
    EXPECT_LT(r[3 * i - 2].put().version(), r[3 * i + 1].put().version()) << "message " << i;
  }
  EXPECT_TRUE(s.Finish().ok());
  EXPECT_EQ(Get("k"), std::to_string(kMessages - 1));
}

// A message of writes on distinct keys shares one log sync (wal.sync: always, the default).
TEST_F(GrovedBatchTest, WritesOfAMessageShareOneSync) {
  std::vector<v1::SubRequest> subs;
  for (int i = 0; i < 64; ++i) subs.push_back(PutSub(i, U64Key(i), "value-" + std::to_string(i)));
  Stream s(kv_.get());
  const uint64_t before = Syncs();
  Results r = s.Call(subs);
  const uint64_t syncs = Syncs() - before;
  ASSERT_EQ(r.size(), 64u);
  for (auto& [tag, res] : r) ASSERT_EQ(Code(res), grpc::StatusCode::OK) << tag;
  EXPECT_EQ(syncs, 1u);
  for (int i = 0; i < 64; i += 9) EXPECT_EQ(Get(U64Key(i)), "value-" + std::to_string(i));
}

// A sub-request's deadline counts from when the server read the message: one that expires behind
// slow work of its message is DEADLINE_EXCEEDED; the rest of the message is unaffected.
TEST_F(GrovedBatchTest, DeadlinesAreEachSubRequestsOwn) {
  v1::BatchInsertRequest load;
  for (int i = 0; i < 10000; ++i) {
    v1::Mutation* m = load.add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(U64Key(i));
    m->set_value(std::string(100, 'v'));
  }
  v1::BatchInsertResponse load_resp;
  const grpc::Status loaded = kv_->BatchInsert(Ctx().get(), load, &load_resp);
  ASSERT_TRUE(loaded.ok()) << loaded.error_message();
  std::vector<v1::SubRequest> subs;
  for (int n = 0; n < 3; ++n) {  // tens of thousands of reads before the timed one
    v1::SubRequest bg;
    bg.set_tag(n);
    for (int i = 0; i < 10000; ++i) bg.mutable_batch_get()->add_keys(U64Key(i));
    subs.push_back(bg);
  }
  v1::SubRequest timed = GetSub(10, U64Key(1));
  timed.set_timeout_ms(1);
  subs.push_back(timed);
  v1::SubRequest roomy = GetSub(11, U64Key(2));
  roomy.set_timeout_ms(60000);
  subs.push_back(roomy);
  Stream s(kv_.get());
  Results r = s.Call(subs);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(Code(r[0]), grpc::StatusCode::OK);
  EXPECT_EQ(Code(r[10]), grpc::StatusCode::DEADLINE_EXCEEDED) << r[10].status().message();
  EXPECT_EQ(Code(r[11]), grpc::StatusCode::OK);
  EXPECT_GE(s.messages(), 2) << "results past scan_message_bytes go out in several messages";
}

TEST_F(GrovedBatchTest, TooManySubRequestsAreRefusedUnapplied) {
  StopGroved();
  StartGroved("limits:\n  max_batch_entries: 10\n");
  std::vector<v1::SubRequest> subs;
  for (int i = 0; i < 11; ++i) subs.push_back(PutSub(i, "k" + std::to_string(i), "v"));
  Stream s(kv_.get());
  Results r = s.Call(subs);
  ASSERT_EQ(r.size(), 11u);
  for (auto& [tag, res] : r) {
    EXPECT_EQ(Code(res), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(res.status().message().find("limits.max_batch_entries (10)"), std::string::npos);
    EXPECT_EQ(res.status().metadata().at(v1::kNotAppliedMetadata), "1");
  }
  subs.pop_back();
  r = s.Call(subs);  // the stream goes on
  for (auto& [tag, res] : r) EXPECT_EQ(Code(res), grpc::StatusCode::OK);
  EXPECT_EQ(Get("k10"), "<absent>");
  EXPECT_EQ(Get("k9"), "v");
}

TEST_F(GrovedBatchTest, TokensPerStreamRolesPerSubRequest) {
  StopGroved();
  std::ofstream(dir_.Sub("tokens")) << "read read-token-0123456789abcdef\n";
  StartGroved("auth:\n  tokens_file: " + dir_.Sub("tokens") + "\n");
  {
    Stream s(kv_.get());  // no token: the stream ends at once
    s.Send({GetSub(1, "k")});
    const grpc::Status st = s.Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  }
  Stream s(kv_.get(), "read-token-0123456789abcdef");
  Results r = s.Call({GetSub(1, "k"), PutSub(2, "k", "v")});
  EXPECT_EQ(Code(r[1]), grpc::StatusCode::OK);
  EXPECT_EQ(Code(r[2]), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(r[2].status().message(), "the token's role 'read' does not allow Put (needs 'write')");
  EXPECT_TRUE(s.Finish().ok());
}

TEST_F(GrovedBatchTest, SubRequestsAreCountedPerMethod) {
  ASSERT_TRUE(Put("unary", "1").ok());  // counted apart from the sub-requests
  Stream s(kv_.get());
  s.Call({PutSub(1, "a", "1"), PutSub(2, "", "1"), GetSub(3, "a")});
  EXPECT_TRUE(s.Finish().ok());
  const std::string m = MetricsText();
  const std::string put = "grpc_method=\"Put\",grpc_service=\"grove.v1.KV\",grpc_type=\"batched\"";
  EXPECT_NE(m.find("grpc_server_handled_total{grpc_code=\"OK\"," + put + "} 1"), std::string::npos)
      << m;
  EXPECT_NE(m.find("grpc_server_handled_total{grpc_code=\"InvalidArgument\"," + put + "} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("grpc_server_started_total{grpc_method=\"Get\",grpc_service=\"grove.v1.KV\","
                   "grpc_type=\"batched\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Put\","
                   "grpc_service=\"grove.v1.KV\",grpc_type=\"unary\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Batch\","
                   "grpc_service=\"grove.v1.KV\",grpc_type=\"bidi_stream\"} 1"),
            std::string::npos)
      << m;
}

// A client that cancels mid-message leaves each write applied or not, and the server serving.
TEST_F(GrovedBatchTest, CancelledStreamLeavesEachWriteWholeOrAbsent) {
  std::vector<v1::SubRequest> subs;
  for (int i = 0; i < 2000; ++i) {
    v1::SubRequest r;
    r.set_tag(i);
    v1::Mutation* m = r.mutable_batch_insert()->add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(U64Key(i) + "a");
    m->set_value("v");
    m = r.mutable_batch_insert()->add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key(U64Key(i) + "b");
    m->set_value("v");
    subs.push_back(r);
  }
  {
    Stream s(kv_.get());
    s.Send(subs);
    s.context()->TryCancel();
    EXPECT_FALSE(s.Finish().ok());
  }
  for (int i = 0; i < 2000; i += 7) {
    v1::BatchGetRequest req;  // sees a BatchInsert entirely or not at all
    req.add_keys(U64Key(i) + "a");
    req.add_keys(U64Key(i) + "b");
    v1::BatchGetResponse resp;
    ASSERT_TRUE(kv_->BatchGet(Ctx().get(), req, &resp).ok());
    EXPECT_EQ(resp.results(0).found(), resp.results(1).found()) << "a BatchInsert half applied";
  }
  Stream again(kv_.get());
  EXPECT_EQ(Code(again.Call({PutSub(1, "after", "v")})[1]), grpc::StatusCode::OK);
}

// Every write the stream acknowledged survives kill -9.
TEST_F(GrovedBatchTest, KillNineKeepsAcknowledgedWrites) {
  std::vector<int> acked;
  {
    Stream s(kv_.get());
    for (int m = 0; m < 20; ++m) {
      std::vector<v1::SubRequest> subs;
      for (int i = 0; i < 25; ++i) {
        const int n = m * 25 + i;
        subs.push_back(PutSub(n, U64Key(n), std::to_string(n)));
      }
      for (auto& [tag, res] : s.Call(subs)) {
        if (Code(res) == grpc::StatusCode::OK) acked.push_back(static_cast<int>(tag));
      }
    }
    groved_->Signal(SIGKILL);
    ASSERT_EQ(groved_->Wait(30s), 128 + SIGKILL);
  }
  ASSERT_EQ(acked.size(), 500u);
  StartGroved("limits:\n  max_batch_entries: 20000\n");
  for (int n : acked) ASSERT_EQ(Get(U64Key(n)), std::to_string(n));
}

// SIGTERM: a stream waiting for its next message does not hold the drain, and one that sends
// after it is told, with UNAVAILABLE and not-applied or by a closed stream, that nothing more was
// applied.
TEST_F(GrovedBatchTest, DrainEndsOpenStreams) {
  StopGroved();
  StartGroved("server:\n  drain_seconds: 120\n");
  Stream s(kv_.get());
  Results r = s.Call({PutSub(1, "k", "v")});
  ASSERT_EQ(Code(r[1]), grpc::StatusCode::OK);
  groved_->Signal(SIGTERM);
  ASSERT_EQ(groved_->Wait(60s), 0) << groved_->Log();
  const std::string log = groved_->Log();
  const size_t at = log.find("gRPC drained in ");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_LT(std::stod(log.substr(at + 16)), 3.0) << log;
  s.Send({PutSub(2, "late", "v")});
  EXPECT_FALSE(s.Finish().ok());
  StartGroved();
  EXPECT_EQ(Get("k"), "v");
  EXPECT_EQ(Get("late"), "<absent>");
}

}  // namespace
}  // namespace grove::testing
