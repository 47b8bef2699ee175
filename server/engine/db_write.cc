// DbImpl: the write path.

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

uint64_t DbImpl::PagesNeeded(const WriteBatch& batch) const {
  // The worst case of WorstCaseWritePages (options.h). Generous on purpose: it only decides when
  // to checkpoint first, and which batches can never fit.
  uint64_t value_pages = 0;
  batch
      .ForEach([&](WriteBatch::OpType type, Slice, Slice value) {
        if (type == WriteBatch::OpType::kPut && value.size() > options_.inline_value_bytes) {
          value_pages += (value.size() + kBlobChunk - 1) / kBlobChunk;
        }
        return Status::Ok();
      })
      .IgnoreError();
  return WorstCaseWritePages(batch.Count(), value_pages, index_->PagesDirtiedPerOp());
}

Status DbImpl::ReserveDirtyRoom(uint64_t pages) {
  // Pages are no-steal: dirty frames, and frames the running checkpoint still has to write in
  // place, cannot be evicted, and a write cannot be interrupted by a checkpoint once it is logged.
  // So a write first reserves room for every page it may dirty; when the reservation would push
  // such frames past three quarters of the cache, the writer runs a checkpoint first. A quarter of
  // the cache always stays evictable for reads.
  const double cap = WriteRoomShare(options_) * static_cast<double>(pool_->capacity_pages());
  if (static_cast<double>(pages) > cap) {
    return Status::ResourceExhausted(fmt::format(
        "a batch of this size may change up to {} pages, more than the cache can hold between "
        "checkpoints ({} pages of cache_bytes); send smaller batches or raise cache_bytes",
        pages, static_cast<uint64_t>(cap)));
  }
  auto fits = [&] {
    const uint64_t held = pool_->dirty_pages() + pool_->flushing_pages() + reserved_pages_.load();
    return static_cast<double>(held + pages) <= cap;
  };
  // Writes in flight give their room back when they finish; a checkpoint is the way to turn dirty
  // pages into clean ones. A batch within the cap therefore fits once it is alone after a
  // checkpoint, unless checkpoints keep failing.
  Status s;
  int checkpoints = 0;
  MutexLock lock(&room_mu_);
  while (true) {
    if (fits()) {
      reserved_pages_.fetch_add(pages);
      return Status::Ok();
    }
    if (reserved_pages_.load() > 0) {
      room_cv_.WaitFor(std::chrono::milliseconds(50));
      continue;
    }
    if (checkpoints++ == 3) break;
    room_mu_.Unlock();
    s = RunCheckpoint(CheckpointReason::kDirty);
    room_mu_.Lock();
    if (!s.ok()) break;
  }
  if (!s.ok() && s.IsResourceExhausted()) return s;
  return Status::ResourceExhausted(fmt::format(
      "writes are stalled: no room for {} more dirty pages until a checkpoint completes{}", pages,
      s.ok() ? "" : " (" + s.ToString() + ")"));
}

void DbImpl::ReleaseDirtyRoom(uint64_t pages) {
  reserved_pages_.fetch_sub(pages);
  MutexLock lock(&room_mu_);
  room_cv_.SignalAll();
}

