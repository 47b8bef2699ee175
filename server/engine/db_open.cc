// DbImpl: open, create and recovery.

#include <ctime>

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "engine/double_write.h"
#include "engine/manifest.h"
#include "engine/replay_reader.h"
#include "index/registry.h"
#include "util/clock.h"
#include "util/crc32c.h"

namespace grove {

inline constexpr const char* kDataFileName = "grove.data";

// Writes bulk-load pages straight to the data file (see DirectPageWriter).
class DbImpl::DirectWriter final : public DirectPageWriter {
 public:
  explicit DirectWriter(DbImpl* db) : db_(db) {}
  Status WriteRun(PageId first, size_t count, char* images, IoCause cause) override {
    const auto epoch = static_cast<uint32_t>(db_->durable_epoch_.load() + 1);
    for (size_t i = 0; i < count; ++i) page::Seal(images + i * kPageSize, epoch);
    db_->PreserveBeforeWrite(first, count);
    GROVE_RETURN_IF_ERROR(
        db_->data_file_->Write(first * kPageSize, Slice(images, count * kPageSize)));
    db_->epochs_.RecordDirect(first, count, epoch);
    db_->direct_runs_.fetch_add(1);
    // A reader of a freed page (a blob freed under a Get, which then re-reads its cell) may have
    // brought the page's old image back into the cache; it must not outlive the new one.
    for (size_t i = 0; i < count; ++i) db_->pool_->Discard(first + i);
    db_->pool_->RecordWrites(cause, count);
    return Status::Ok();
  }

