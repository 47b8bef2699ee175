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
  payload_bytes_ = 0;
}

Status WriteBatch::ForEach(const std::function<Status(OpType, Slice, Slice)>& fn) const {
  Slice in(rep_);
  in.remove_prefix(4);
  for (uint32_t i = 0; i < count_; ++i) {
    const auto type = static_cast<OpType>(in[0]);
    in.remove_prefix(1);
    Slice key, value;
    GetLengthPrefixed(&in, &key);
    if (type == OpType::kPut) GetLengthPrefixed(&in, &value);
    GROVE_RETURN_IF_ERROR(fn(type, key, value));
  }
  return Status::Ok();
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
    } else {
      return Status::DataLoss(
          fmt::format("write batch: unknown op type {}", static_cast<int>(type)));
    }
  }
  if (!in.empty()) return Status::DataLoss("write batch: trailing bytes");
  return b;
}

}  // namespace grove
