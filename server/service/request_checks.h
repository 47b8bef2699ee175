#pragma once

// Checks of every request against the configured limits, run before any work (no engine call, no
// allocation proportional to the request beyond what gRPC already decoded).
//
//   INVALID_ARGUMENT    malformed: an empty key, start after end, an unknown mutation type.
//   RESOURCE_EXHAUSTED  over a configured limit; the message names it ("limits.max_key_bytes").
//
// Messages name the offending field with its index: "mutations[3].key: 200 bytes is over
// limits.max_key_bytes (128)".

#include <cstdint>
#include <string_view>

#include <grpcpp/support/status.h>

#include "grove/v1/kv.pb.h"

namespace grove::service {

struct RequestLimits {
  uint32_t max_key_bytes = 128;
  uint32_t max_value_bytes = 64u << 10;
  uint32_t max_batch_entries = 10000;
  uint64_t max_batch_bytes = 4ull << 20;
  uint32_t max_scan_limit = 100000;
};

// The outcome of a check: OK, or the status to return and, when a configured limit refused the
// request, the limit's field name (for grove_limit_rejections_total).
struct CheckResult {
  grpc::Status status;
  std::string_view limit;  // e.g. "max_value_bytes"; empty for malformed requests

  bool ok() const { return status.ok(); }
};

CheckResult CheckGet(const v1::GetRequest& req, const RequestLimits& limits);
CheckResult CheckBatchGet(const v1::BatchGetRequest& req, const RequestLimits& limits);
CheckResult CheckPut(const v1::PutRequest& req, const RequestLimits& limits);
CheckResult CheckDelete(const v1::DeleteRequest& req, const RequestLimits& limits);
CheckResult CheckBatchInsert(const v1::BatchInsertRequest& req, const RequestLimits& limits);
CheckResult CheckScan(const v1::ScanRequest& req, const RequestLimits& limits);
CheckResult CheckDeleteRange(const v1::DeleteRangeRequest& req, const RequestLimits& limits);

// The longest time to live a put may ask for: 100 years in milliseconds.
inline constexpr uint64_t kMaxTtlMillis = 100ull * 365 * 24 * 3600 * 1000;

// The number of entries a Scan returns at most: its limit, or max_scan_limit for limit 0.
uint32_t EffectiveScanLimit(const v1::ScanRequest& req, const RequestLimits& limits);

}  // namespace grove::service
