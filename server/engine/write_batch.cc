#include "grove/write_batch.h"

#include <fmt/format.h>

#include "util/coding.h"

namespace grove {

WriteBatch::WriteBatch() { PutFixed32(&rep_, 0); }

void WriteBatch::Put(Slice key, Slice value) {
  rep_.push_back(static_cast<char>(OpType::kPut));
  PutLengthPrefixed(&rep_, key);
  PutLengthPrefixed(&rep_, value);
  EncodeFixed32(rep_.data(), ++count_);
  payload_bytes_ += key.size() + value.size();
}

void WriteBatch::PutExpiring(Slice key, Slice value, uint64_t expires_ms) {
  if (expires_ms == 0) return Put(key, value);  // no expiry (the log format has no 0 expiry)
  rep_.push_back(static_cast<char>(OpType::kPutExpiring));
  PutLengthPrefixed(&rep_, key);
  PutLengthPrefixed(&rep_, value);
  PutFixed64(&rep_, expires_ms);
  EncodeFixed32(rep_.data(), ++count_);
  payload_bytes_ += key.size() + value.size();
}

void WriteBatch::DeleteRange(Slice start, Slice end) {
  rep_.push_back(static_cast<char>(OpType::kDeleteRange));
  PutLengthPrefixed(&rep_, start);
  PutLengthPrefixed(&rep_, end);
  EncodeFixed32(rep_.data(), ++count_);
  ++range_deletes_;
  payload_bytes_ += start.size() + end.size();
}

void WriteBatch::Delete(Slice key) {
  rep_.push_back(static_cast<char>(OpType::kDelete));
  PutLengthPrefixed(&rep_, key);
  EncodeFixed32(rep_.data(), ++count_);
  payload_bytes_ += key.size();
}

void WriteBatch::Clear() {
  rep_.clear();
  PutFixed32(&rep_, 0);
  count_ = 0;
  range_deletes_ = 0;
  payload_bytes_ = 0;
}

Status WriteBatch::ForEachOp(const std::function<Status(const Op&)>& fn) const {
  // The encoding was built by this class or validated by Decode.
  Slice in(rep_);
  in.remove_prefix(4);
  for (uint32_t i = 0; i < count_; ++i) {
    Op op;
    op.type = static_cast<OpType>(in[0]);
    in.remove_prefix(1);
    GetLengthPrefixed(&in, &op.key);
    switch (op.type) {
      case OpType::kPut:
        GetLengthPrefixed(&in, &op.value);
        break;
      case OpType::kPutExpiring:
        GetLengthPrefixed(&in, &op.value);
        GetFixed64(&in, &op.expires_ms);
        break;
      case OpType::kDeleteRange:
        GetLengthPrefixed(&in, &op.end);
        break;
      case OpType::kDelete:
        break;
    }
    GROVE_RETURN_IF_ERROR(fn(op));
  }
  return Status::Ok();
}

Status WriteBatch::ForEach(const std::function<Status(OpType, Slice, Slice)>& fn) const {
  return ForEachOp([&fn](const Op& op) {
    return fn(op.type, op.key, op.type == OpType::kDeleteRange ? op.end : op.value);
  });
}

StatusOr<WriteBatch> WriteBatch::Decode(Slice encoded) {
  WriteBatch b;
  Slice in = encoded;
  uint32_t count;
  if (!GetFixed32(&in, &count)) return Status::DataLoss("write batch: truncated header");
  for (uint32_t i = 0; i < count; ++i) {
    if (in.empty())
      return Status::DataLoss(fmt::format("write batch: op {} of {} missing", i, count));
    const auto type = static_cast<OpType>(in[0]);
    in.remove_prefix(1);
    Slice key, value;
    if (!GetLengthPrefixed(&in, &key)) return Status::DataLoss("write batch: bad key length");
    if (type == OpType::kPut) {
      if (!GetLengthPrefixed(&in, &value)) return Status::DataLoss("write batch: bad value length");
      b.Put(key, value);
    } else if (type == OpType::kDelete) {
      b.Delete(key);
    } else if (type == OpType::kPutExpiring) {
      uint64_t expires_ms = 0;
      if (!GetLengthPrefixed(&in, &value)) return Status::DataLoss("write batch: bad value length");
      if (!GetFixed64(&in, &expires_ms) || expires_ms == 0) {
        return Status::DataLoss("write batch: bad expiry");
      }
      b.PutExpiring(key, value, expires_ms);
    } else if (type == OpType::kDeleteRange) {
      Slice end;
      if (!GetLengthPrefixed(&in, &end)) return Status::DataLoss("write batch: bad range end");
      b.DeleteRange(key, end);
    } else {
      return Status::DataLoss(
          fmt::format("write batch: unknown op type {}", static_cast<int>(type)));
    }
  }
  if (!in.empty()) return Status::DataLoss("write batch: trailing bytes");
  return b;
}

}  // namespace grove
