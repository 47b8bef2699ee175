#include "grove/write_batch.h"

#include <fmt/format.h>

#include "util/coding.h"

namespace grove {

WriteBatch::WriteBatch() { PutFixed32(&rep_, 0); }

void WriteBatch::Put(Slice key, Slice value) {
  rep_.push_back(static_cast<char>(OpType::kPut));
  PutLengthPrefixed(&rep_, key);
  PutLengthPrefixed(&rep_, value);
  EncodeFixed32(rep_.data(), ++count_ + marks_);
  payload_bytes_ += key.size() + value.size();
}

void WriteBatch::PutExpiring(Slice key, Slice value, uint64_t expires_ms) {
  if (expires_ms == 0) return Put(key, value);  // no expiry (the log format has no 0 expiry)
  rep_.push_back(static_cast<char>(OpType::kPutExpiring));
  PutLengthPrefixed(&rep_, key);
  PutLengthPrefixed(&rep_, value);
  PutFixed64(&rep_, expires_ms);
  EncodeFixed32(rep_.data(), ++count_ + marks_);
  payload_bytes_ += key.size() + value.size();
}

void WriteBatch::PutVersioned(Slice key, Slice value, uint64_t version, uint64_t expires_ms) {
  rep_.push_back(static_cast<char>(OpType::kPutVersioned));
  PutLengthPrefixed(&rep_, key);
  PutLengthPrefixed(&rep_, value);
  PutFixed64(&rep_, version);
  PutFixed64(&rep_, expires_ms);
  EncodeFixed32(rep_.data(), ++count_ + marks_);
  payload_bytes_ += key.size() + value.size();
}

void WriteBatch::DeleteRange(Slice start, Slice end) {
  rep_.push_back(static_cast<char>(OpType::kDeleteRange));
  PutLengthPrefixed(&rep_, start);
  PutLengthPrefixed(&rep_, end);
  EncodeFixed32(rep_.data(), ++count_ + marks_);
  ++range_deletes_;
  payload_bytes_ += start.size() + end.size();
}

void WriteBatch::Delete(Slice key) {
  rep_.push_back(static_cast<char>(OpType::kDelete));
  PutLengthPrefixed(&rep_, key);
  EncodeFixed32(rep_.data(), ++count_ + marks_);
  payload_bytes_ += key.size();
}

void WriteBatch::SetMark(Slice name, Slice value) {
  rep_.push_back(static_cast<char>(OpType::kMark));
  PutLengthPrefixed(&rep_, name);
  PutLengthPrefixed(&rep_, value);
  EncodeFixed32(rep_.data(), count_ + ++marks_);
}

void WriteBatch::Clear() {
  rep_.clear();
  PutFixed32(&rep_, 0);
  count_ = 0;
  marks_ = 0;
  range_deletes_ = 0;
  payload_bytes_ = 0;
}

namespace {

// Calls fn for every encoded operation, marks included. The encoding was built by WriteBatch or
// validated by Decode.
template <typename Fn>
Status ForEachEncoded(Slice rep, uint32_t total, const Fn& fn) {
  Slice in = rep;
  in.remove_prefix(4);
  for (uint32_t i = 0; i < total; ++i) {
    WriteBatch::Op op;
    op.type = static_cast<WriteBatch::OpType>(in[0]);
    in.remove_prefix(1);
    GetLengthPrefixed(&in, &op.key);
    switch (op.type) {
      case WriteBatch::OpType::kPut:
      case WriteBatch::OpType::kMark:
        GetLengthPrefixed(&in, &op.value);
        break;
      case WriteBatch::OpType::kPutExpiring:
        GetLengthPrefixed(&in, &op.value);
        GetFixed64(&in, &op.expires_ms);
        break;
      case WriteBatch::OpType::kPutVersioned:
        GetLengthPrefixed(&in, &op.value);
        GetFixed64(&in, &op.version);
        GetFixed64(&in, &op.expires_ms);
        break;
      case WriteBatch::OpType::kDeleteRange:
        GetLengthPrefixed(&in, &op.end);
        break;
      case WriteBatch::OpType::kDelete:
        break;
    }
    GROVE_RETURN_IF_ERROR(fn(op));
  }
  return Status::Ok();
}

}  // namespace

Status WriteBatch::ForEachOp(const std::function<Status(const Op&)>& fn) const {
  if (marks_ == 0) return ForEachEncoded(rep_, count_, fn);
  return ForEachEncoded(rep_, count_ + marks_, [&fn](const Op& op) {
    return op.type == OpType::kMark ? Status::Ok() : fn(op);
  });
}

Status WriteBatch::ForEachMark(const std::function<Status(Slice, Slice)>& fn) const {
  if (marks_ == 0) return Status::Ok();
  return ForEachEncoded(rep_, count_ + marks_, [&fn](const Op& op) {
    return op.type == OpType::kMark ? fn(op.key, op.value) : Status::Ok();
  });
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
    } else if (type == OpType::kPutVersioned) {
      uint64_t version = 0, expires_ms = 0;
      if (!GetLengthPrefixed(&in, &value)) return Status::DataLoss("write batch: bad value length");
      if (!GetFixed64(&in, &version) || version == 0) {
        return Status::DataLoss("write batch: bad version");
      }
      if (!GetFixed64(&in, &expires_ms)) return Status::DataLoss("write batch: bad expiry");
      b.PutVersioned(key, value, version, expires_ms);
    } else if (type == OpType::kDeleteRange) {
      Slice end;
      if (!GetLengthPrefixed(&in, &end)) return Status::DataLoss("write batch: bad range end");
      b.DeleteRange(key, end);
    } else if (type == OpType::kMark) {
      if (!GetLengthPrefixed(&in, &value)) return Status::DataLoss("write batch: bad mark value");
      b.SetMark(key, value);
    } else {
      return Status::DataLoss(
          fmt::format("write batch: unknown op type {}", static_cast<int>(type)));
    }
  }
  if (!in.empty()) return Status::DataLoss("write batch: trailing bytes");
  return b;
}

}  // namespace grove
