#include "options/check_options.h"

#include <unistd.h>

#include "grove/limits.h"

namespace grove {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

std::string Num(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    return std::to_string(static_cast<int64_t>(v));
  }
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace

void Problems::Range(const std::string& field, double v, double lo, double hi,
                     const std::string& unit) {
  if (v >= lo && v <= hi) return;
  Add(field, Num(v) + " is out of range (allowed: " + Num(lo) + ".." + Num(hi) + unit + ")");
}

void Problems::Readable(const std::string& field, const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) Add(field, "cannot read '" + path + "'");
}

Status Problems::ToStatus() const {
  if (list_.empty()) return Status::Ok();
  std::string all;
  for (const std::string& p : list_) {
    if (!all.empty()) all += '\n';
    all += p;
  }
  return Status::InvalidArgument(all);
}

void CheckEngineOptions(const Options& o, Problems* p) {
  using namespace limits;
  if (o.data_dir.empty()) p->Add("data_dir", "must not be empty");
  if (o.cache_bytes < kMinCacheBytes) p->Add("cache_bytes", "must be at least 1MiB");
  p->Range("inner_cache_fraction", o.inner_cache_fraction, 0, 1, "");
  p->Range("inline_value_bytes", o.inline_value_bytes, 0, kMaxInlineValueBytes, " bytes");
  p->Range("scan_readahead_pages", o.scan_readahead_pages, 0, kMaxScanReadaheadPages, " pages");

  p->Range("limits.max_key_bytes", o.max_key_bytes, 1, kMaxKeyBytes, " bytes");
  p->Range("limits.max_value_bytes", o.max_value_bytes, 0, kMaxValueBytes, " bytes");
  if (o.max_key_bytes <= kMaxKeyBytes && o.inline_value_bytes <= kMaxInlineValueBytes &&
      o.max_key_bytes + o.inline_value_bytes > kMaxKeyPlusInlineBytes) {
    p->Add("limits.max_key_bytes", "limits.max_key_bytes + inline_value_bytes must be at most " +
                                       std::to_string(kMaxKeyPlusInlineBytes) +
                                       " (two entries per 4KiB page); they are " +
                                       std::to_string(o.max_key_bytes + o.inline_value_bytes));
  }
  p->Range("limits.max_batch_entries", o.max_batch_entries, 1, kMaxBatchEntries, "");
  if (o.max_batch_bytes < kMinBatchBytes) p->Add("limits.max_batch_bytes", "must be at least 1KiB");

  if (o.wal.sync == SyncMode::kBatch) {
    p->Range("wal.batch_interval_us", o.wal.batch_interval_us, 1, kMaxBatchIntervalUs, " us");
  }
  if (o.wal.segment_bytes < kMinWalBytes) p->Add("wal.segment_bytes", "must be at least 1MiB");
  if (o.wal.max_unsynced_bytes < 2 * o.max_batch_bytes) {
    p->Add("wal.max_unsynced_bytes", "must be at least twice limits.max_batch_bytes (" +
                                         std::to_string(2 * o.max_batch_bytes) + " bytes)");
  }
  // A segment holds at least every unsynced record (recovery bounds a torn tail by it).
  if (o.wal.segment_bytes >= kMinWalBytes && o.wal.segment_bytes < o.wal.max_unsynced_bytes) {
    p->Add("wal.segment_bytes", "must be at least wal.max_unsynced_bytes (" +
                                    std::to_string(o.wal.max_unsynced_bytes) + " bytes)");
  }
  if (!(o.checkpoint.dirty_fraction > 0 && o.checkpoint.dirty_fraction <= kMaxDirtyFraction)) {
    p->Add("checkpoint.dirty_fraction", "must be in (0, " + Num(kMaxDirtyFraction) + "]");
  }
  if (o.checkpoint.wal_bytes < kMinWalBytes) {
    p->Add("checkpoint.wal_bytes", "must be at least 1MiB");
  }
  p->Range("checkpoint.interval_seconds", o.checkpoint.interval_seconds, 0, kMaxIntervalSeconds,
           " s");
  p->Range("checkpoint.spread", o.checkpoint.spread, 0, 0.9, "");
  p->Range("expiry.sweep_interval_seconds", o.expiry.sweep_interval_seconds, 0, kMaxIntervalSeconds,
           " s");
  if (o.expiry.sweep_keys_per_second < kMinSweepKeysPerSecond) {
    p->Add("expiry.sweep_keys_per_second",
           "must be at least " + std::to_string(kMinSweepKeysPerSecond));
  }
}

Status ValidateEngineOptions(const Options& o) {
  Problems p;
  CheckEngineOptions(o, &p);
  return p.ToStatus();
}

std::string WriteRoomWarning(const Options& o, uint64_t pages_per_op) {
  constexpr uint64_t kChunk = limits::kBlobChunkBytes;
  if (o.cache_bytes < limits::kMinCacheBytes) return "";  // invalid on its own
  const bool blobs = o.max_value_bytes > o.inline_value_bytes;
  const uint64_t value_pages = blobs ? (o.max_value_bytes + kChunk - 1) / kChunk : 0;
  const uint64_t worst = WorstCaseWritePages(1, value_pages, pages_per_op);
  const uint64_t room = WriteRoomPages(o);
  if (worst <= room) return "";
  auto min_cache_mib = [&o](uint64_t pages) {
    return (static_cast<uint64_t>(static_cast<double>(pages) / WriteRoomShare(o) *
                                  limits::kPageBytes) +
            kMiB - 1) /
           kMiB;
  };
  const uint64_t fit = WorstCaseWritePages(1, 0, pages_per_op);
  if (fit > room) {
    // Not the values: the variant's leaf change alone does not fit, whatever the value size.
    return "cache_bytes: any write may dirty up to " + std::to_string(fit) + " pages (" +
           std::to_string(pages_per_op) +
           " for the index variant's leaf change, 8 for the engine), more than writes may keep "
           "dirty with cache_bytes " +
           std::to_string(o.cache_bytes / kMiB) + "MiB (" + std::to_string(room) +
           " pages), so writes will be refused with RESOURCE_EXHAUSTED; raise cache_bytes to at "
           "least " +
           std::to_string(min_cache_mib(fit)) +
           "MiB or choose smaller leaves in index.params (docs/variants.md)";
  }
  const uint64_t max_value = (room - fit) * kChunk;
  return "limits.max_value_bytes: one write of a " + std::to_string(o.max_value_bytes) +
         "-byte value may dirty up to " + std::to_string(worst) +
         " pages, more than writes may keep dirty with cache_bytes " +
         std::to_string(o.cache_bytes / kMiB) + "MiB (" + std::to_string(room) +
         " pages), so values that large will be refused with RESOURCE_EXHAUSTED; raise "
         "cache_bytes to at least " +
         std::to_string(min_cache_mib(worst)) + "MiB or lower limits.max_value_bytes to at most " +
         std::to_string(max_value);
}

}  // namespace grove
