// embedded:<variant>: the Grove engine in-process, through the public API (grove/db.h) only.

#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <optional>

#include "grove/db.h"

#include "bench/parse.h"
#include "bench/system_info.h"
#include "bench/target.h"

namespace grove::bench {
namespace {

// IoCause names as the metrics export them. grove/stats.h declares IoCauseName() but the engine
// does not define it, so the names are spelled here.
constexpr const char* kCauseNames[] = {"demand",   "prefetch",  "scan",      "checkpoint",
                                       "recovery", "bulk_load", "compaction"};
static_assert(std::size(kCauseNames) == kNumIoCauses, "name the new IoCause");

class EmbeddedSession final : public Session {
 public:
  explicit EmbeddedSession(Db* db) : db_(db) {}

  Status Read(Slice key, std::string* value, bool* found) override {
    GROVE_ASSIGN_OR_RETURN(*found, db_->Get(key, value));
    return Status::Ok();
  }

  Status Write(Slice key, Slice value) override { return db_->Put(key, value); }

  Status Scan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    ScanOptions options;
    options.lower = std::string(start);
    if (!end.empty()) {
      options.upper = std::string(end);
      options.has_upper = true;
    }
    if (limit != UINT32_MAX) options.expected_entries = limit;
    GROVE_ASSIGN_OR_RETURN(auto it, db_->NewIterator(options));
    return Visit(it.get(), limit, entries);
  }

  Status WriteBatch(const std::vector<std::pair<std::string, std::string>>& entries) override {
    grove::WriteBatch batch;
    for (const auto& [k, v] : entries) batch.Put(k, v);
    return db_->Write(batch);
  }

  Status Delete(Slice key) override { return db_->Delete(key); }

  Status BatchRead(const std::vector<std::string>& keys, uint64_t* found) override {
    std::vector<Slice> slices(keys.begin(), keys.end());
    std::vector<std::optional<std::string>> values;
    GROVE_RETURN_IF_ERROR(db_->BatchGet(slices, &values));
    *found = 0;
    for (const auto& v : values) *found += v.has_value() ? 1 : 0;
    return Status::Ok();
  }

  Status WriteMutations(const std::vector<Mutation>& mutations) override {
    grove::WriteBatch batch;
    for (const Mutation& m : mutations) {
      if (m.is_delete) {
        batch.Delete(m.key);
      } else {
        batch.Put(m.key, m.value);
      }
    }
    return db_->Write(batch);
  }

  Status DeleteRange(Slice start, Slice end, uint64_t limit, uint64_t* deleted) override {
    DeleteRangeResult result;
    GROVE_RETURN_IF_ERROR(db_->DeleteRange(start, end, limit, &result));
    *deleted = result.deleted;
    return Status::Ok();
  }

  Status ReverseScan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    ScanOptions options;
    options.lower = std::string(start);
    if (!end.empty()) {
      options.upper = std::string(end);
      options.has_upper = true;
    }
    options.reverse = true;
    if (limit != UINT32_MAX) options.expected_entries = limit;
    GROVE_ASSIGN_OR_RETURN(auto it, db_->NewIterator(options));
    return Visit(it.get(), limit, entries);
  }

 private:
  // Reads up to `limit` entries of `it`, touching every value so that no target can skip
  // reading it. No Next() after the last entry wanted: it could read a batch nobody asked for.
  static Status Visit(Iterator* it, uint32_t limit, uint64_t* entries) {
    uint64_t n = 0;
    uint64_t bytes = 0;
    while (n < limit && it->Valid()) {
      bytes += it->value().size();
      if (++n < limit) it->Next();
    }
    *entries = n;
    return it->status();
  }

  Db* const db_;
};

class EmbeddedTarget final : public Target {
 public:
  EmbeddedTarget(TargetUri uri, Options options)
      : uri_(std::move(uri)), options_(std::move(options)) {}

  Status Open() {
    GROVE_ASSIGN_OR_RETURN(db_, Db::Open(options_));
    return Status::Ok();
  }

  std::string Uri() const override {
    std::string s = "embedded:" + uri_.body;
    char sep = '?';
    for (const auto& [k, v] : uri_.params) {
      s += sep + k + "=" + v;
      sep = '&';
    }
    return s;
  }