 private:
  DbImpl* const db_;
};

StatusOr<std::unique_ptr<Db>> Db::Open(const Options& options) { return DbImpl::Open(options); }

StatusOr<std::unique_ptr<Db>> DbImpl::Open(const Options& options) {
  GROVE_ASSIGN_OR_RETURN(Options checked, CheckOptions(options));
  std::unique_ptr<DbImpl> db(new DbImpl(checked));
  Status s = db->OpenImpl();
  if (!s.ok()) {
    db->closed_ = true;  // nothing to checkpoint: the destructor only releases resources
    return s;
  }
  return std::unique_ptr<Db>(std::move(db));
}

DbImpl::DbImpl(const Options& options) : options_(options), logger_(options.logger) {}

DbImpl::~DbImpl() {
  if (!closed_.load()) {
    Status s = Close();
    if (!s.ok()) logger_->Log(LogLevel::kError, "close on destruction failed: " + s.ToString());
  }
  {
    MutexLock lock(&bg_mu_);
    bg_stop_ = true;
    bg_cv_.SignalAll();
  }
  if (bg_thread_.joinable()) bg_thread_.join();
  StopExpirySweeper();
  // The index first, while everything its background threads may still call is alive.
  maintenance_closed_ = true;
  if (index_) index_->Shutdown();
  index_.reset();
}

IndexContext DbImpl::MakeIndexContext() {
  IndexContext ctx;
  ctx.pool = pool_.get();
  ctx.allocator = &allocator_;
  ctx.io = io_.get();
  ctx.direct_writer = direct_.get();
  ctx.data_dir = options_.data_dir;
  ctx.options = &options_;
  ctx.logger = logger_.get();
  ctx.services = this;
  ctx.memory_bytes = variant_memory_bytes_;
  return ctx;
}

Status DbImpl::OpenImpl() {
  const uint64_t t0 = NowNanos();
  const std::string& dir = options_.data_dir;
  if (options_.io_backend) {
    io_ = options_.io_backend;
  } else {
    GROVE_ASSIGN_OR_RETURN(io_, NewIoBackend(options_.io, logger_.get()));
  }
  if (options_.read_only && !io_->FileExists(dir + "/" + kDataFileName)) {
    return Status::NotFound(fmt::format("no database in {} to open read-only", dir));
  }
  if (options_.create_if_missing && !options_.read_only) {
    GROVE_RETURN_IF_ERROR(io_->CreateDir(dir));
  } else if (!io_->FileExists(dir + "/" + kDataFileName)) {
    return Status::NotFound(fmt::format("no database in {} (and create_if_missing is false)", dir));
  }
  GROVE_ASSIGN_OR_RETURN(lock_, LockFile::Acquire(dir));

  IndexRegistry builtins;
  if (!options_.index.registry) {
    GROVE_ASSIGN_OR_RETURN(builtins, IndexRegistry::Builtins());
  }
  const IndexRegistry& registry = options_.index.registry ? *options_.index.registry : builtins;
  variant_ = options_.index.variant;
  GROVE_ASSIGN_OR_RETURN(const ParamMap params, registry.Resolve(variant_, options_.index.params));
  layout_ = registry.LayoutString(variant_, params);
  params_ = params;
  params_string_.clear();
  for (const auto& [k, v] : params)
    params_string_ += (params_string_.empty() ? "" : ";") + k + "=" + v;

  const FileOptions data_opts{
      .create = !options_.read_only, .direct = options_.direct_io, .read_only = options_.read_only};
  const std::string data_path = dir + "/" + kDataFileName;
  bool fresh = !io_->FileExists(data_path);
  if (!fresh) {
    GROVE_ASSIGN_OR_RETURN(data_file_, io_->OpenFile(data_path, data_opts));
    GROVE_ASSIGN_OR_RETURN(const uint64_t existing, data_file_->Size());
    if (existing == 0) {  // an empty file holds nothing: create the database again
      if (options_.read_only) {
        return Status::FailedPrecondition(dir + " holds an empty data file: nothing to read");
      }
      data_file_.reset();
      fresh = true;
    }
  }
  if (fresh) {
    GROVE_RETURN_IF_ERROR(CreateDataFile(data_opts));
    GROVE_ASSIGN_OR_RETURN(data_file_, io_->OpenFile(data_path, data_opts));
  }
  // Read-only, a missing double-write file is no file (a snapshot has none).
  if (!options_.read_only || io_->FileExists(dir + "/" + kDoubleWriteFileName)) {
    GROVE_ASSIGN_OR_RETURN(dw_file_, io_->OpenFile(dir + "/" + kDoubleWriteFileName, data_opts));
  }
  // The variant may keep part of cache_bytes for memory of its own (a record cache).
  const uint64_t pool_bytes = registry.BufferPoolBytes(variant_, params, options_.cache_bytes);
  variant_memory_bytes_ = options_.cache_bytes - pool_bytes;
  // A pool that may grow at run time remembers a sixteenth of the budget of evicted pages, so
  // that the variant can weigh more pages against more of its own memory.
  const uint64_t pool_max_bytes =
      registry.BufferPoolMaxBytes(variant_, params, options_.cache_bytes);
  const uint32_t ghost_pages =
      pool_max_bytes > pool_bytes
          ? static_cast<uint32_t>(std::max<uint64_t>(16, options_.cache_bytes / 16 / kPageSize))
          : 0;
  pool_ = std::make_unique<BufferPool>(
      BufferPoolOptions{.capacity_bytes = pool_bytes,
                        .max_capacity_bytes = pool_max_bytes,
                        .ghost_pages = ghost_pages,
                        .high_retention_fraction = options_.inner_cache_fraction},
      io_.get(), data_file_.get(), &epochs_);
  dirty_room_ = std::make_unique<DirtyRoom>(
      DirtyRoom::Pool{
          .capacity_pages = [pool = pool_.get()] { return pool->capacity_pages(); },
          .unevictable_pages =
              [pool = pool_.get()] { return pool->dirty_pages() + pool->flushing_pages(); }},
      WriteRoomShare(options_), [this] { return RunCheckpoint(CheckpointReason::kDirty); });
  direct_ = std::make_unique<DirectWriter>(this);
  values_ = std::make_unique<ValueStore>(pool_.get(), &allocator_, direct_.get());

  std::optional<Superblock> sb;
  {
    std::string problems;
    GROVE_ASSIGN_OR_RETURN(sb, ReadSuperblock(data_file_.get(), &problems));
    if (!sb) {
      return Status::DataLoss(
          fmt::format("{}/{}: no valid superblock ({})", dir, kDataFileName, problems));
    }
    if (sb->format != kDataFormatVersion) {
      return Status::FailedPrecondition(
          fmt::format("{} holds data format version {}; this build reads version {}", dir,
                      sb->format, kDataFormatVersion));
    }
    if (sb->variant != variant_ || sb->layout != layout_) {
      return Status::FailedPrecondition(fmt::format(
          "{} holds index variant '{}' with layout [{}], but variant '{}' with layout [{}] was "
          "asked for; open it with the variant on disk or choose another data directory",
          dir, sb->variant, sb->layout, variant_, layout_));
    }
    GROVE_RETURN_IF_ERROR(RepairFromDoubleWrite(&*sb));
  }

  if (sb->epoch == 0) {
    if (options_.read_only) {
      return Status::FailedPrecondition(dir + " holds no checkpoint yet: nothing to read");
    }
    created_unix_ = sb->created_unix;
    GROVE_RETURN_IF_ERROR(CreateFresh(registry, params));
  } else {
    GROVE_RETURN_IF_ERROR(LoadCheckpoint(*sb, registry, params));
  }
  if (options_.read_only) return OpenedReadOnly(t0);
  GROVE_RETURN_IF_ERROR(ReplayWal());
  GROVE_ASSIGN_OR_RETURN(
      wal_, wal::Wal::Open(io_.get(), dir, options_.wal, replay_next_lsn_.load(), logger_.get()));
  wal_bytes_at_checkpoint_ = 0;
  last_checkpoint_nanos_ = NowNanos();
  {
    // The open stands for the previous checkpoint: the first one paces over the time since.
    MutexLock lock(&checkpoint_mu_);
    last_checkpoint_start_nanos_ = last_checkpoint_nanos_.load();
  }
  recovery_seconds_ = static_cast<double>(NowNanos() - t0) * 1e-9;
  opened_ = true;
  bg_thread_ = std::thread([this] { BackgroundLoop(); });
  StartExpirySweeper();
  logger_->Log(LogLevel::kInfo,
               fmt::format("opened {}: variant {} [{}], io backend {}, checkpoint epoch {}, "
                           "replayed {} WAL records, {:.3f} s",
                           dir, variant_, params_string_, io_->Name(), durable_epoch_.load(),
                           recovery_records_, recovery_seconds_));
  return Status::Ok();
}

Status DbImpl::OpenedReadOnly(uint64_t t0) {
  // The newest checkpoint as it is: no log, no background work, nothing written.
  recovery_seconds_ = static_cast<double>(NowNanos() - t0) * 1e-9;
  opened_ = true;
  logger_->Log(LogLevel::kInfo,
               fmt::format("opened {} read-only: variant {} [{}], checkpoint epoch {}, {:.3f} s",
                           options_.data_dir, variant_, params_string_, durable_epoch_.load(),
                           recovery_seconds_));
  return Status::Ok();
}

Status DbImpl::CreateDataFile(const FileOptions& opts) {
  // The data file appears under its name only with a durable epoch-0 superblock in it: it is
  // written as grove.data.new, synced and renamed. A crash before the rename leaves no data file
  // (the next open starts over and overwrites the leftover); a torn epoch-0 superblock in
  // grove.data, which no open could get past, cannot happen.
  const std::string dir = options_.data_dir;
  const std::string tmp = dir + "/" + kDataFileName + ".new";
  created_unix_ = static_cast<uint64_t>(std::time(nullptr));
  Superblock sb0;
  sb0.epoch = 0;
  sb0.created_unix = created_unix_;
  sb0.variant = variant_;
  sb0.layout = layout_;
  {
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> f, io_->OpenFile(tmp, opts));
    GROVE_RETURN_IF_ERROR(f->Truncate(0));
    GROVE_RETURN_IF_ERROR(WriteSuperblock(f.get(), sb0));  // writes and syncs
  }
  GROVE_RETURN_IF_ERROR(io_->RenameFile(tmp, dir + "/" + kDataFileName));
  return io_->SyncDir(dir);
}

