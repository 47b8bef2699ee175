// Options validation: every error names the field (as in config/grove.yaml) and the allowed range.

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "engine/value_cell.h"
#include "page/extent_allocator.h"

namespace grove {

StatusOr<Options> CheckOptions(const Options& in) {
  Options o = in;
  auto bad = [](std::string_view field, auto value, std::string_view allowed) {
    return Status::InvalidArgument(
        fmt::format("{}: {} is not allowed ({})", field, value, allowed));
  };
  if (o.data_dir.empty()) return Status::InvalidArgument("data_dir: must not be empty");
  if (o.cache_bytes < (1ull << 20)) return bad("cache_bytes", o.cache_bytes, "at least 1 MiB");
  if (!(o.inner_cache_fraction >= 0.0 && o.inner_cache_fraction <= 1.0)) {
    return bad("inner_cache_fraction", o.inner_cache_fraction, "0..1");
  }
  if (o.scan_readahead_pages > 256) {
    return bad("scan_readahead_pages", o.scan_readahead_pages, "0..256");
  }
  if (o.max_key_bytes < 1 || o.max_key_bytes > 1024) {
    return bad("limits.max_key_bytes", o.max_key_bytes, "1..1024");
  }
  const uint64_t max_blob = uint64_t{ExtentAllocator::kMaxExtentPages} * kBlobChunk;
  if (o.max_value_bytes > 1000000 || o.max_value_bytes > max_blob) {
    return bad("limits.max_value_bytes", o.max_value_bytes, "0..1000000");
  }
  if (o.inline_value_bytes > 1024)
    return bad("inline_value_bytes", o.inline_value_bytes, "0..1024");
  // Two of the largest leaf cells must fit in one page, or a split could not make room. 1880
  // leaves room for a cell's version and expiry (grove/index.h, MaxCellBytes).
  if (o.max_key_bytes + o.inline_value_bytes > 1880) {
    return Status::InvalidArgument(fmt::format(
        "limits.max_key_bytes + inline_value_bytes = {}: must be at most 1880 so that two entries "
        "fit in a 4 KiB page",
        o.max_key_bytes + o.inline_value_bytes));
  }
  if (o.max_batch_entries < 1) return bad("limits.max_batch_entries", o.max_batch_entries, ">= 1");
  if (o.max_batch_bytes < 1024) return bad("limits.max_batch_bytes", o.max_batch_bytes, ">= 1024");
  if (!(o.checkpoint.dirty_fraction > 0.0 && o.checkpoint.dirty_fraction <= 0.45)) {
    return bad("checkpoint.dirty_fraction", o.checkpoint.dirty_fraction, "(0, 0.45]");
  }
  if (!(o.checkpoint.interval_seconds >= 0 && o.checkpoint.interval_seconds <= 86400 * 365)) {
    return bad("checkpoint.interval_seconds", o.checkpoint.interval_seconds, "0..31536000");
  }
  if (!(o.expiry.sweep_interval_seconds >= 0 && o.expiry.sweep_interval_seconds <= 86400 * 365)) {
    return bad("expiry.sweep_interval_seconds", o.expiry.sweep_interval_seconds, "0..31536000");
  }
  if (o.expiry.sweep_keys_per_second < 100) {
    return bad("expiry.sweep_keys_per_second", o.expiry.sweep_keys_per_second, "at least 100");
  }
  if (o.checkpoint.wal_bytes < (1ull << 20)) {
    return bad("checkpoint.wal_bytes", o.checkpoint.wal_bytes, "at least 1 MiB");
  }
  if (o.wal.segment_bytes < (1ull << 20)) {
    return bad("wal.segment_bytes", o.wal.segment_bytes, "at least 1 MiB");
  }
  if (o.wal.max_unsynced_bytes < 2 * o.max_batch_bytes) {
    return Status::InvalidArgument(
        fmt::format("wal.max_unsynced_bytes: {} must be at least twice limits.max_batch_bytes ({})",
                    o.wal.max_unsynced_bytes, o.max_batch_bytes));
  }
  if (o.wal.segment_bytes < o.wal.max_unsynced_bytes) {
    return Status::InvalidArgument(
        fmt::format("wal.segment_bytes: {} must be at least wal.max_unsynced_bytes ({})",
                    o.wal.segment_bytes, o.wal.max_unsynced_bytes));
  }
  if (o.wal.sync == SyncMode::kBatch && o.wal.batch_interval_us == 0) {
    return bad("wal.batch_interval_us", 0, "> 0 when wal.sync is batch");
  }
  if (!o.logger) o.logger = NewStderrLogger(LogLevel::kInfo);
  return o;
}

}  // namespace grove
