#include "engine/replay_reader.h"

#include <algorithm>
#include <latch>
#include <string>

namespace grove {

ReplayReader::ReplayReader(Index* index, uint64_t cache_pages)
    : index_(index),
      window_keys_(std::clamp<size_t>(static_cast<size_t>(cache_pages / 8), 1, kWindowKeys)) {}

Status ReplayReader::Add(Lsn lsn, WriteBatch batch, const Apply& apply) {
  keys_ += batch.Count();
  records_.emplace_back(lsn, std::move(batch));
  if (keys_ < window_keys_) return Status::Ok();
  return Drain(apply);
}

Status ReplayReader::Drain(const Apply& apply) {
  if (records_.empty()) return Status::Ok();
  ReadAhead();
  for (const auto& [lsn, batch] : records_) GROVE_RETURN_IF_ERROR(apply(lsn, batch));
  records_.clear();
  keys_ = 0;
  return Status::Ok();
}

void ReplayReader::ReadAhead() {
  std::vector<Slice> keys;
  keys.reserve(keys_);
  for (const auto& record : records_) {
    record.second
        .ForEachOp([&](const WriteBatch::Op& op) {
          keys.push_back(op.key);
          return Status::Ok();
        })
        .IgnoreError();
  }
  if (keys.size() < 2) return;  // nothing to overlap
  if (!readers_) readers_ = std::make_unique<WorkerPool>(kReaders);
  const size_t tasks = std::min(kReaders, keys.size());
  std::latch done(static_cast<std::ptrdiff_t>(tasks));
  for (size_t t = 0; t < tasks; ++t) {
    readers_->Schedule([&, t] {
      std::string cell;
      for (size_t i = t; i < keys.size(); i += tasks)
        index_->Get(keys[i], &cell).status().IgnoreError();
      done.count_down();
    });
  }
  done.wait();
}

}  // namespace grove