Status DbImpl::CreateFresh(const IndexRegistry& registry, const ParamMap& params) {
  // The data file holds the epoch-0 superblock (CreateDataFile) and, after a crash during the
  // first checkpoint, maybe some of its pages: drop those; slot 0 stays as it is.
  GROVE_RETURN_IF_ERROR(data_file_->Truncate(kPageSize));

  const VariantSpec* spec = registry.Find(variant_);
  GROVE_ASSIGN_OR_RETURN(index_, spec->create(MakeIndexContext(), params));
  replay_next_lsn_ = 1;
  redo_lsn_ = 1;
  logger_->Log(LogLevel::kInfo,
               fmt::format("created a new {} database in {}", variant_, options_.data_dir));
  return RunCheckpoint(CheckpointReason::kCreate);
}

Status DbImpl::RepairFromDoubleWrite(Superblock* sb) {
  if (dw_file_ == nullptr) return Status::Ok();  // read-only, and there is none
  GROVE_ASSIGN_OR_RETURN(auto batch, ReadDoubleWrite(dw_file_.get(), sb->epoch + 1));
  if (!batch) return Status::Ok();
  if (options_.read_only) {
    return Status::FailedPrecondition(fmt::format(
        "{}: checkpoint {} is half written (the double-write file completes it); open the "
        "database for writing once to finish it before opening it read-only",
        options_.data_dir, batch->epoch));
  }
  // The checkpoint after the durable one wrote its complete batch but may not have finished its
  // in-place writes or its superblock: finish it.
  GROVE_ASSIGN_OR_RETURN(Manifest m, Manifest::Decode(batch->manifest));
  if (m.epoch != batch->epoch) {
    return Status::DataLoss("double-write batch carries a manifest of another epoch");
  }
  const uint64_t manifest_size = batch->manifest.size();
  const uint32_t manifest_crc =
      crc32c::Mask(crc32c::Value(batch->manifest.data(), batch->manifest.size()));
  // A checkpoint writes its pages in place only after its manifest is durable, so a manifest that
  // already matches the batch needs no rewrite (and no disk space: this may run on a full disk).
  const bool manifest_durable =
      ReadManifestFile(io_.get(), options_.data_dir, batch->epoch, manifest_size, manifest_crc)
          .ok();
  if (!manifest_durable) {
    Status s = WriteManifestFile(io_.get(), options_.data_dir, batch->epoch, batch->manifest);
    if (s.IsResourceExhausted()) {
      // The checkpoint stopped before its manifest was durable (typically it ran out of space
      // there), so it never wrote a page in place: the data file still holds epoch sb->epoch
      // intact, and the WAL still holds everything from that checkpoint's redo point (segments
      // are only removed after a checkpoint commits). Recover from there instead of finishing
      // this checkpoint, which would need space the disk does not have.
      io_->DeleteFile(options_.data_dir + "/" + ManifestFileName(batch->epoch)).IgnoreError();
      logger_->Log(LogLevel::kWarn,
                   fmt::format("recovery: not completing checkpoint {} from the double-write "
                               "file, its manifest cannot be written ({}); it never reached its "
                               "in-place writes, so recovery starts from checkpoint {}",
                               batch->epoch, s.ToString(), sb->epoch));
      return Status::Ok();
    }
    GROVE_RETURN_IF_ERROR(s);
  }
  DoubleWriteImages pages(dw_file_.get(), *batch);
  GROVE_RETURN_IF_ERROR(WritePagesInPlace(io_.get(), data_file_.get(), pages));
  pool_->RecordWrites(IoCause::kRecovery, pages.size());
  Superblock next = *sb;
  next.epoch = batch->epoch;
  next.manifest_size = manifest_size;
  next.manifest_crc = manifest_crc;
  GROVE_RETURN_IF_ERROR(WriteSuperblock(data_file_.get(), next));
  logger_->Log(
      LogLevel::kWarn,
      fmt::format("recovery: completed checkpoint {} from the double-write file ({} pages)",
                  batch->epoch, pages.size()));
  *sb = next;
  return Status::Ok();
}