Status DbImpl::Write(const WriteBatch& batch) {
  GROVE_RETURN_IF_ERROR(CheckWritable());
  if (batch.Count() == 0) return Status::Ok();
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
  std::vector<Slice> keys;
  keys.reserve(batch.Count());
  uint32_t n = 0, puts = 0, deletes = 0;
  const bool single = batch.Count() == 1;
  GROVE_RETURN_IF_ERROR(batch.ForEach([&](WriteBatch::OpType type, Slice key, Slice value) {
    // Field names match the API: "key"/"value" for one operation, "operations[i].key" otherwise.
    auto field = [&](const char* what) {
      return single ? std::string(what) : fmt::format("operations[{}].{}", n, what);
    };
    if (key.empty() || key.size() > options_.max_key_bytes) {
      return CheckKey(key, field("key").c_str());
    }
    if (type == WriteBatch::OpType::kPut && value.size() > options_.max_value_bytes) {
      return Status::InvalidArgument(fmt::format("{}: {} bytes exceeds limits.max_value_bytes ({})",
                                                 field("value"), value.size(),
                                                 options_.max_value_bytes));
    }
    (type == WriteBatch::OpType::kPut ? puts : deletes)++;
    keys.push_back(key);
    ++n;
    return Status::Ok();
  }));
  // Fault in the pages the write will touch before it is logged: an unreadable page fails the
  // write here, with nothing logged.
  for (Slice key : keys) GROVE_RETURN_IF_ERROR(index_->Prepare(key));
  const uint64_t pages = PagesNeeded(batch);
  GROVE_RETURN_IF_ERROR(ReserveDirtyRoom(pages));

  {
    GatePass pass(&gate_);
    const std::vector<uint32_t> stripes = KeyLocks::StripesOf(keys);
    key_locks_.Lock(stripes);
    Status s = CheckWritable();
    if (s.ok()) {
      StatusOr<Lsn> lsn = wal_->Append(batch.Encoded());
      if (!lsn.ok()) {
        s = lsn.status();
        // The log fail-stops on EIO and fsync failures; mirror that here. A full disk or an
        // invalid record leaves the log (and the Db) usable.
        if (s.code() == StatusCode::kInternal) SetBackgroundError(s);
      } else {
        s = ApplyBatch(*lsn, batch);
        if (!s.ok()) {
          SetBackgroundError(
              s.WithContext(fmt::format("write LSN {} was logged but could not be applied", *lsn)));
        }
      }
    }
    key_locks_.Unlock(stripes);
    ReleaseDirtyRoom(pages);
    GROVE_RETURN_IF_ERROR(s);
  }
  writes_.fetch_add(1, std::memory_order_relaxed);
  puts_.fetch_add(puts, std::memory_order_relaxed);
  deletes_.fetch_add(deletes, std::memory_order_relaxed);
  MaybeScheduleCheckpoint();
  return Status::Ok();
}

Status DbImpl::ApplyBatch(Lsn lsn, const WriteBatch& batch) {
  return batch.ForEach([&](WriteBatch::OpType type, Slice key, Slice value) {
    return type == WriteBatch::OpType::kPut ? ApplyPut(lsn, key, value) : ApplyDelete(lsn, key);
  });
}

Status DbImpl::ApplyPut(Lsn lsn, Slice key, Slice value) {
  std::string cell;
  if (value.size() > options_.inline_value_bytes) {
    GROVE_ASSIGN_OR_RETURN(cell, values_->Write(value));
  } else {
    cell = InlineCell(value);
  }
  std::optional<std::string> old;
  Status s = index_->Put(lsn, key, cell, &old);
  if (!s.ok()) {
    if (IsBlobCell(cell)) values_->Free(DecodeBlobCell(cell));
    return s;
  }
  ReleaseCell(old);
  return Status::Ok();
}

Status DbImpl::ApplyDelete(Lsn lsn, Slice key) {
  std::optional<std::string> old;
  GROVE_RETURN_IF_ERROR(index_->Delete(lsn, key, &old));
  ReleaseCell(old);
  return Status::Ok();
}

void DbImpl::ReleaseCell(const std::optional<std::string>& old_cell) {
  if (old_cell && IsBlobCell(*old_cell)) values_->Free(DecodeBlobCell(*old_cell));
}

Status DbImpl::BulkLoad(const BulkLoadSource& source) {
  GROVE_RETURN_IF_ERROR(CheckWritable());
  // No checkpoint may capture a half-built index, and no write may change what the load builds
  // on: both stay out until the load's own checkpoint is durable.
  MutexLock checkpoint_lock(&checkpoint_mu_);
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
      GROVE_ASSIGN_OR_RETURN(*cell, values_->WriteDirect(value));
    } else {
      *cell = InlineCell(value);
    }
    ++n;
    return true;
  };
  Status s = index_->BulkLoad(cells);
  if (!s.ok()) {
    // Pages may have been allocated and written for a tree that will never be installed. The
    // durable state does not know them; reopening returns to it.
    if (s.code() != StatusCode::kInvalidArgument || n > 0) {
      SetBackgroundError(s.WithContext("bulk load failed part way"));
    }
    return s;
  }
  puts_.fetch_add(n, std::memory_order_relaxed);
  return CheckpointLocked(CheckpointReason::kManual, /*gate_paused=*/true);
}

}  // namespace grove