  std::map<std::string, std::string> Config() const override {
    std::map<std::string, std::string> c;
    c["variant"] = options_.index.variant;
    for (const auto& [k, v] : options_.index.params) c["param." + k] = v;
    c["cache_bytes"] = std::to_string(options_.cache_bytes);
    c["inner_cache_fraction"] = std::to_string(options_.inner_cache_fraction);
    c["scan_readahead_pages"] = std::to_string(options_.scan_readahead_pages);
    c["direct_io"] = options_.direct_io ? "true" : "false";
    c["wal_sync"] = options_.wal.sync == SyncMode::kAlways  ? "always"
                    : options_.wal.sync == SyncMode::kBatch ? "batch"
                                                            : "none";
    c["io_queue_depth"] = std::to_string(options_.io.queue_depth);
    if (db_) c["io_backend"] = db_->GetStats().io_backend;
    return c;
  }

  Status Reset() override {
    if (db_) {
      GROVE_RETURN_IF_ERROR(db_->Close());
      db_.reset();
    }
    GROVE_RETURN_IF_ERROR(DestroyDb(options_.data_dir));
    return Open();
  }

  StatusOr<std::unique_ptr<Session>> NewSession() override {
    return std::unique_ptr<Session>(std::make_unique<EmbeddedSession>(db_.get()));
  }

  Status BulkLoad(const BulkSource& source) override {
    return db_->BulkLoad(
        [&](std::string* k, std::string* v) -> StatusOr<bool> { return source(k, v); });
  }

  Status Settle() override { return db_->Checkpoint(); }

  StatusOr<TargetStats> Stats() override {
    const DbStats s = db_->GetStats();
    TargetStats t;
    auto& c = t.counters;
    double reads = 0;
    double writes = 0;
    for (int i = 0; i < kNumIoCauses; ++i) {
      const std::string cause = kCauseNames[i];
      c["page_reads." + cause] = static_cast<double>(s.cache.page_reads[i]);
      c["page_writes." + cause] = static_cast<double>(s.cache.page_writes[i]);
      reads += static_cast<double>(s.cache.page_reads[i]);
      writes += static_cast<double>(s.cache.page_writes[i]);
    }
    c["page_reads"] = reads;
    c["page_writes"] = writes;
    c["cache_hits"] = static_cast<double>(s.cache.hits);
    c["cache_misses"] = static_cast<double>(s.cache.misses);
    c["cache_evictions"] = static_cast<double>(s.cache.evictions);
    c["prefetch_issued"] = static_cast<double>(s.cache.prefetch_issued);
    c["prefetch_used"] = static_cast<double>(s.cache.prefetch_used);
    c["prefetch_wasted"] = static_cast<double>(s.cache.prefetch_wasted);
    for (const PrefetchLevelStats& l : s.index.prefetch_levels) {
      const std::string pre = "prefetch_level" + std::to_string(l.level) + "_";
      c[pre + "predictions"] = static_cast<double>(l.predictions);
      c[pre + "correct"] = static_cast<double>(l.correct);
      c[pre + "issued"] = static_cast<double>(l.issued);
      c[pre + "used"] = static_cast<double>(l.used);
      c[pre + "wasted"] = static_cast<double>(l.wasted);
    }
    c["checksum_failures"] = static_cast<double>(s.cache.checksum_failures);
    c["checkpoint_copies"] = static_cast<double>(s.cache.checkpoint_copies);
    c["checkpoint_heap_copies"] = static_cast<double>(s.cache.checkpoint_heap_copies);
    c["wal_records"] = static_cast<double>(s.wal.records);
    c["wal_bytes"] = static_cast<double>(s.wal.bytes);
    c["wal_groups"] = static_cast<double>(s.wal.groups);
    c["wal_syncs"] = static_cast<double>(s.wal.syncs);
    c["checkpoints"] = static_cast<double>(s.checkpoint.count);
    c["checkpoint_pages_written"] = static_cast<double>(s.checkpoint.pages_written);
    c["checkpoint_bytes_written"] = static_cast<double>(s.checkpoint.bytes_written);
    c["write_room_waits"] = static_cast<double>(s.write_room.waits);
    c["write_room_checkpoints"] = static_cast<double>(s.write_room.writer_checkpoints);
    c["engine_gets"] = static_cast<double>(s.gets);
    c["engine_puts"] = static_cast<double>(s.puts);
    c["engine_writes"] = static_cast<double>(s.writes);
    c["engine_scans"] = static_cast<double>(s.scans);
    const ProcessIo io = ReadProcessIo();
    if (io.available) {
      c["device_read_bytes"] = static_cast<double>(io.read_bytes);
      c["device_write_bytes"] = static_cast<double>(io.write_bytes);
    }
    auto& g = t.gauges;
    g["index_height"] = s.index.height;
    g["index_inner_pages"] = static_cast<double>(s.index.inner_pages);
    g["index_leaf_pages"] = static_cast<double>(s.index.leaf_pages);
    g["index_inner_bytes"] = static_cast<double>(s.index.inner_bytes);
    g["index_model_bytes"] = static_cast<double>(s.index.model_bytes);
    g["index_entries"] = static_cast<double>(s.index.entries);
    for (const auto& [k, v] : s.index.extra) g["index." + k] = v;
    g["recovery_seconds"] = s.recovery_seconds;
    g["recovery_replayed_records"] = static_cast<double>(s.recovery_replayed_records);
    g["memory_epoch_table_bytes"] = static_cast<double>(s.memory.epoch_table_bytes);
    g["memory_allocator_bytes"] = static_cast<double>(s.memory.allocator_bytes);
    g["data_file_bytes"] = static_cast<double>(s.data_file_pages) * 4096;
    g["free_pages"] = static_cast<double>(s.free_pages);
    g["blob_values"] = static_cast<double>(s.blob_values);
    g["cache_capacity_pages"] = static_cast<double>(s.cache.capacity_pages);
    g["cache_resident_pages"] = static_cast<double>(s.cache.resident_pages);
    g["cache_dirty_pages"] = static_cast<double>(s.cache.dirty_pages);
    g["wal_segments"] = static_cast<double>(s.wal.segments);
    g["checkpoint_p50_seconds"] = s.checkpoint.duration_seconds.Percentile(50);
    g["checkpoint_p99_seconds"] = s.checkpoint.duration_seconds.Percentile(99);
    g["checkpoint_pause_p99_seconds"] = s.checkpoint.pause_seconds.Percentile(99);
    g["checkpoint_pause_p50_seconds"] = s.checkpoint.pause_seconds.Percentile(50);
    g["checkpoint_paced_seconds"] = s.checkpoint.paced_seconds;
    g["write_room_wait_p99_seconds"] = s.write_room.wait_seconds.Percentile(99);
    g["wal_sync_p50_seconds"] = s.wal.sync_seconds.Percentile(50);
    g["wal_sync_p99_seconds"] = s.wal.sync_seconds.Percentile(99);
    return t;
  }