Status DbImpl::LoadCheckpoint(const Superblock& sb, const IndexRegistry& registry,
                              const ParamMap& params) {
  created_unix_ = sb.created_unix;
  GROVE_ASSIGN_OR_RETURN(
      const std::string data,
      ReadManifestFile(io_.get(), options_.data_dir, sb.epoch, sb.manifest_size, sb.manifest_crc));
  GROVE_ASSIGN_OR_RETURN(const Manifest m, Manifest::Decode(data));
  if (m.epoch != sb.epoch) return Status::DataLoss("manifest epoch differs from the superblock's");
  GROVE_RETURN_IF_ERROR(allocator_.Deserialize(m.allocator));
  Slice em(m.epoch_map);
  GROVE_RETURN_IF_ERROR(epochs_.Deserialize(&em));
  GROVE_RETURN_IF_ERROR(LoadEpochMap());
  values_->SetCounters(m.blob_values, m.blob_pages);
  durable_epoch_ = sb.epoch;
  redo_lsn_ = m.redo_lsn;
  may_hold_expiring_ = (m.flags & Manifest::kMayHoldExpiring) != 0;
  {
    MutexLock lock(&marks_mu_);
    marks_.clear();
    for (const Manifest::Mark& mark : m.marks) marks_[mark.name] = MarkValue{mark.value, mark.lsn};
  }
  // Blobs that only memory referenced when the checkpoint was taken: the replay below writes
  // them again.
  for (const std::string& cell : m.memory_only_cells) {
    if (!IsBlobCell(cell)) return Status::DataLoss("manifest lists a malformed memory-only cell");
    values_->Free(DecodeBlobCell(cell));
  }
  {
    MutexLock lock(&checkpoint_mu_);
    durable_index_metadata_ = m.index_metadata;
    durable_flags_ = m.flags;
  }
  const VariantSpec* spec = registry.Find(variant_);
  GROVE_ASSIGN_OR_RETURN(index_, spec->open(MakeIndexContext(), params, m.index_metadata));
  return Status::Ok();
}

