// DbImpl: DeleteRange, one log record for a whole key range.
//
// The record names the range [start, stop), where stop is the first key the call leaves (or the
// caller's end). It is logged and applied with every key stripe held, so no other write sits
// between its append and its apply, and WAL replay, which applies records in LSN order, finds
// exactly the keys the live call found in [start, stop). Applying it twice (a checkpoint taken
// while it yielded for room, then replay) removes nothing more the second time.

#include <algorithm>

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "util/clock.h"

namespace grove {

Status DbImpl::CollectRange(Slice start, Slice end, uint64_t max, std::vector<std::string>* keys,
                            std::vector<bool>* visible) {
  keys->clear();
  if (visible != nullptr) visible->clear();
  if (max == 0) return Status::Ok();
  CursorOptions c;
  c.lower = std::string(start);
  c.has_upper = !end.empty();
  c.upper = std::string(end);
  c.expected_entries = std::min<uint64_t>(max, uint64_t{options_.max_batch_entries} + 1);
  c.readahead_pages = options_.scan_readahead_pages;
  GROVE_ASSIGN_OR_RETURN(auto cursor, index_->NewCursor(c));
  const uint64_t now = NowUnixMillis();
  for (; cursor->Valid() && keys->size() < max; cursor->Next()) {
    keys->emplace_back(cursor->key());
    if (visible != nullptr) {
      CellView view;
      visible->push_back(ParseCell(cursor->cell(), &view) && !view.meta.Expired(now));
    }
  }
  return cursor->status();
}

Status DbImpl::DeleteRange(Slice start, Slice end, uint64_t limit, DeleteRangeResult* result) {
  *result = DeleteRangeResult();
  GROVE_RETURN_IF_ERROR(CheckWritable());
  // Bounds may be one byte longer than a key ("prefix" + "\x00", as for scans); empty start: from
  // the first key, empty end: to the last.
  for (const auto& [bound, field] : {std::pair{start, "start"}, std::pair{end, "end"}}) {
    if (bound.size() > options_.max_key_bytes + 1ull) {
      return Status::InvalidArgument(fmt::format("{}: {} bytes; range bounds are at most {} bytes",
                                                 field, bound.size(), options_.max_key_bytes + 1));
    }
  }
  if (!end.empty()) {
    if (end < start) return Status::InvalidArgument("end: sorts before start");
    if (end == start) return Status::Ok();  // an empty range
  }
  const uint64_t cap = options_.max_batch_entries;
  const bool capped = limit == 0 || limit > cap;
  const uint64_t n = capped ? cap : limit;
  {
    // Fault the range in before every writer is held off: under the locks, collecting it again
    // and preparing its keys then finds the pages cached.
    std::vector<std::string> warm;
    GROVE_RETURN_IF_ERROR(CollectRange(start, end, n + 1, &warm, nullptr));
    for (const std::string& key : warm) GROVE_RETURN_IF_ERROR(index_->Prepare(key));
  }
  key_locks_.LockAll();
  Status s =
      DeleteRangeLocked(start, end, n, capped ? "limits.max_batch_entries" : "limit", result);
  key_locks_.UnlockAll();
  GROVE_RETURN_IF_ERROR(s);
  if (result->version != 0) {
    writes_.fetch_add(1, std::memory_order_relaxed);
    deletes_.fetch_add(result->deleted, std::memory_order_relaxed);
    MaybeScheduleCheckpoint();
  }
  return Status::Ok();
}

Status DbImpl::DeleteRangeLocked(Slice start, Slice end, uint64_t limit, const char* limit_name,
                                 DeleteRangeResult* result) {
  std::vector<std::string> keys;
  std::vector<bool> live;
  // One key past the limit says whether the range goes on, and where the next call starts.
  GROVE_RETURN_IF_ERROR(CollectRange(start, end, limit + 1, &keys, &live));
  if (keys.empty()) return Status::Ok();
  std::string stop = std::string(end);
  if (keys.size() > limit) {
    stop = keys.back();
    keys.pop_back();
    result->more = true;
    result->resume_key = stop;
    result->limited_by = limit_name;
  }
  const uint64_t visible = std::count(live.begin(), live.begin() + keys.size(), true);
  // As for any write: fault in what it will touch, so that an unreadable page fails it before it
  // is logged.
  for (const std::string& key : keys) GROVE_RETURN_IF_ERROR(index_->Prepare(key));

  WriteBatch batch;
  batch.DeleteRange(start, stop);
  Lsn lsn = 0;
  GROVE_RETURN_IF_ERROR(LogAndApply(batch, /*stepwise=*/true,
                                    OpPages(WriteBatch::OpType::kDelete, Slice()),
                                    Clock::now() + WriteOptions().room_wait, &lsn));
  result->deleted = visible;
  result->version = lsn;
  return Status::Ok();
}

Status DbImpl::ApplyDeleteRange(Lsn lsn, Slice start, Slice end, Room* room, bool first,
                                bool in_gate) {
  std::vector<std::string> keys;
  GROVE_RETURN_IF_ERROR(CollectRange(start, end, UINT64_MAX, &keys, nullptr));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0 || !first) {
      room->ReleaseAll();
      const uint64_t pages = OpPages(WriteBatch::OpType::kDelete, Slice());
      if (!dirty_room_->TryReserve(pages, /*extend=*/false)) {
        GROVE_RETURN_IF_ERROR(YieldForRoom(lsn, pages, in_gate));
      }
      room->Add(pages);
    }
    GROVE_RETURN_IF_ERROR(ApplyDelete(WriteContext{lsn, room}, keys[i]));
  }
  return Status::Ok();
}

}  // namespace grove
