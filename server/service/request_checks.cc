#include "service/request_checks.h"

#include <string>

namespace grove::service {
namespace {

CheckResult Ok() { return {}; }

CheckResult Malformed(const std::string& field, const std::string& what) {
  return {grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + what), {}};
}

CheckResult OverLimit(const std::string& field, uint64_t actual, const char* unit,
                      std::string_view limit, uint64_t allowed) {
  return {grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       field + ": " + std::to_string(actual) + unit + " is over limits." +
                           std::string(limit) + " (" + std::to_string(allowed) + ")"),
          limit};
}

CheckResult CheckKey(const std::string& field, const std::string& key, const RequestLimits& l) {
  if (key.empty()) return Malformed(field, "must not be empty");
  if (key.size() > l.max_key_bytes) {
    return OverLimit(field, key.size(), " bytes", "max_key_bytes", l.max_key_bytes);
  }
  return Ok();
}

CheckResult CheckValue(const std::string& field, const std::string& value, const RequestLimits& l) {
  if (value.size() > l.max_value_bytes) {
    return OverLimit(field, value.size(), " bytes", "max_value_bytes", l.max_value_bytes);
  }
  return Ok();
}

// Scan bounds may be one byte longer than a key, so that "last key + \x00" is a valid start.
CheckResult CheckBound(const std::string& field, const std::string& bound, const RequestLimits& l) {
  if (bound.size() > uint64_t{l.max_key_bytes} + 1) {
    return {grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                         field + ": " + std::to_string(bound.size()) +
                             " bytes is over limits.max_key_bytes + 1 (" +
                             std::to_string(uint64_t{l.max_key_bytes} + 1) + ")"),
            "max_key_bytes"};
  }
  return Ok();
}

CheckResult CheckPrecondition(const std::string& field, const v1::Precondition& p,
                              const RequestLimits& l) {
  switch (p.condition_case()) {
    case v1::Precondition::kAbsent:
      if (!p.absent()) return Malformed(field + ".absent", "must be true when set");
      return Ok();
    case v1::Precondition::kValueEquals:
      return CheckValue(field + ".value_equals", p.value_equals(), l);
    case v1::Precondition::kVersionEquals:
      return Ok();
    case v1::Precondition::CONDITION_NOT_SET:
      return Malformed(field, "must set one of absent, value_equals, version_equals");
  }
  return Ok();
}

CheckResult CheckTtl(const std::string& field, uint64_t ttl_ms) {
  if (ttl_ms > kMaxTtlMillis) {
    return Malformed(field, std::to_string(ttl_ms) + " ms is more than 100 years (" +
                                std::to_string(kMaxTtlMillis) + ")");
  }
  return Ok();
}

std::string Indexed(const char* field, int i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

}  // namespace

CheckResult CheckGet(const v1::GetRequest& req, const RequestLimits& limits) {
  return CheckKey("key", req.key(), limits);
}

CheckResult CheckPut(const v1::PutRequest& req, const RequestLimits& limits) {
  CheckResult r = CheckKey("key", req.key(), limits);
  if (!r.ok()) return r;
  if (req.has_precondition()) {
    r = CheckPrecondition("precondition", req.precondition(), limits);
    if (!r.ok()) return r;
  }
  r = CheckTtl("ttl_ms", req.ttl_ms());
  if (!r.ok()) return r;
  return CheckValue("value", req.value(), limits);
}

CheckResult CheckDelete(const v1::DeleteRequest& req, const RequestLimits& limits) {
  CheckResult r = CheckKey("key", req.key(), limits);
  if (!r.ok() || !req.has_precondition()) return r;
  return CheckPrecondition("precondition", req.precondition(), limits);
}

CheckResult CheckBatchGet(const v1::BatchGetRequest& req, const RequestLimits& limits) {
  const int n = req.keys_size();
  if (n == 0) return Malformed("keys", "must not be empty");
  if (static_cast<uint64_t>(n) > limits.max_batch_entries) {
    return OverLimit("keys", n, " keys", "max_batch_entries", limits.max_batch_entries);
  }
  uint64_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    CheckResult r = CheckKey(Indexed("keys", i), req.keys(i), limits);
    if (!r.ok()) return r;
    bytes += req.keys(i).size();
  }
  if (bytes > limits.max_batch_bytes) {
    return OverLimit("keys", bytes, " bytes", "max_batch_bytes", limits.max_batch_bytes);
  }
  return Ok();
}

CheckResult CheckBatchInsert(const v1::BatchInsertRequest& req, const RequestLimits& limits) {
  const int n = req.mutations_size();
  if (n == 0) return Malformed("mutations", "must not be empty");
  if (static_cast<uint64_t>(n) > limits.max_batch_entries) {
    return OverLimit("mutations", n, " mutations", "max_batch_entries", limits.max_batch_entries);
  }
  uint64_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    const v1::Mutation& m = req.mutations(i);
    const std::string field = Indexed("mutations", i);
    if (m.type() != v1::Mutation::PUT && m.type() != v1::Mutation::DELETE) {
      return Malformed(field + ".type", "must be PUT or DELETE");
    }
    CheckResult r = CheckKey(field + ".key", m.key(), limits);
    if (!r.ok()) return r;
    if (m.type() == v1::Mutation::DELETE && !m.value().empty()) {
      return Malformed(field + ".value", "must be empty for DELETE");
    }
    if (m.type() == v1::Mutation::DELETE && m.ttl_ms() != 0) {
      return Malformed(field + ".ttl_ms", "must be 0 for DELETE");
    }
    r = CheckTtl(field + ".ttl_ms", m.ttl_ms());
    if (!r.ok()) return r;
    r = CheckValue(field + ".value", m.value(), limits);
    if (!r.ok()) return r;
    if (m.has_precondition()) {
      r = CheckPrecondition(field + ".precondition", m.precondition(), limits);
      if (!r.ok()) return r;
    }
    bytes += m.key().size() + m.value().size();
  }
  if (bytes > limits.max_batch_bytes) {
    return OverLimit("mutations", bytes, " bytes of keys and values", "max_batch_bytes",
                     limits.max_batch_bytes);
  }
  return Ok();
}

CheckResult CheckScan(const v1::ScanRequest& req, const RequestLimits& limits) {
  CheckResult r = CheckBound("start", req.start(), limits);
  if (!r.ok()) return r;
  r = CheckBound("end", req.end(), limits);
  if (!r.ok()) return r;
  if (!req.end().empty() && req.start() > req.end()) {
    return Malformed("start",
                     "must not be after end (the range is [start, end) in either "
                     "direction)");
  }
  if (req.limit() > limits.max_scan_limit) {
    return OverLimit("limit", req.limit(), "", "max_scan_limit", limits.max_scan_limit);
  }
  return Ok();
}

CheckResult CheckDeleteRange(const v1::DeleteRangeRequest& req, const RequestLimits& limits) {
  CheckResult r = CheckBound("start", req.start(), limits);
  if (!r.ok()) return r;
  r = CheckBound("end", req.end(), limits);
  if (!r.ok()) return r;
  if (!req.end().empty() && req.start() > req.end()) {
    return Malformed("end", "must not sort before start (the range is [start, end))");
  }
  return Ok();
}

uint32_t EffectiveScanLimit(const v1::ScanRequest& req, const RequestLimits& limits) {
  return req.limit() == 0 ? limits.max_scan_limit : req.limit();
}

}  // namespace grove::service