Status DbImpl::LoadEpochMap() {
  const auto& ids = epochs_.map_page_ids();
  constexpr size_t kBatch = 256;
  AlignedBuffer buf(kBatch * kPageSize);
  auto queue = io_->AcquireQueue();
  for (size_t base = 0; base < ids.size(); base += kBatch) {
    const size_t n = std::min(kBatch, ids.size() - base);
    std::vector<IoOp> ops;
    ops.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      ops.push_back(IoOp::Read(data_file_.get(), ids[base + i] * kPageSize,
                               buf.data() + i * kPageSize, kPageSize));
    }
    for (IoOp& op : ops) queue->Push(&op);
    queue->Submit();
    queue->WaitAll();
    for (size_t i = 0; i < n; ++i) {
      GROVE_RETURN_IF_ERROR(ops[i].status);
      const char* img = buf.data() + i * kPageSize;
      if (ops[i].bytes != kPageSize) {
        return Status::DataLoss(
            fmt::format("epoch-map page {} lies beyond the data file", ids[base + i]));
      }
      GROVE_RETURN_IF_ERROR(page::Verify(img, ids[base + i]));
      GROVE_RETURN_IF_ERROR(epochs_.LoadMapPage(base + i, img));
    }
    pool_->RecordReads(IoCause::kRecovery, n);
  }
  return Status::Ok();
}

Status DbImpl::ReplayWal() {
  recovering_ = true;
  replay_next_lsn_ = redo_lsn_.load();
  ReplayReader reader(index_.get(), pool_->capacity_pages());
  const auto apply = [&](Lsn lsn, const WriteBatch& batch) -> Status {
    // As for live writes: checkpoint (redo point = this record) before the cache would fill
    // with pages that cannot be evicted; operation by operation, so that a batch that was
    // applied stepwise when it was written is replayed the same way.
    const uint64_t first = PagesNeeded(batch).first;
    Room room(this);
    GROVE_RETURN_IF_ERROR(dirty_room_->Reserve(first, Clock::time_point::max())
                              .WithContext(fmt::format("replaying LSN {}", lsn)));
    room.Add(first);
    GROVE_RETURN_IF_ERROR(ApplyBatch(lsn, batch, &room, /*stepwise=*/true, /*in_gate=*/false)
                              .WithContext(fmt::format("replaying LSN {}", lsn)));
    replay_next_lsn_ = lsn + 1;
    return Status::Ok();
  };
  auto result =
      wal::Wal::Replay(io_.get(), options_.data_dir, redo_lsn_.load(), options_.wal, logger_.get(),
                       [&](Lsn lsn, Slice payload) -> Status {
                         GROVE_ASSIGN_OR_RETURN(WriteBatch batch, WriteBatch::Decode(payload));
                         return reader.Add(lsn, std::move(batch), apply);
                       });
  Status rest = result.ok() ? reader.Drain(apply) : Status::Ok();
  recovering_ = false;
  if (!result.ok()) return result.status();
  GROVE_RETURN_IF_ERROR(rest);
  recovery_records_ = result->records;
  replay_next_lsn_ = std::max<Lsn>(replay_next_lsn_.load(), result->next_lsn);
  return Status::Ok();
}

}  // namespace grove
