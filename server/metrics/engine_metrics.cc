#include "metrics/engine_metrics.h"

#include <iterator>
#include <limits>
#include <string>
#include <utility>

namespace grove::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Pages are 4 KiB throughout the engine (DESIGN: "4 KiB pages"); page counts are exported in bytes.
constexpr double kPageBytes = 4096;

class Builder {
 public:
  explicit Builder(std::vector<MetricFamily>* out) : out_(out) {}

  void Counter(const char* name, const char* help, double value,
               std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    Family(name, help, MetricType::Counter)->metric.push_back(std::move(m));
  }

  void Gauge(const char* name, const char* help, double value,
             std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    Family(name, help, MetricType::Gauge)->metric.push_back(std::move(m));
  }

  void Histogram(const char* name, const char* help, const HistogramSnapshot& h) {
    ClientMetric m;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      m.histogram.bucket.push_back({cumulative, h.bounds[i]});
    }
    // The last bucket is +Inf and holds every observation.
    m.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum;
    Family(name, help, MetricType::Histogram)->metric.push_back(std::move(m));
  }

 private:
  // The family named `name`, created on first use (families with several label sets are built
  // by repeated calls).
  MetricFamily* Family(const char* name, const char* help, MetricType type) {
    if (!out_->empty() && out_->back().name == name) return &out_->back();
    out_->push_back(MetricFamily{name, help, type, {}});
    return &out_->back();
  }

  std::vector<MetricFamily>* out_;
};

double D(uint64_t v) { return static_cast<double>(v); }

// The `cause` label values, indexed by IoCause. Kept here rather than taken from IoCauseName()
// because they are part of the exported metrics contract (dashboards select on them). A new
// IoCause fails the assert until it is named here and in docs/server.md.
constexpr const char* kCauseLabels[] = {"demand",   "prefetch",  "scan",      "checkpoint",
                                        "recovery", "bulk_load", "compaction"};
static_assert(std::size(kCauseLabels) >= kNumIoCauses,
              "name the new IoCause in kCauseLabels and docs/server.md");

void CacheFamilies(const DbStats& s, Builder& b) {
  const BufferPoolStats& c = s.cache;
  for (int i = 0; i < kNumIoCauses; ++i) {
    b.Counter("grove_page_reads_total", "Pages read from disk, by cause.", D(c.page_reads[i]),
              {{"cause", kCauseLabels[i]}});
  }
  for (int i = 0; i < kNumIoCauses; ++i) {
    b.Counter("grove_page_writes_total", "Pages written to disk, by cause.", D(c.page_writes[i]),
              {{"cause", kCauseLabels[i]}});
  }
  b.Counter("grove_cache_hits_total", "Buffer pool lookups that found the page in memory.",
            D(c.hits));
  b.Counter("grove_cache_misses_total", "Buffer pool lookups that had to read the page.",
            D(c.misses));
  b.Counter("grove_cache_evictions_total", "Pages evicted from the buffer pool.", D(c.evictions));
  b.Gauge("grove_cache_capacity_bytes", "Buffer pool budget.", D(c.capacity_pages) * kPageBytes);
  b.Gauge("grove_cache_resident_bytes", "Bytes of pages held in the buffer pool.",
          D(c.resident_pages) * kPageBytes);
  b.Gauge("grove_cache_dirty_bytes", "Bytes of modified pages waiting for a checkpoint.",
          D(c.dirty_pages) * kPageBytes);
  b.Counter("grove_prefetch_issued_pages_total", "Pages read ahead of need into the side pool.",
            D(c.prefetch_issued));
  b.Counter("grove_prefetch_used_pages_total",
            "Prefetched pages confirmed by a traversal and admitted to the cache.",
            D(c.prefetch_used));
  b.Counter("grove_prefetch_wasted_pages_total", "Prefetched pages dropped unconfirmed.",
            D(c.prefetch_wasted));
  b.Counter("grove_checksum_failures_total",
            "Pages that failed the checksum, own-id or epoch check.", D(c.checksum_failures));
  b.Counter("grove_checkpoint_copies_total",
            "Pages a running checkpoint had captured that a writer changed or freed first: copied "
            "out into a frame of the pool, or onto the heap when no frame could be had.",
            D(c.checkpoint_copies), {{"memory", "pool"}});
  b.Counter("grove_checkpoint_copies_total",
            "Pages a running checkpoint had captured that a writer changed or freed first: copied "
            "out into a frame of the pool, or onto the heap when no frame could be had.",
            D(c.checkpoint_heap_copies), {{"memory", "heap"}});
}