  Status Close() override {
    if (!db_) return Status::Ok();
    Status s = db_->Close();
    db_.reset();
    return s;
  }

 private:
  const TargetUri uri_;
  const Options options_;
  std::unique_ptr<Db> db_;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenEmbeddedTarget(const TargetUri& uri, const TargetOptions& o) {
  Options options;
  options.data_dir = o.dir;
  options.cache_bytes = o.cache_bytes;
  options.direct_io = o.direct_io;
  options.io.queue_depth = o.queue_depth;
  if (o.io_backend == "uring") {
    options.io.kind = IoBackendKind::kUring;
  } else if (o.io_backend == "psync") {
    options.io.kind = IoBackendKind::kPsync;
  } else if (o.io_backend != "auto") {
    return Status::InvalidArgument("--io-backend: '" + o.io_backend +
                                   "' is not auto, uring or psync");
  }
  if (o.wal_sync == "always") {
    options.wal.sync = SyncMode::kAlways;
  } else if (o.wal_sync == "batch") {
    options.wal.sync = SyncMode::kBatch;
    options.wal.batch_interval_us = o.wal_batch_us;
  } else if (o.wal_sync == "none") {
    options.wal.sync = SyncMode::kNone;
  } else {
    return Status::InvalidArgument("--wal-sync: '" + o.wal_sync + "' is not always, batch or none");
  }
  options.index.variant = uri.body;
  for (const auto& [k, v] : uri.params) {
    // Engine-level knobs ride on the URI so that a suite can vary them per target.
    if (k == "inner_cache_fraction") {
      options.inner_cache_fraction = std::atof(v.c_str());
    } else if (k == "checkpoint_dirty_fraction") {
      options.checkpoint.dirty_fraction = std::atof(v.c_str());
    } else if (k == "checkpoint_interval_seconds") {
      options.checkpoint.interval_seconds = std::atof(v.c_str());
    } else if (k == "checkpoint_spread") {
      options.checkpoint.spread = std::atof(v.c_str());
    } else if (k == "scan_readahead_pages") {
      options.scan_readahead_pages = static_cast<uint32_t>(std::atoi(v.c_str()));
    } else {
      options.index.params[k] = v;
    }
  }
  // Warnings and errors only: info lines would tear the progress bar.
  options.logger = NewStderrLogger(LogLevel::kWarn);
  auto target = std::make_unique<EmbeddedTarget>(uri, options);
  GROVE_RETURN_IF_ERROR(target->Open());
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace grove::bench
