// rocksdb: the baseline the design asks every number to stand against, configured so that the
// comparison is fair (docs/grove-bench.md, "RocksDB configuration"):
//
//   * the same memory budget: block cache + two memtables = TargetOptions::cache_bytes, split like
//     TreeLine's evaluation (15.7% per memtable, 68.6% block cache; `memtable_fraction` changes
//     it). Index and filter blocks live in the block cache (cache_index_and_filter_blocks), so
//     they count against the budget as Grove's inner nodes do.
//   * direct IO for reads and for flush/compaction, so the OS page cache hides nothing.
//   * Bloom filters, 10 bits per key (`bloom_bits`), 4 KiB blocks, no compression (Grove does not
//     compress; compressing would change the bytes per op, not the design under test).
//   * partitioned index and filters (`partitioned`, default true), so that a small cache holds
//     4 KiB index/filter partitions rather than evicting whole per-table index blocks.
//   * WAL durability matching Grove's wal.sync: always = WriteOptions::sync (RocksDB groups
//     concurrent syncing writers as Grove's group commit does); batch = a thread calling SyncWAL
//     every wal_batch_us; none = no sync.
//
// Counters mapped to the shared names: page_reads = block cache misses (data, index and filter
// blocks read for user operations); page_writes = bytes written by flush and compaction / 4096.
// device_read_bytes/device_write_bytes (/proc/self/io) also include compaction reads and WAL
// writes, which is the comparable figure for bytes per operation.

#include <chrono>
#include <mutex>
#include <thread>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>
#include <sys/stat.h>

#include "bench/parse.h"
#include "bench/system_info.h"
#include "bench/target.h"
#include "util/mutex.h"

namespace grove::bench {
namespace {

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  const std::string m = "rocksdb " + what + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(m);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(m);
  if (s.IsNoSpace()) return Status::ResourceExhausted(m);
  if (s.IsCorruption()) return Status::DataLoss(m);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Aborted(m);
  return Status::Internal(m);
}

class RocksSession final : public Session {
 public:
  RocksSession(rocksdb::DB* db, const rocksdb::WriteOptions& wo) : db_(db), write_options_(wo) {}

  Status Read(Slice key, std::string* value, bool* found) override {
    const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), ToRocks(key), value);
    *found = s.ok();
    if (s.IsNotFound()) return Status::Ok();
    return FromRocks(s, "get");
  }

  Status Write(Slice key, Slice value) override {
    return FromRocks(db_->Put(write_options_, ToRocks(key), ToRocks(value)), "put");
  }

  Status Scan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper = ToRocks(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    uint64_t n = 0;
    uint64_t bytes = 0;
    // As for Grove: no Next() after the last entry wanted.
    it->Seek(ToRocks(start));
    while (n < limit && it->Valid()) {
      bytes += it->value().size();
      if (++n < limit) it->Next();
    }
    *entries = n;
    return FromRocks(it->status(), "scan");
  }

  Status WriteBatch(const std::vector<std::pair<std::string, std::string>>& entries) override {
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : entries) batch.Put(k, v);
    return FromRocks(db_->Write(write_options_, &batch), "write batch");
  }

  Status Delete(Slice key) override {
    return FromRocks(db_->Delete(write_options_, ToRocks(key)), "delete");
  }

  Status BatchRead(const std::vector<std::string>& keys, uint64_t* found) override {
    std::vector<rocksdb::Slice> slices;
    slices.reserve(keys.size());
    for (const std::string& k : keys) slices.emplace_back(k);
    std::vector<std::string> values;
    const std::vector<rocksdb::Status> st = db_->MultiGet(rocksdb::ReadOptions(), slices, &values);
    *found = 0;
    for (const rocksdb::Status& s : st) {
      if (s.ok()) {
        ++*found;
      } else if (!s.IsNotFound()) {
        return FromRocks(s, "multi get");
      }
    }
    return Status::Ok();
  }

  Status WriteMutations(const std::vector<Mutation>& mutations) override {
    rocksdb::WriteBatch batch;
    for (const Mutation& m : mutations) {
      if (m.is_delete) {
        batch.Delete(m.key);
      } else {
        batch.Put(m.key, m.value);
      }
    }
    return FromRocks(db_->Write(write_options_, &batch), "write batch");
  }

  // Grove's range delete removes at most `limit` keys and counts them, so the keys are found
  // and deleted one by one here too (a RocksDB range tombstone would do neither).
  Status DeleteRange(Slice start, Slice end, uint64_t limit, uint64_t* deleted) override {
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper = ToRocks(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    rocksdb::WriteBatch batch;
    uint64_t n = 0;
    for (it->Seek(ToRocks(start)); it->Valid() && (limit == 0 || n < limit); it->Next()) {
      batch.Delete(it->key());
      ++n;
    }
    GROVE_RETURN_IF_ERROR(FromRocks(it->status(), "delete range scan"));
    *deleted = n;
    if (n == 0) return Status::Ok();
    return FromRocks(db_->Write(write_options_, &batch), "delete range");
  }

  Status ReverseScan(Slice start, Slice end, uint32_t limit, uint64_t* entries) override {
    rocksdb::ReadOptions ro;
    rocksdb::Slice lower = ToRocks(start);
    rocksdb::Slice upper = ToRocks(end);
    if (!start.empty()) ro.iterate_lower_bound = &lower;
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    uint64_t n = 0;
    uint64_t bytes = 0;
    it->SeekToLast();
    while (n < limit && it->Valid()) {
      bytes += it->value().size();
      if (++n < limit) it->Prev();
    }
    *entries = n;
    return FromRocks(it->status(), "reverse scan");
  }

 private:
  static rocksdb::Slice ToRocks(Slice s) { return rocksdb::Slice(s.data(), s.size()); }
  rocksdb::DB* const db_;
  const rocksdb::WriteOptions write_options_;
};