void WalFamilies(const DbStats& s, Builder& b) {
  const WalStats& w = s.wal;
  b.Counter("grove_wal_records_total", "Records appended to the write-ahead log.", D(w.records));
  b.Counter("grove_wal_written_bytes_total", "Bytes appended to the write-ahead log.", D(w.bytes));
  b.Counter("grove_wal_group_commits_total", "Group commits (one log write each).", D(w.groups));
  b.Counter("grove_wal_syncs_total", "fdatasync calls on the log.", D(w.syncs));
  b.Gauge("grove_wal_segments", "Live log segment files.", D(w.segments));
  b.Gauge("grove_wal_next_lsn", "The log sequence number the next record gets.", D(w.next_lsn));
  b.Histogram("grove_wal_sync_duration_seconds", "Latency of fdatasync on the log.",
              w.sync_seconds);
  b.Histogram("grove_wal_records_per_sync",
              "Log records each fdatasync made durable (writers sharing a group commit).",
              w.records_per_sync);
}

void CheckpointFamilies(const DbStats& s, Builder& b) {
  const CheckpointStats& c = s.checkpoint;
  b.Counter("grove_checkpoints_total", "Completed checkpoints.", D(c.count));
  b.Counter("grove_checkpoint_failures_total", "Checkpoints that failed.", D(c.failures));
  b.Gauge("grove_checkpoint_epoch", "Epoch of the newest durable checkpoint.", D(c.epoch));
  b.Gauge("grove_checkpoint_redo_lsn", "Recovery replays the log from this LSN.", D(c.redo_lsn));
  b.Gauge(
      "grove_checkpoint_snapshot_lsn",
      "Log position the newest checkpoint was taken at; every record below it survives a crash.",
      D(c.snapshot_lsn));
  b.Counter("grove_checkpoint_written_pages_total", "Pages written by checkpoints.",
            D(c.pages_written));
  b.Counter("grove_checkpoint_written_bytes_total",
            "Bytes written by checkpoints (double-write, in place and manifest).",
            D(c.bytes_written));
  b.Histogram("grove_checkpoint_duration_seconds", "Duration of checkpoints.", c.duration_seconds);
  b.Histogram("grove_checkpoint_pause_seconds",
              "How long each checkpoint held writers while it captured the dirty pages.",
              c.pause_seconds);
  b.Counter("grove_checkpoint_paced_seconds_total",
            "Time checkpoints waited to spread their writes (checkpoint.spread).", c.paced_seconds);
  const WriteRoomStats& r = s.write_room;
  b.Counter("grove_write_room_waits_total",
            "Writes that waited for dirty-page room (a write in flight or a checkpoint to end).",
            D(r.waits));
  b.Counter("grove_write_room_checkpoints_total",
            "Checkpoints run by a write waiting for room (none was running).",
            D(r.writer_checkpoints));
  b.Histogram("grove_write_room_wait_seconds", "How long writes waited for dirty-page room.",
              r.wait_seconds);
}

void IndexFamilies(const DbStats& s, Builder& b) {
  const IndexStats& i = s.index;
  b.Gauge("grove_index_info", "The index variant (constant 1).", 1, {{"variant", i.variant}});
  b.Gauge("grove_index_height", "Index levels including the leaves.", D(i.height));
  b.Gauge("grove_index_inner_pages", "Inner (non-leaf) index pages.", D(i.inner_pages));
  b.Gauge("grove_index_leaf_pages", "Leaf index pages.", D(i.leaf_pages));
  b.Gauge("grove_index_inner_bytes",
          "Bytes of inner nodes (what must stay cached for one-IO lookups).", D(i.inner_bytes));
  b.Gauge("grove_index_model_bytes", "Bytes of learned models and maps held in memory.",
          D(i.model_bytes));
  b.Gauge("grove_index_entries", "Keys in the index, where the variant tracks it.", D(i.entries));
  static constexpr std::pair<const char*, uint64_t PrefetchLevelStats::*> kPrefetch[] = {
      {"grove_prefetch_level_predictions_total", &PrefetchLevelStats::predictions},
      {"grove_prefetch_level_correct_total", &PrefetchLevelStats::correct},
      {"grove_prefetch_level_issued_total", &PrefetchLevelStats::issued},
      {"grove_prefetch_level_used_total", &PrefetchLevelStats::used},
      {"grove_prefetch_level_wasted_total", &PrefetchLevelStats::wasted},
  };
  for (const auto& [name, field] : kPrefetch) {
    for (const PrefetchLevelStats& l : i.prefetch_levels) {
      b.Counter(name,
                "Path prediction by tree level (0 = leaves): predictions, correct ones, prefetch "
                "reads issued, used and wasted.",
                D(l.*field), {{"level", std::to_string(l.level)}});
    }
  }
  for (const auto& [name, value] : i.extra) {
    b.Gauge("grove_index_variant_stat", "Variant-specific figures (documented per variant).", value,
            {{"name", name}, {"variant", i.variant}});
  }
}

}  // namespace

