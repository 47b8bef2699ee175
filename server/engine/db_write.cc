// DbImpl: the write path.

#include <optional>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "util/clock.h"

namespace grove {

Status DbImpl::CheckKey(Slice key, const char* field) const {
  if (key.empty() || key.size() > options_.max_key_bytes) {
    return Status::InvalidArgument(fmt::format("{}: {} bytes; keys must be 1..{} bytes", field,
                                               key.size(), options_.max_key_bytes));
  }
  return Status::Ok();
}

Status DbImpl::CheckWritable() const {
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (options_.read_only) {
    return Status::FailedPrecondition(options_.data_dir + " is open read-only: no writes");
  }
  if (failed_.load()) {
    MutexLock lock(const_cast<Mutex*>(&state_mu_));
    return bg_error_;
  }
  return Status::Ok();
}

Status DbImpl::CheckMaintainable() const {
  if (maintenance_closed_.load()) return Status::Unavailable("database is closed");
  // A variant's background work stands down as it does at close.
  if (options_.read_only) return Status::Unavailable(options_.data_dir + " is open read-only");
  if (failed_.load()) {
    MutexLock lock(const_cast<Mutex*>(&state_mu_));
    return bg_error_;
  }
  return Status::Ok();
}

void DbImpl::SetBackgroundError(const Status& s) {
  MutexLock lock(&state_mu_);
  if (bg_error_.ok()) {
    bg_error_ = s;
    failed_ = true;
    logger_->Log(LogLevel::kError, "database is fail-stopped: " + s.ToString());
  }
}

Status DbImpl::Put(Slice key, Slice value) {
  WriteBatch batch;
  batch.Put(key, value);
  return Write(batch);
}

Status DbImpl::Delete(Slice key) {
  WriteBatch batch;
  batch.Delete(key);
  return Write(batch);
}

uint64_t DbImpl::OpPages(WriteBatch::OpType type, Slice value) const {
  uint64_t value_pages = 0;
  if (WriteBatch::IsPut(type) && value.size() > options_.inline_value_bytes) {
    value_pages = (value.size() + kBlobChunk - 1) / kBlobChunk;
  }
  return WorstCaseWritePages(1, value_pages, index_->PagesDirtiedPerOp());
}

DbImpl::BatchPages DbImpl::PagesNeeded(const WriteBatch& batch) const {
  // WorstCaseWritePages (options.h): generous on purpose; it only decides when to checkpoint
  // first, and whether a batch is applied at once or operation by operation.
  BatchPages p;
  uint64_t value_pages = 0;
  batch
      .ForEach([&](WriteBatch::OpType type, Slice, Slice value) {
        const uint64_t op = OpPages(type, value);
        if (p.first == 0) p.first = op;
        p.largest = std::max(p.largest, op);
        value_pages += op - WorstCaseWritePages(1, 0, index_->PagesDirtiedPerOp());
        return Status::Ok();
      })
      .IgnoreError();
  p.total = WorstCaseWritePages(batch.Count(), value_pages, index_->PagesDirtiedPerOp());
  return p;
}

Status DbImpl::YieldForRoom(Lsn lsn, uint64_t pages, bool in_gate) {
  {
    MutexLock lock(&partial_mu_);
    partial_lsns_.insert(lsn);
  }
  if (in_gate) gate_.Exit();
  // Half applied: the rest must go in, however long the checkpoints take.
  Status s = dirty_room_->Reserve(pages, Clock::time_point::max());
  if (in_gate) gate_.Enter();
  MutexLock lock(&partial_mu_);
  partial_lsns_.erase(partial_lsns_.find(lsn));
  return s;
}

Lsn DbImpl::OldestPartialLsn() {
  MutexLock lock(&partial_mu_);
  return partial_lsns_.empty() ? kMaxLsn : *partial_lsns_.begin();
}

Status DbImpl::Room::Extend(uint64_t pages) {
  if (!db_->dirty_room_->TryReserve(pages, /*extend=*/true)) {
    return Status::ResourceExhausted(
        fmt::format("no room for {} more dirty pages until a checkpoint runs", pages));
  }
  pages_ += pages;
  return Status::Ok();
}

void DbImpl::Room::ReleaseAll() {
  if (pages_ > 0) db_->dirty_room_->Release(std::exchange(pages_, 0));
}

Status DbImpl::Write(const WriteBatch& batch) { return Write(batch, WriteOptions(), nullptr); }

Status DbImpl::CheckConditions(const WriteOptions& options, WriteResult* result) {
  std::string value;
  for (size_t i = 0; i < options.conditions.size(); ++i) {
    const WriteCondition& c = options.conditions[i];
    CellMeta meta;
    GROVE_ASSIGN_OR_RETURN(const bool found, ReadCurrent(c.key, &value, &meta));
    std::string why;
    switch (c.kind) {
      case WriteCondition::Kind::kAbsent:
        if (found) why = fmt::format("the key is present (version {})", meta.version);
        break;
      case WriteCondition::Kind::kValueEquals:
        if (!found) {
          why = "the key is absent";
        } else if (value != c.value) {
          why = fmt::format("the key holds another value (version {})", meta.version);
        }
        break;
      case WriteCondition::Kind::kVersionEquals:
        if (!found) {
          why = "the key is absent";
        } else if (meta.version != c.version) {
          why = fmt::format("the key is at version {}, not {}", meta.version, c.version);
        }
        break;
    }
    if (why.empty()) continue;
    if (result != nullptr) {
      result->failed_condition = static_cast<int>(i);
      result->current_found = found;
      result->current_version = found ? meta.version : 0;
      result->current_value = found ? std::move(value) : std::string();
    }
    return Status::FailedPrecondition(fmt::format("conditions[{}]: {}", i, why));
  }
  return Status::Ok();
}

Status DbImpl::CheckWrite(const WriteBatch& batch, const WriteOptions& options, CheckedWrite* out) {
  GROVE_RETURN_IF_ERROR(CheckWritable());
  for (size_t i = 0; i < options.conditions.size(); ++i) {
    GROVE_RETURN_IF_ERROR(
        CheckKey(options.conditions[i].key, fmt::format("conditions[{}].key", i).c_str()));
  }
  out->empty = batch.Empty() && options.conditions.empty();
  if (out->empty) return Status::Ok();
  uint32_t mark = 0;
  GROVE_RETURN_IF_ERROR(batch.ForEachMark([&](Slice name, Slice value) {
    const uint32_t i = mark++;
    if (name.empty() || name.size() > WriteBatch::kMaxMarkNameBytes) {
      return Status::InvalidArgument(
          fmt::format("marks[{}].name: {} bytes; mark names must be 1..{} bytes", i, name.size(),
                      WriteBatch::kMaxMarkNameBytes));
    }
    if (value.size() > WriteBatch::kMaxMarkValueBytes) {
      return Status::InvalidArgument(fmt::format("marks[{}].value: {} bytes exceeds {}", i,
                                                 value.size(), WriteBatch::kMaxMarkValueBytes));
    }
    return Status::Ok();
  }));
  if (batch.Count() > options_.max_batch_entries) {
    return Status::ResourceExhausted(
        fmt::format("batch of {} operations exceeds "
                    "limits.max_batch_entries ({})",
                    batch.Count(), options_.max_batch_entries));
  }
  if (batch.PayloadBytes() > options_.max_batch_bytes) {
    return Status::ResourceExhausted(
        fmt::format("batch of {} bytes exceeds limits.max_batch_bytes "
                    "({})",
                    batch.PayloadBytes(), options_.max_batch_bytes));
  }
  std::vector<Slice>& keys = out->keys;
  keys.clear();
  keys.reserve(batch.Count() + options.conditions.size());
  uint32_t n = 0;
  const bool single = batch.Count() == 1;
  GROVE_RETURN_IF_ERROR(batch.ForEachOp([&](const WriteBatch::Op& op) {
    // Field names match the API: "key"/"value" for one operation, "operations[i].key" otherwise.
    auto field = [&](const char* what) {
      return single ? std::string(what) : fmt::format("operations[{}].{}", n, what);
    };
    if (op.type == WriteBatch::OpType::kDeleteRange) {
      return Status::InvalidArgument(
          fmt::format("{}: a range delete goes through DeleteRange, not a batch", field("type")));
    }
    if (op.key.empty() || op.key.size() > options_.max_key_bytes) {
      return CheckKey(op.key, field("key").c_str());
    }
    const bool put = WriteBatch::IsPut(op.type);
    if (op.type == WriteBatch::OpType::kPutVersioned && op.version == 0) {
      return Status::InvalidArgument(
          fmt::format("{}: a versioned put needs a nonzero version", field("version")));
    }
    if (put && op.value.size() > options_.max_value_bytes) {
      return Status::InvalidArgument(fmt::format("{}: {} bytes exceeds limits.max_value_bytes ({})",
                                                 field("value"), op.value.size(),
                                                 options_.max_value_bytes));
    }
    (put ? out->puts : out->deletes)++;
    keys.push_back(op.key);
    ++n;
    return Status::Ok();
  }));
  // Fault in the pages the write will touch before it is logged: an unreadable page fails the
  // write here, with nothing logged.
  for (Slice key : keys) GROVE_RETURN_IF_ERROR(index_->Prepare(key));
  // Room for the whole batch when its worst case fits a quarter of the write room; otherwise for
  // its first operation, and the rest operation by operation as it is applied. An operation that
  // could never fit is refused here, before anything is logged.
  out->need = PagesNeeded(batch);
  if (out->need.largest > dirty_room_->Cap()) {
    return Status::ResourceExhausted(fmt::format(
        "an operation of this batch may change up to {} pages, more than the cache can hold "
        "between checkpoints ({} pages of cache_bytes); send smaller values or raise cache_bytes",
        out->need.largest, dirty_room_->Cap()));
  }
  // A batch that would need a large share of the room at once is applied stepwise too, so that
  // concurrent writers do not queue behind each other's big reservations.
  out->stepwise = out->need.total > dirty_room_->Cap() / 4;
  // Condition keys are locked too: nobody may change them between the check and the apply.
  for (const WriteCondition& c : options.conditions) keys.push_back(c.key);
  return Status::Ok();
}

void DbImpl::CountWrite(const CheckedWrite& w) {
  writes_.fetch_add(1, std::memory_order_relaxed);
  puts_.fetch_add(w.puts, std::memory_order_relaxed);
  deletes_.fetch_add(w.deletes, std::memory_order_relaxed);
}

Status DbImpl::Write(const WriteBatch& batch, const WriteOptions& options, WriteResult* result) {
  CheckedWrite w;
  GROVE_RETURN_IF_ERROR(CheckWrite(batch, options, &w));
  if (w.empty) return Status::Ok();
  return CommitWrite(batch, options, w, result);
}

Status DbImpl::CommitWrite(const WriteBatch& batch, const WriteOptions& options,
                           const CheckedWrite& w, WriteResult* result) {
  const std::vector<uint32_t> stripes = KeyLocks::StripesOf(w.keys);
  key_locks_.Lock(stripes);
  Status s = CheckConditions(options, result);
  if (s.ok() && !batch.Empty()) {
    Lsn lsn = 0;
    s = LogAndApply(batch, w.stepwise, w.stepwise ? w.need.first : w.need.total,
                    RoomDeadline(options), &lsn, options.sync);
    if (s.ok() && result != nullptr) result->version = lsn;
  }
  key_locks_.Unlock(stripes);
  GROVE_RETURN_IF_ERROR(s);
  CountWrite(w);
  MaybeScheduleCheckpoint();
  return Status::Ok();
}

DbImpl::Clock::time_point DbImpl::RoomDeadline(const WriteOptions& options) {
  return Clock::now() +
         std::min<std::chrono::milliseconds>(options.room_wait, std::chrono::hours(1));
}

Status DbImpl::LogAndApply(const WriteBatch& batch, bool stepwise, uint64_t first_pages,
                           Clock::time_point room_deadline, Lsn* lsn_out, bool sync) {
  Room room(this);
  GROVE_RETURN_IF_ERROR(dirty_room_->Reserve(first_pages, room_deadline));
  room.Add(first_pages);
  GatePass pass(&gate_);
  GROVE_RETURN_IF_ERROR(CheckWritable());
  StatusOr<Lsn> lsn = wal_->Append(batch.Encoded(), sync);
  if (!lsn.ok()) {
    // The log fail-stops on EIO and fsync failures; mirror that here. A full disk or an invalid
    // record leaves the log (and the Db) usable.
    if (lsn.status().code() == StatusCode::kInternal) SetBackgroundError(lsn.status());
    return lsn.status();
  }
  *lsn_out = *lsn;
  Status s = ApplyBatch(*lsn, batch, &room, stepwise, /*in_gate=*/true);
  if (!s.ok()) {
    SetBackgroundError(
        s.WithContext(fmt::format("write LSN {} was logged but could not be applied", *lsn)));
  }
  return s;
}

Status DbImpl::ApplyBatch(Lsn lsn, const WriteBatch& batch, Room* room, bool stepwise,
                          bool in_gate) {
  // Only the last operation of each key reaches the index: a reader must never see a value that
  // a later operation of the same batch replaces. (Replay applies the same record the same way.)
  // Range deletes come alone in their record (DeleteRange).
  std::unordered_map<Slice, uint32_t> last;
  if (batch.Count() > 1) {
    last.reserve(batch.Count());
    uint32_t i = 0;
    Status s = batch.ForEach([&](WriteBatch::OpType, Slice key, Slice) {
      last[key] = i++;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    if (last.size() == batch.Count()) last.clear();  // no key twice: nothing to skip
  }
  uint32_t index = 0;
  GROVE_RETURN_IF_ERROR(batch.ForEachOp([&](const WriteBatch::Op& op) {
    const uint32_t i = index++;
    if (op.type == WriteBatch::OpType::kDeleteRange) {
      return ApplyDeleteRange(lsn, op.key, op.end, room, /*first=*/i == 0, in_gate);
    }
    if (!last.empty() && last[op.key] != i) return Status::Ok();  // replaced later in the batch
    // The room reserved up front is for operation 0; any other reserves its own.
    if (stepwise && i > 0) {
      // The previous operation's pages now count as dirty pages.
      room->ReleaseAll();
      const uint64_t pages = OpPages(op.type, op.value);
      if (!dirty_room_->TryReserve(pages, /*extend=*/false)) {
        GROVE_RETURN_IF_ERROR(YieldForRoom(lsn, pages, in_gate));
      }
      room->Add(pages);
    }
    const WriteContext w{lsn, room};
    switch (op.type) {
      case WriteBatch::OpType::kPut:
      case WriteBatch::OpType::kPutExpiring:
      case WriteBatch::OpType::kPutVersioned: {
        if (op.expires_ms == 0) return ApplyPut(w, op.key, op.value, op.version, 0);
        may_hold_expiring_ = true;
        Status s = ApplyPut(w, op.key, op.value, op.version, op.expires_ms);
        // Counted once the cell is in the index: a sweep that started before this saw the
        // count change and keeps the flag (db_expiry.cc).
        MutexLock lock(&expiry_flag_mu_);
        may_hold_expiring_ = true;
        ++expiring_puts_;
        return s;
      }
      default:
        return ApplyDelete(w, op.key);
    }
  }));
  ApplyMarks(lsn, batch);
  return Status::Ok();
}

void DbImpl::ApplyMarks(Lsn lsn, const WriteBatch& batch) {
  if (batch.MarkCount() == 0) return;
  std::vector<std::pair<Slice, Slice>> marks;
  marks.reserve(batch.MarkCount());
  batch
      .ForEachMark([&](Slice name, Slice value) {
        marks.emplace_back(name, value);
        return Status::Ok();
      })
      .IgnoreError();
  MutexLock lock(&marks_mu_);
  for (const auto& [name, value] : marks) {
    auto it = marks_.find(name);
    if (it == marks_.end()) {
      marks_.emplace(std::string(name), MarkValue{std::string(value), lsn});
    } else if (it->second.lsn < lsn) {
      it->second = MarkValue{std::string(value), lsn};
    }
  }
}

StatusOr<bool> DbImpl::GetMark(Slice name, std::string* value) {
  if (closed_.load()) return Status::Unavailable("database is closed");
  MutexLock lock(&marks_mu_);
  auto it = marks_.find(name);
  if (it == marks_.end() || it->second.value.empty()) return false;
  *value = it->second.value;
  return true;
}

Status DbImpl::SyncWal() {
  GROVE_RETURN_IF_ERROR(CheckWritable());
  Status s = wal_->Sync();
  if (s.code() == StatusCode::kInternal) SetBackgroundError(s);
  return s;
}

Status DbImpl::ApplyPut(const WriteContext& w, Slice key, Slice value, uint64_t version,
                        uint64_t expires_ms) {
  // The write's LSN is the key's version unless the put names one: replay gives the same record
  // the same one either way.
  const CellMeta meta{version != 0 ? version : w.lsn, expires_ms};
  std::string cell;
  if (value.size() > options_.inline_value_bytes) {
    GROVE_ASSIGN_OR_RETURN(cell, values_->Write(value, meta));
  } else {
    cell = InlineCell(value, meta);
  }
  std::optional<std::string> old;
  Status s = index_->Put(w, key, cell, &old);
  if (!s.ok()) {
    if (IsBlobCell(cell)) values_->Free(DecodeBlobCell(cell));
    return s;
  }
  FreeCell(old);
  return Status::Ok();
}

Status DbImpl::ApplyDelete(const WriteContext& w, Slice key) {
  std::optional<std::string> old;
  GROVE_RETURN_IF_ERROR(index_->Delete(w, key, &old));
  FreeCell(old);
  return Status::Ok();
}

void DbImpl::FreeCell(const std::optional<std::string>& old_cell) {
  if (old_cell) ReleaseCell(*old_cell);
}

bool DbImpl::HoldsBlob(Slice cell) const { return IsBlobCell(cell); }

uint64_t DbImpl::LogBytesFrom(Lsn lsn) const {
  // Before opened_ the log is not open yet (recovery is replaying it).
  return opened_.load() && wal_ ? wal_->RetainedBytes(lsn) : 0;
}

void DbImpl::ReleaseCell(Slice cell) {
  if (IsBlobCell(cell)) values_->Free(DecodeBlobCell(cell));
}

Status DbImpl::RunMaintenance(uint64_t pages, const std::function<Status(WriteRoom*)>& unit) {
  GROVE_RETURN_IF_ERROR(CheckMaintainable());
  // Recovery replays the log single-handed; a unit starts once the Db is open.
  if (!opened_.load()) return Status::Unavailable("maintenance waits until the database is open");
  Room room(this);
  // A unit that finds no room gives up soon; the variant tries again later.
  GROVE_RETURN_IF_ERROR(dirty_room_->Reserve(pages, Clock::now() + std::chrono::seconds(2)));
  room.Add(pages);
  Status s;
  {
    GatePass pass(&gate_);
    s = CheckMaintainable();
    if (s.ok()) s = unit(&room);
  }
  room.ReleaseAll();
  MaybeScheduleCheckpoint();
  return s;
}

Status DbImpl::BulkLoad(const BulkLoadSource& source) {
  GROVE_RETURN_IF_ERROR(CheckWritable());
  // No checkpoint may capture a half-built index, and no write may change what the load builds
  // on: both stay out until the load's own checkpoint is durable.
  std::optional<CheckpointWaiter> waiter(std::in_place, this);  // a paced checkpoint hurries
  MutexLock checkpoint_lock(&checkpoint_mu_);
  waiter.reset();
  gate_.Pause();
  Status s = BulkLoadLocked(source);
  gate_.Resume();
  return s;
}

Status DbImpl::BulkLoadLocked(const BulkLoadSource& source) {
  if (index_->GetStats().entries != 0) {
    return Status::FailedPrecondition("bulk load needs an empty database");
  }
  // The load writes straight into pages the allocator has free. Pages freed since the last
  // checkpoint (an emptied database) are still part of the durable state, and a crash before the
  // load's checkpoint would find them overwritten: checkpoint first, so that free means free on
  // disk too.
  GROVE_RETURN_IF_ERROR(CheckpointLocked(CheckpointReason::kManual, /*gate_paused=*/true));
  // Every loaded key gets the LSN of an empty log record as its version, so that any later write
  // of a key gives it a higher one. (Replaying the empty record changes nothing.)
  GROVE_ASSIGN_OR_RETURN(const Lsn version, wal_->Append(WriteBatch().Encoded()));
  const CellMeta meta{version, 0};
  uint64_t n = 0;
  BulkSource cells = [&](std::string* key, std::string* cell) -> StatusOr<bool> {
    std::string value;
    GROVE_ASSIGN_OR_RETURN(const bool more, source(key, &value));
    if (!more) return false;
    if (key->empty() || key->size() > options_.max_key_bytes) {
      return CheckKey(*key, fmt::format("bulk load entry {}: key", n).c_str());
    }
    if (value.size() > options_.max_value_bytes) {
      return Status::InvalidArgument(
          fmt::format("bulk load entry {}: value of {} bytes exceeds "
                      "limits.max_value_bytes ({})",
                      n, value.size(), options_.max_value_bytes));
    }
    if (value.size() > options_.inline_value_bytes) {
      GROVE_ASSIGN_OR_RETURN(*cell, values_->WriteDirect(value, meta));
    } else {
      *cell = InlineCell(value, meta);
    }
    ++n;
    return true;
  };
  Status s = index_->BulkLoad(cells);
  if (!s.ok()) {
    // Pages may have been allocated and written for a tree that will never be installed. The
    // durable state does not know them; reopening returns to it.
    // A variant that refused before taking any entry (kFailedPrecondition: not empty) wrote
    // nothing either.
    if (n > 0 ||
        (s.code() != StatusCode::kInvalidArgument && s.code() != StatusCode::kFailedPrecondition)) {
      SetBackgroundError(s.WithContext("bulk load failed part way"));
    }
    return s;
  }
  puts_.fetch_add(n, std::memory_order_relaxed);
  return CheckpointLocked(CheckpointReason::kManual, /*gate_paused=*/true);
}

}  // namespace grove