class RocksTarget final : public Target {
 public:
  RocksTarget(std::string dir, std::map<std::string, std::string> config, rocksdb::Options options,
              rocksdb::WriteOptions write_options, uint32_t batch_sync_us)
      : dir_(std::move(dir)),
        config_(std::move(config)),
        options_(std::move(options)),
        write_options_(write_options),
        batch_sync_us_(batch_sync_us) {}

  ~RocksTarget() override { Close().IgnoreError(); }

  Status Open() {
    rocksdb::DB* db = nullptr;
    GROVE_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(options_, dir_, &db), "open " + dir_));
    db_.reset(db);
    if (batch_sync_us_ > 0) {
      {
        MutexLock l(&mu_);
        stop_ = false;
      }
      syncer_ = std::thread([this] { SyncLoop(); });
    }
    return Status::Ok();
  }

  std::string Uri() const override {
    std::string s = "rocksdb";
    char sep = '?';
    for (const auto& [k, v] : config_) {
      if (k.rfind("param.", 0) != 0) continue;
      s += sep + k.substr(6) + "=" + v;
      sep = '&';
    }
    return s;
  }

  std::map<std::string, std::string> Config() const override { return config_; }

  Status Reset() override {
    GROVE_RETURN_IF_ERROR(Close());
    GROVE_RETURN_IF_ERROR(FromRocks(rocksdb::DestroyDB(dir_, options_), "destroy " + dir_));
    return Open();
  }

  StatusOr<std::unique_ptr<Session>> NewSession() override {
    return std::unique_ptr<Session>(std::make_unique<RocksSession>(db_.get(), write_options_));
  }

  Status BulkLoad(const BulkSource& source) override {
    // SST files of about 64 MiB written in key order, then ingested: RocksDB's bulk-load path.
    const std::string ingest_dir = dir_ + "/ingest";
    mkdir(ingest_dir.c_str(), 0755);
    std::vector<std::string> files;
    std::unique_ptr<rocksdb::SstFileWriter> writer;
    uint64_t file_bytes = 0;
    std::string key;
    std::string value;
    while (source(&key, &value)) {
      if (!writer || file_bytes >= (64u << 20)) {
        if (writer) GROVE_RETURN_IF_ERROR(FromRocks(writer->Finish(), "finish sst"));
        writer = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(options_), options_);
        files.push_back(ingest_dir + "/" + std::to_string(files.size()) + ".sst");
        GROVE_RETURN_IF_ERROR(FromRocks(writer->Open(files.back()), "open sst"));
        file_bytes = 0;
      }
      GROVE_RETURN_IF_ERROR(FromRocks(writer->Put(key, value), "sst put"));
      file_bytes += key.size() + value.size();
    }
    if (writer) GROVE_RETURN_IF_ERROR(FromRocks(writer->Finish(), "finish sst"));
    if (files.empty()) return Status::Ok();
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    return FromRocks(db_->IngestExternalFile(files, io), "ingest");
  }

  Status Settle() override {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    GROVE_RETURN_IF_ERROR(FromRocks(db_->Flush(fo), "flush"));
    // Wait for the compaction backlog (7.8 has no WaitForCompact), at most ten minutes.
    for (int i = 0; i < 6000; ++i) {
      uint64_t pending = 0;
      uint64_t running = 0;
      db_->GetIntProperty("rocksdb.compaction-pending", &pending);
      db_->GetIntProperty("rocksdb.num-running-compactions", &running);
      if (pending == 0 && running == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return Status::Ok();
  }

  StatusOr<TargetStats> Stats() override {
    TargetStats t;
    auto& c = t.counters;
    auto* st = options_.statistics.get();
    auto tick = [&](rocksdb::Tickers x) { return static_cast<double>(st->getTickerCount(x)); };
    c["page_reads"] = tick(rocksdb::BLOCK_CACHE_MISS);
    c["page_reads.data"] = tick(rocksdb::BLOCK_CACHE_DATA_MISS);
    c["page_reads.index"] = tick(rocksdb::BLOCK_CACHE_INDEX_MISS);
    c["page_reads.filter"] = tick(rocksdb::BLOCK_CACHE_FILTER_MISS);
    c["page_writes"] =
        (tick(rocksdb::FLUSH_WRITE_BYTES) + tick(rocksdb::COMPACT_WRITE_BYTES)) / 4096;
    c["cache_hits"] = tick(rocksdb::BLOCK_CACHE_HIT);
    c["cache_misses"] = tick(rocksdb::BLOCK_CACHE_MISS);
    c["bloom_useful"] = tick(rocksdb::BLOOM_FILTER_USEFUL);
    c["wal_bytes"] = tick(rocksdb::WAL_FILE_BYTES);
    c["wal_syncs"] = tick(rocksdb::WAL_FILE_SYNCED);
    c["flush_write_bytes"] = tick(rocksdb::FLUSH_WRITE_BYTES);
    c["compaction_read_bytes"] = tick(rocksdb::COMPACT_READ_BYTES);
    c["compaction_write_bytes"] = tick(rocksdb::COMPACT_WRITE_BYTES);
    c["stall_micros"] = tick(rocksdb::STALL_MICROS);
    const ProcessIo io = ReadProcessIo();
    if (io.available) {
      c["device_read_bytes"] = static_cast<double>(io.read_bytes);
      c["device_write_bytes"] = static_cast<double>(io.write_bytes);
    }
    auto& g = t.gauges;
    auto prop = [&](const std::string& name) {
      uint64_t v = 0;
      db_->GetAggregatedIntProperty(name, &v);
      return static_cast<double>(v);
    };
    g["data_file_bytes"] = prop("rocksdb.total-sst-files-size");
    g["memtable_bytes"] = prop("rocksdb.cur-size-all-mem-tables");
    g["block_cache_usage_bytes"] = prop("rocksdb.block-cache-usage");
    g["table_readers_bytes"] = prop("rocksdb.estimate-table-readers-mem");
    g["index_entries"] = prop("rocksdb.estimate-num-keys");
    for (int level = 0; level < 7; ++level) {
      std::string v;
      if (db_->GetProperty("rocksdb.num-files-at-level" + std::to_string(level), &v)) {
        g["files_L" + std::to_string(level)] = std::atof(v.c_str());
      }
    }
    // Index and filter blocks are RocksDB's counterpart of inner nodes: what must stay cached
    // for a lookup to cost one data-block read.
    rocksdb::TablePropertiesCollection tables;
    if (db_->GetPropertiesOfAllTables(&tables).ok()) {
      double index = 0;
      double filter = 0;
      for (const auto& [name, p] : tables) {
        index += static_cast<double>(p->index_size + p->top_level_index_size);
        filter += static_cast<double>(p->filter_size);
      }
      g["index_inner_bytes"] = index;
      g["index_filter_bytes"] = filter;
      g["sst_files"] = static_cast<double>(tables.size());
    }
    return t;
  }

  Status Close() override {
    if (syncer_.joinable()) {
      {
        MutexLock l(&mu_);
        stop_ = true;
      }
      cv_.SignalAll();
      syncer_.join();
    }
    if (!db_) return Status::Ok();
    const rocksdb::Status s = db_->Close();
    db_.reset();
    return FromRocks(s, "close");
  }

 private:
  void SyncLoop() GROVE_EXCLUDES(mu_) {
    mu_.Lock();
    while (!stop_) {
      cv_.WaitFor(std::chrono::microseconds(batch_sync_us_));
      if (stop_) break;
      mu_.Unlock();
      db_->SyncWAL().PermitUncheckedError();
      mu_.Lock();
    }
    mu_.Unlock();
  }

  const std::string dir_;
  const std::map<std::string, std::string> config_;
  const rocksdb::Options options_;
  const rocksdb::WriteOptions write_options_;
  const uint32_t batch_sync_us_;
  std::unique_ptr<rocksdb::DB> db_;
  std::thread syncer_;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool stop_ GROVE_GUARDED_BY(mu_) = false;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenRocksDbTarget(const TargetUri& uri, const TargetOptions& o) {
  double memtable_fraction = 0.314;
  int bloom_bits = 10;
  uint64_t block_size = 4096;
  bool partitioned = true;
  std::map<std::string, std::string> config;
  for (const auto& [k, v] : uri.params) {
    config["param." + k] = v;
    if (k == "memtable_fraction") {
      memtable_fraction = std::atof(v.c_str());
      if (!(memtable_fraction > 0 && memtable_fraction < 1)) {
        return Status::InvalidArgument("rocksdb?memtable_fraction must be in (0, 1)");
      }
    } else if (k == "bloom_bits") {
      bloom_bits = std::atoi(v.c_str());
    } else if (k == "block_size") {
      GROVE_ASSIGN_OR_RETURN(block_size, ParseSize(v, "rocksdb?block_size"));
    } else if (k == "partitioned") {
      GROVE_ASSIGN_OR_RETURN(partitioned, ParseBool(v, "rocksdb?partitioned"));
    } else {
      return Status::InvalidArgument("rocksdb: unknown parameter '" + k +
                                     "' (memtable_fraction, bloom_bits, block_size, partitioned)");
    }
  }
  if (o.cache_bytes < (1u << 20)) {
    return Status::InvalidArgument("rocksdb: the memory budget must be at least 1 MiB");
  }
  const uint64_t memtable_bytes = static_cast<uint64_t>(o.cache_bytes * memtable_fraction / 2);
  const uint64_t block_cache_bytes = o.cache_bytes - 2 * memtable_bytes;

  rocksdb::Options options;
  options.create_if_missing = true;
  options.use_direct_reads = o.direct_io;
  options.use_direct_io_for_flush_and_compaction = o.direct_io;
  options.write_buffer_size = memtable_bytes;
  options.max_write_buffer_number = 2;
  options.compression = rocksdb::kNoCompression;
  options.bottommost_compression = rocksdb::kNoCompression;
  options.statistics = rocksdb::CreateDBStatistics();
  options.max_background_jobs = 2;  // the machines this suite targets have two cores
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(block_cache_bytes);
  table.block_size = block_size;
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  if (partitioned) {
    // With index and filters in a small block cache, a 64 MiB table's index is one ~300 KiB
    // block that is evicted and re-read whole; partitions of 4 KiB under a pinned top level
    // are how RocksDB is meant to run in a tight budget (measured: 590 KiB read per Get without).
    table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    table.partition_filters = true;
    table.metadata_block_size = 4096;
    table.pin_top_level_index_and_filter = true;
  }
  if (bloom_bits > 0) table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(bloom_bits, false));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  rocksdb::WriteOptions wo;
  uint32_t batch_sync_us = 0;
  if (o.wal_sync == "always") {
    wo.sync = true;
  } else if (o.wal_sync == "batch") {
    batch_sync_us = o.wal_batch_us;
  } else if (o.wal_sync != "none") {
    return Status::InvalidArgument("--wal-sync: '" + o.wal_sync + "' is not always, batch or none");
  }

  config["memory_budget_bytes"] = std::to_string(o.cache_bytes);
  config["block_cache_bytes"] = std::to_string(block_cache_bytes);
  config["memtable_bytes"] = std::to_string(memtable_bytes) + " x 2";
  config["bloom_bits_per_key"] = std::to_string(bloom_bits);
  config["block_size"] = std::to_string(block_size);
  config["index_and_filters"] = partitioned ? "partitioned (4 KiB), top level pinned" : "whole";
  config["direct_io"] = o.direct_io ? "reads, flush and compaction" : "off";
  config["compression"] = "none";
  config["wal_sync"] = o.wal_sync;
  config["version"] = "RocksDB " + std::to_string(ROCKSDB_MAJOR) + "." +
                      std::to_string(ROCKSDB_MINOR) + "." + std::to_string(ROCKSDB_PATCH);

  auto target = std::make_unique<RocksTarget>(o.dir, config, options, wo, batch_sync_us);
  GROVE_RETURN_IF_ERROR(target->Open());
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace grove::bench
