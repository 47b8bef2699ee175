// libFuzzer target: request validation (docs/reliability.md, "Fuzzing"). The input picks a request
// type and a set of limits, then the bytes gRPC would hand the service: they are decoded as that
// message (as gRPC does) and, when they decode, run through the service's checks.
//
// Checks, beyond "no crash, no UB": a check answers OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED;
// RESOURCE_EXHAUSTED names the configured limit; an accepted request really is within the limits
// (keys non-empty and short enough, values, batch sizes and scan bounds within theirs, start <=
// end); and the effective scan limit is within max_scan_limit.

#include <cstddef>
#include <cstdint>
#include <string>

#include "service/request_checks.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

using grove::service::CheckResult;
using grove::service::RequestLimits;

void CheckOutcome(const CheckResult& r) {
  const auto code = r.status.error_code();
  Check(code == grpc::StatusCode::OK || code == grpc::StatusCode::INVALID_ARGUMENT ||
        code == grpc::StatusCode::RESOURCE_EXHAUSTED);
  Check(code != grpc::StatusCode::RESOURCE_EXHAUSTED || !r.limit.empty());
  Check(code == grpc::StatusCode::OK || !r.status.error_message().empty());
}

bool KeyOk(const std::string& k, const RequestLimits& l) {
  return !k.empty() && k.size() <= l.max_key_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  RequestLimits l;
  l.max_key_bytes = 1 + data[1] % 64;
  l.max_value_bytes = data[2] * 16u;
  l.max_batch_entries = 1 + data[3] % 32;
  l.max_batch_bytes = 1 + data[4] * 64u;
  l.max_scan_limit = 1 + data[4] * 8u;
  const char* bytes = reinterpret_cast<const char*>(data + 5);
  const int n = static_cast<int>(size - 5);
  namespace v1 = grove::v1;
  switch (data[0] % 6) {
    case 0: {
      v1::GetRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckGet(req, l);
      CheckOutcome(r);
      Check(!r.ok() || KeyOk(req.key(), l));
      break;
    }
    case 1: {
      v1::PutRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckPut(req, l);
      CheckOutcome(r);
      Check(!r.ok() || (KeyOk(req.key(), l) && req.value().size() <= l.max_value_bytes));
      break;
    }
    case 2: {
      v1::DeleteRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckDelete(req, l);
      CheckOutcome(r);
      Check(!r.ok() || KeyOk(req.key(), l));
      break;
    }
    case 3: {
      v1::BatchGetRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckBatchGet(req, l);
      CheckOutcome(r);
      if (r.ok()) {
        Check(req.keys_size() > 0 && static_cast<uint32_t>(req.keys_size()) <= l.max_batch_entries);
        uint64_t total = 0;
        for (const std::string& k : req.keys()) {
          Check(KeyOk(k, l));
          total += k.size();
        }
        Check(total <= l.max_batch_bytes);
      }
      break;
    }
    case 4: {
      v1::BatchInsertRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckBatchInsert(req, l);
      CheckOutcome(r);
      if (r.ok()) {
        Check(req.mutations_size() > 0 &&
              static_cast<uint32_t>(req.mutations_size()) <= l.max_batch_entries);
        uint64_t total = 0;
        for (const v1::Mutation& m : req.mutations()) {
          Check(m.type() == v1::Mutation::PUT || m.type() == v1::Mutation::DELETE);
          Check(KeyOk(m.key(), l) && m.value().size() <= l.max_value_bytes);
          Check(m.type() == v1::Mutation::PUT || m.value().empty());
          total += m.key().size() + m.value().size();
        }
        Check(total <= l.max_batch_bytes);
      }
      break;
    }
    default: {
      v1::ScanRequest req;
      if (!req.ParseFromArray(bytes, n)) return 0;
      const CheckResult r = grove::service::CheckScan(req, l);
      CheckOutcome(r);
      if (r.ok()) {
        Check(req.start().size() <= l.max_key_bytes + 1u &&
              req.end().size() <= l.max_key_bytes + 1u);
        Check(req.end().empty() || req.start() <= req.end());
        const uint32_t eff = grove::service::EffectiveScanLimit(req, l);
        Check(eff >= 1 && eff <= l.max_scan_limit);
      }
    }
  }
  return 0;
}
