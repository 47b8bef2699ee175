// Workload traces through groved: grove.v1.Admin/StartTrace records the calls served (unary and
// Batch sub-requests) into <trace.dir>/<name>.trace as they were made; bad requests name their
// field; without trace.dir tracing is refused.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grove/v1/admin.grpc.pb.h"

#include "service/integration.h"
#include "trace/trace_file.h"

namespace grove::testing {
namespace {

class GrovedTraceTest : public GrovedTest {
 protected:
  void StartWithTraces() {
    StartGroved("trace:\n  dir: " + dir_.Sub("traces") + "\n");
    admin_ = v1::Admin::NewStub(channel_);
  }
  grpc::Status Start(double sample, const std::string& name, v1::TraceStatusResponse* r) {
    v1::StartTraceRequest req;
    req.set_sample(sample);
    req.set_name(name);
    return admin_->StartTrace(Ctx().get(), req, r);
  }

  std::unique_ptr<v1::Admin::Stub> admin_;
};

std::vector<trace::Record> ReadTrace(const std::string& path) {
  std::vector<trace::Record> out;
  auto reader = trace::TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return out;
  trace::Record r;
  for (;;) {
    auto more = (*reader)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(r);
  }
  return out;
}

TEST_F(GrovedTraceTest, WithoutTraceDirTracingIsRefused) {
  StartGroved();
  admin_ = v1::Admin::NewStub(channel_);
  v1::TraceStatusResponse r;
  const grpc::Status s = Start(1, "t", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("trace.dir"), std::string::npos) << s.error_message();
}

TEST_F(GrovedTraceTest, BadRequestsNameTheirField) {
  StartWithTraces();
  v1::TraceStatusResponse r;
  grpc::Status s = Start(2, "t", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("sample:", 0), 0u) << s.error_message();
  s = Start(0.5, "../outside", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("name:", 0), 0u) << s.error_message();
  v1::StartTraceRequest req;
  req.set_duration_seconds(-1);
  s = admin_->StartTrace(Ctx().get(), req, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("duration_seconds:", 0), 0u) << s.error_message();
  ASSERT_TRUE(Start(0.5, "first", &r).ok());
  EXPECT_EQ(Start(0.5, "second", &r).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(admin_->StopTrace(Ctx().get(), {}, &r).ok());
  EXPECT_EQ(admin_->StopTrace(Ctx().get(), {}, &r).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(GrovedTraceTest, RecordsTheCallsServedAsTheyWereMade) {
  StartWithTraces();
  v1::TraceStatusResponse started;
  ASSERT_TRUE(Start(1, "all", &started).ok());
  EXPECT_TRUE(started.active());
  EXPECT_EQ(started.path(), dir_.Sub("traces") + "/all.trace");

  ASSERT_TRUE(Put("a", "12345").ok());
  EXPECT_EQ(Get("a"), "12345");
  EXPECT_EQ(Get("missing"), "<absent>");
  {
    v1::BatchInsertRequest req;
    auto* m = req.add_mutations();
    m->set_type(v1::Mutation::PUT);
    m->set_key("b");
    m->set_value("xy");
    m = req.add_mutations();
    m->set_type(v1::Mutation::DELETE);
    m->set_key("a");
    v1::BatchInsertResponse resp;
    ASSERT_TRUE(kv_->BatchInsert(Ctx().get(), req, &resp).ok());
  }
  {
    v1::PutRequest req;  // a conditional write that fails
    req.set_key("b");
    req.set_value("z");
    req.mutable_precondition()->set_absent(true);
    v1::PutResponse resp;
    EXPECT_EQ(kv_->Put(Ctx().get(), req, &resp).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  {
    v1::ScanRequest req;
    req.set_limit(10);
    req.set_reverse(true);
    auto ctx = Ctx();
    auto reader = kv_->Scan(ctx.get(), req);
    v1::ScanResponse resp;
    while (reader->Read(&resp)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  {
    // Two sub-requests on the Batch stream.
    auto ctx = Ctx();
    auto stream = kv_->Batch(ctx.get());
    v1::BatchRequest m;
    auto* put = m.add_requests();
    put->set_tag(1);
    put->mutable_put()->set_key("c");
    put->mutable_put()->set_value(std::string(300, 'v'));
    auto* get = m.add_requests();
    get->set_tag(2);
    get->mutable_get()->set_key("b");
    ASSERT_TRUE(stream->Write(m));
    int answered = 0;
    v1::BatchResponse resp;
    while (answered < 2 && stream->Read(&resp)) answered += resp.results_size();
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  v1::TraceStatusResponse stopped;
  ASSERT_TRUE(admin_->StopTrace(Ctx().get(), {}, &stopped).ok());
  EXPECT_FALSE(stopped.active());
  EXPECT_EQ(stopped.ended_because(), "stopped");
  EXPECT_EQ(stopped.records_written(), 8u);

  const std::vector<trace::Record> t = ReadTrace(stopped.path());
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t[0].op, trace::Op::kPut);
  EXPECT_EQ(t[0].entries, (std::vector<trace::Entry>{{"a", true, 5}}));
  EXPECT_EQ(t[1].op, trace::Op::kGet);
  EXPECT_EQ(t[1].result, 1u);
  EXPECT_EQ(t[2].op, trace::Op::kGet);
  EXPECT_EQ(t[2].result, 0u);
  EXPECT_EQ(t[3].op, trace::Op::kBatchInsert);
  EXPECT_EQ(t[3].entries, (std::vector<trace::Entry>{{"b", true, 2}, {"a", false, 0}}));
  EXPECT_EQ(t[4].op, trace::Op::kPut);
  EXPECT_EQ(t[4].code, static_cast<uint8_t>(grpc::StatusCode::FAILED_PRECONDITION));
  EXPECT_EQ(t[4].flags, trace::record_flags::kPrecondition |
                            (1 << trace::record_flags::kPreconditionKindShift));
  EXPECT_EQ(t[5].op, trace::Op::kScan);
  EXPECT_EQ(t[5].arg, 10u);
  EXPECT_EQ(t[5].result, 1u) << "one key (b) was left";
  EXPECT_EQ(t[5].flags, trace::record_flags::kReverse);
  // The stream's two, in either order.
  std::vector<trace::Op> last = {t[6].op, t[7].op};
  std::sort(last.begin(), last.end());
  EXPECT_EQ(last, (std::vector<trace::Op>{trace::Op::kGet, trace::Op::kPut}));
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i].micros, t[i - 1].micros);

  const std::string metrics = MetricsText();
  EXPECT_NE(metrics.find("grove_trace_records_total{outcome=\"written\"} 8"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("grove_trace_active 0"), std::string::npos);
}

// Every trace starts with the key sketch of the database it was taken over (key_sketch.h), so a
// replay on less data knows where the keys nobody asked for were.
TEST_F(GrovedTraceTest, EachTraceStartsWithTheDatabasesKeySketch) {
  StartWithTraces();
  v1::TraceStatusResponse r;
  ASSERT_TRUE(Start(1, "empty", &r).ok());
  ASSERT_TRUE(admin_->StopTrace(Ctx().get(), {}, &r).ok());
  {
    auto reader = trace::TraceReader::Open(r.path());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    ASSERT_NE((*reader)->sketch(), nullptr);
    EXPECT_TRUE((*reader)->sketch()->bounds.empty());
  }
  auto key = [](uint64_t v) {
    std::string k = "user";
    for (int shift = 56; shift >= 0; shift -= 8) k.push_back(static_cast<char>(v >> shift));
    return k;
  };
  for (uint64_t i = 0; i < 600; ++i) ASSERT_TRUE(Put(key(i * 1000), "v").ok());
  ASSERT_TRUE(Start(1, "full", &r).ok());
  ASSERT_TRUE(admin_->StopTrace(Ctx().get(), {}, &r).ok());
  auto reader = trace::TraceReader::Open(r.path());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const trace::KeySketch* sketch = (*reader)->sketch();
  ASSERT_NE(sketch, nullptr);
  ASSERT_FALSE(sketch->bounds.empty());
  EXPECT_EQ(sketch->bounds.front(), key(0));
  EXPECT_EQ(sketch->bounds.back(), key(599'000));
  // Cells this sparse are counted key by key.
  EXPECT_EQ(sketch->Entries(), 600u);
}

}  // namespace
}  // namespace grove::testing
