#include "service/request_checks.h"

#include <gtest/gtest.h>

namespace grove::service {
namespace {

RequestLimits Small() {
  RequestLimits l;
  l.max_key_bytes = 8;
  l.max_value_bytes = 16;
  l.max_batch_entries = 3;
  l.max_batch_bytes = 40;
  l.max_scan_limit = 100;
  return l;
}

void ExpectRejected(const CheckResult& r, grpc::StatusCode code, const std::string& message,
                    std::string_view limit = {}) {
  EXPECT_EQ(r.status.error_code(), code) << r.status.error_message();
  EXPECT_EQ(r.status.error_message(), message);
  EXPECT_EQ(r.limit, limit);
}

TEST(RequestChecksTest, GetKey) {
  v1::GetRequest req;
  ExpectRejected(CheckGet(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "key: must not be empty");
  req.set_key("123456789");
  ExpectRejected(CheckGet(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "key: 9 bytes is over limits.max_key_bytes (8)", "max_key_bytes");
  req.set_key("12345678");
  EXPECT_TRUE(CheckGet(req, Small()).ok());
}

TEST(RequestChecksTest, PutKeyAndValue) {
  v1::PutRequest req;
  req.set_key("k");
  req.set_value(std::string(17, 'v'));
  ExpectRejected(CheckPut(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "value: 17 bytes is over limits.max_value_bytes (16)", "max_value_bytes");
  req.set_value("");
  EXPECT_TRUE(CheckPut(req, Small()).ok()) << "empty values are allowed";
  req.set_key("");
  ExpectRejected(CheckPut(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "key: must not be empty");
}

TEST(RequestChecksTest, Delete) {
  v1::DeleteRequest req;
  ExpectRejected(CheckDelete(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "key: must not be empty");
  req.set_key("abc");
  EXPECT_TRUE(CheckDelete(req, Small()).ok());
}

TEST(RequestChecksTest, BatchGet) {
  v1::BatchGetRequest req;
  ExpectRejected(CheckBatchGet(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "keys: must not be empty");
  req.add_keys("a");
  req.add_keys("");
  ExpectRejected(CheckBatchGet(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "keys[1]: must not be empty");
  req.set_keys(1, "b");
  req.add_keys("c");
  EXPECT_TRUE(CheckBatchGet(req, Small()).ok());
  req.add_keys("d");
  ExpectRejected(CheckBatchGet(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "keys: 4 keys is over limits.max_batch_entries (3)", "max_batch_entries");
  RequestLimits l = Small();
  l.max_batch_bytes = 3;
  req.mutable_keys()->RemoveLast();
  req.set_keys(0, "aa");
  ExpectRejected(CheckBatchGet(req, l), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "keys: 4 bytes is over limits.max_batch_bytes (3)", "max_batch_bytes");
}

v1::Mutation* Add(v1::BatchInsertRequest* req, v1::Mutation::Type type, const std::string& key,
                  const std::string& value = "") {
  v1::Mutation* m = req->add_mutations();
  m->set_type(type);
  m->set_key(key);
  m->set_value(value);
  return m;
}

TEST(RequestChecksTest, BatchInsert) {
  v1::BatchInsertRequest req;
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "mutations: must not be empty");
  Add(&req, v1::Mutation::PUT, "a", "1");
  Add(&req, v1::Mutation::TYPE_UNSPECIFIED, "b");
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "mutations[1].type: must be PUT or DELETE");
  req.mutable_mutations(1)->set_type(v1::Mutation::DELETE);
  req.mutable_mutations(1)->set_value("x");
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "mutations[1].value: must be empty for DELETE");
  req.mutable_mutations(1)->clear_value();
  EXPECT_TRUE(CheckBatchInsert(req, Small()).ok());

  Add(&req, v1::Mutation::PUT, "toolongkey");
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "mutations[2].key: 10 bytes is over limits.max_key_bytes (8)", "max_key_bytes");
  req.mutable_mutations(2)->set_key("c");
  req.mutable_mutations(2)->set_value(std::string(20, 'v'));
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "mutations[2].value: 20 bytes is over limits.max_value_bytes (16)",
                 "max_value_bytes");
  req.mutable_mutations(2)->set_value(std::string(16, 'v'));
  EXPECT_TRUE(CheckBatchInsert(req, Small()).ok());

  Add(&req, v1::Mutation::DELETE, "d");
  ExpectRejected(CheckBatchInsert(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "mutations: 4 mutations is over limits.max_batch_entries (3)",
                 "max_batch_entries");
  req.mutable_mutations()->RemoveLast();
  RequestLimits l = Small();
  l.max_batch_bytes = 19;
  ExpectRejected(CheckBatchInsert(req, l), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "mutations: 20 bytes of keys and values is over limits.max_batch_bytes (19)",
                 "max_batch_bytes");
}

TEST(RequestChecksTest, Scan) {
  v1::ScanRequest req;
  EXPECT_TRUE(CheckScan(req, Small()).ok()) << "the whole key space";
  EXPECT_EQ(EffectiveScanLimit(req, Small()), 100u);
  req.set_start("b");
  req.set_end("a");
  ExpectRejected(CheckScan(req, Small()), grpc::StatusCode::INVALID_ARGUMENT,
                 "start: must not be after end (the range is [start, end) in either direction)");
  req.set_end("b");
  EXPECT_TRUE(CheckScan(req, Small()).ok()) << "an empty range is fine";
  req.set_end("");
  req.set_start(std::string(8, 'k') + '\0');
  EXPECT_TRUE(CheckScan(req, Small()).ok()) << "resume point after a longest key";
  req.set_start(std::string(10, 'k'));
  ExpectRejected(CheckScan(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "start: 10 bytes is over limits.max_key_bytes + 1 (9)", "max_key_bytes");
  req.set_start("");
  req.set_end(std::string(10, 'k'));
  ExpectRejected(CheckScan(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "end: 10 bytes is over limits.max_key_bytes + 1 (9)", "max_key_bytes");
  req.set_end("");
  req.set_limit(101);
  ExpectRejected(CheckScan(req, Small()), grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "limit: 101 is over limits.max_scan_limit (100)", "max_scan_limit");
  req.set_limit(7);
  EXPECT_TRUE(CheckScan(req, Small()).ok());
  EXPECT_EQ(EffectiveScanLimit(req, Small()), 7u);
}

TEST(RequestChecksTest, BytewiseUnsignedOrderForRanges) {
  v1::ScanRequest req;
  req.set_start("\x7f");
  req.set_end("\x80");  // above 0x7f when compared as unsigned bytes
  EXPECT_TRUE(CheckScan(req, Small()).ok());
}

}  // namespace
}  // namespace grove::service