const char* IoCauseLabel(IoCause cause) {
  const auto i = static_cast<size_t>(cause);
  return i < std::size(kCauseLabels) ? kCauseLabels[i] : "unknown";
}

std::vector<MetricFamily> EngineFamilies(const DbStats& s) {
  std::vector<MetricFamily> out;
  Builder b(&out);
  b.Gauge("grove_io_backend_info", "The active IO backend (constant 1).", 1,
          {{"backend", s.io_backend}});
  static constexpr std::pair<const char*, uint64_t DbStats::*> kOps[] = {
      {"get", &DbStats::gets},     {"put", &DbStats::puts},   {"delete", &DbStats::deletes},
      {"write", &DbStats::writes}, {"scan", &DbStats::scans},
  };
  for (const auto& [op, field] : kOps) {
    b.Counter("grove_operations_total",
              "Engine operations by kind (write = an atomic batch, scan = an iterator).",
              D(s.*field), {{"op", op}});
  }
  b.Gauge("grove_data_file_bytes", "Size of the data file.", D(s.data_file_pages) * kPageBytes);
  b.Gauge("grove_data_file_free_bytes", "Free space inside the data file.",
          D(s.free_pages) * kPageBytes);
  b.Gauge("grove_blob_values", "Values stored out of line in the value store.", D(s.blob_values));
  b.Gauge("grove_blob_bytes", "Bytes of pages holding out-of-line values.",
          D(s.blob_pages) * kPageBytes);
  b.Gauge("grove_memory_bytes",
          "Fixed in-memory structures that grow with the data file, not with the cache.",
          D(s.memory.epoch_table_bytes), {{"structure", "epoch_table"}});
  b.Gauge("grove_memory_bytes",
          "Fixed in-memory structures that grow with the data file, not with the cache.",
          D(s.memory.allocator_bytes), {{"structure", "allocator"}});
  b.Gauge("grove_recovery_replayed_records", "Log records replayed by the last recovery.",
          D(s.recovery_replayed_records));
  b.Gauge("grove_recovery_duration_seconds", "Duration of the last recovery.", s.recovery_seconds);
  b.Counter("grove_expired_reads_total",
            "Reads that met a value past its expiry (it read as absent).",
            D(s.expiry.expired_reads));
  b.Counter("grove_expired_keys_removed_total", "Expired keys the expiry sweep removed.",
            D(s.expiry.keys_removed));
  b.Counter("grove_expiry_sweeps_total", "Whole sweeps over the key space for expired keys.",
            D(s.expiry.sweeps));
  b.Gauge("grove_expiry_sweeping", "1 while values with an expiry may be present (sweeps run).",
          s.expiry.may_hold_expiring ? 1 : 0);
  b.Counter("grove_backups_total", "Online backups that completed.", D(s.backup.completed));
  b.Counter("grove_backup_failures_total", "Online backups that failed or were given up.",
            D(s.backup.failed));
  b.Gauge("grove_backup_running", "1 while an online backup is being written.",
          s.backup.running ? 1 : 0);
  b.Gauge("grove_backup_last_duration_seconds", "Duration of the last completed backup.",
          s.backup.last_seconds);
  b.Gauge("grove_backup_last_bytes", "Data file and log bytes of the last completed backup.",
          D(s.backup.last_bytes));
  b.Gauge("grove_backup_last_completion_timestamp_seconds",
          "When the last backup completed (Unix time; 0: none since the server started).",
          static_cast<double>(s.backup.last_unix_ms) / 1000);
  CacheFamilies(s, b);
  WalFamilies(s, b);
  CheckpointFamilies(s, b);
  IndexFamilies(s, b);
  return out;
}

std::vector<MetricFamily> EngineCollector::Collect() const {
  std::optional<DbStats> stats = source_();
  if (!stats) return {};
  return EngineFamilies(*stats);
}

}  // namespace grove::metrics
