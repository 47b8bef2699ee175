#include "metrics/engine_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace grove::metrics {
namespace {

DbStats SampleStats() {
  DbStats s;
  s.io_backend = "uring";
  s.gets = 10;
  s.puts = 5;
  s.deletes = 1;
  s.writes = 2;
  s.scans = 3;
  s.data_file_pages = 100;
  s.free_pages = 10;
  s.blob_values = 4;
  s.blob_pages = 8;
  s.recovery_replayed_records = 42;
  s.recovery_seconds = 0.25;
  s.cache.capacity_pages = 1000;
  s.cache.resident_pages = 500;
  s.cache.dirty_pages = 2;
  s.cache.hits = 90;
  s.cache.misses = 10;
  s.cache.evictions = 3;
  s.cache.page_reads = {7, 6, 5, 0, 1};
  s.cache.page_writes = {0, 0, 0, 9, 0};
  s.cache.prefetch_issued = 6;
  s.cache.prefetch_used = 5;
  s.cache.prefetch_wasted = 1;
  s.cache.checksum_failures = 0;
  s.wal.records = 20;
  s.wal.bytes = 2048;
  s.wal.groups = 15;
  s.wal.syncs = 15;
  s.wal.segments = 1;
  s.wal.next_lsn = 21;
  s.wal.sync_seconds.bounds = {1e-5, 2e-5, 4e-5};
  s.wal.sync_seconds.counts = {1, 2, 3, 4};  // per bucket; the last one is +Inf
  s.wal.sync_seconds.count = 10;
  s.wal.sync_seconds.sum = 0.5;
  s.checkpoint.count = 2;
  s.checkpoint.epoch = 2;
  s.checkpoint.redo_lsn = 18;
  s.checkpoint.snapshot_lsn = 23;
  s.checkpoint.pages_written = 30;
  s.checkpoint.bytes_written = 30 * 4096;
  s.checkpoint.duration_seconds.bounds = {0.001};
  s.checkpoint.duration_seconds.counts = {2, 0};
  s.checkpoint.duration_seconds.count = 2;
  s.checkpoint.duration_seconds.sum = 0.0015;
  s.index.variant = "btree";
  s.index.height = 3;
  s.index.inner_pages = 4;
  s.index.leaf_pages = 50;
  s.index.inner_bytes = 4 * 4096;
  s.index.model_bytes = 0;
  s.index.entries = 1234;
  s.index.extra = {{"fill_factor", 0.7}};
  s.cache.checkpoint_copies = 11;
  s.cache.checkpoint_heap_copies = 2;
  s.memory.epoch_table_bytes = 4096;
  s.memory.allocator_bytes = 96;
  return s;
}

std::string Render(const DbStats& s) {
  return prometheus::TextSerializer().Serialize(EngineFamilies(s));
}

void ExpectLine(const std::string& text, const std::string& line) {
  EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << "missing: " << line << "\n"
                                                              << text;
}

TEST(EngineMetricsTest, ExportsEveryFigureInBaseUnits) {
  const std::string t = Render(SampleStats());
  ExpectLine(t, "grove_io_backend_info{backend=\"uring\"} 1");
  ExpectLine(t, "grove_operations_total{op=\"get\"} 10");
  ExpectLine(t, "grove_operations_total{op=\"scan\"} 3");
  ExpectLine(t, "grove_data_file_bytes 409600");
  ExpectLine(t, "grove_data_file_free_bytes 40960");
  ExpectLine(t, "grove_blob_values 4");
  ExpectLine(t, "grove_blob_bytes 32768");
  ExpectLine(t, "grove_memory_bytes{structure=\"epoch_table\"} 4096");
  ExpectLine(t, "grove_memory_bytes{structure=\"allocator\"} 96");
  ExpectLine(t, "grove_recovery_replayed_records 42");
  ExpectLine(t, "grove_recovery_duration_seconds 0.25");
  ExpectLine(t, "grove_page_reads_total{cause=\"demand\"} 7");
  ExpectLine(t, "grove_page_reads_total{cause=\"prefetch\"} 6");
  ExpectLine(t, "grove_page_reads_total{cause=\"scan\"} 5");
  ExpectLine(t, "grove_page_reads_total{cause=\"recovery\"} 1");
  ExpectLine(t, "grove_page_writes_total{cause=\"checkpoint\"} 9");
  ExpectLine(t, "grove_cache_hits_total 90");
  ExpectLine(t, "grove_cache_misses_total 10");
  ExpectLine(t, "grove_cache_evictions_total 3");
  ExpectLine(t, "grove_cache_capacity_bytes 4096000");
  ExpectLine(t, "grove_cache_resident_bytes 2048000");
  ExpectLine(t, "grove_cache_dirty_bytes 8192");
  ExpectLine(t, "grove_prefetch_issued_pages_total 6");
  ExpectLine(t, "grove_prefetch_used_pages_total 5");
  ExpectLine(t, "grove_prefetch_wasted_pages_total 1");
  ExpectLine(t, "grove_checksum_failures_total 0");
  ExpectLine(t, "grove_checkpoint_copies_total{memory=\"pool\"} 11");
  ExpectLine(t, "grove_checkpoint_copies_total{memory=\"heap\"} 2");
  ExpectLine(t, "grove_wal_records_total 20");
  ExpectLine(t, "grove_wal_written_bytes_total 2048");
  ExpectLine(t, "grove_wal_group_commits_total 15");
  ExpectLine(t, "grove_wal_syncs_total 15");
  ExpectLine(t, "grove_wal_segments 1");
  ExpectLine(t, "grove_wal_next_lsn 21");
  ExpectLine(t, "grove_checkpoints_total 2");
  ExpectLine(t, "grove_checkpoint_failures_total 0");
  ExpectLine(t, "grove_checkpoint_epoch 2");
  ExpectLine(t, "grove_checkpoint_redo_lsn 18");
  ExpectLine(t, "grove_checkpoint_snapshot_lsn 23");
  ExpectLine(t, "grove_checkpoint_written_pages_total 30");
  ExpectLine(t, "grove_checkpoint_written_bytes_total 122880");
  ExpectLine(t, "grove_index_info{variant=\"btree\"} 1");
  ExpectLine(t, "grove_index_height 3");
  ExpectLine(t, "grove_index_inner_pages 4");
  ExpectLine(t, "grove_index_leaf_pages 50");
  ExpectLine(t, "grove_index_inner_bytes 16384");
  ExpectLine(t, "grove_index_model_bytes 0");
  ExpectLine(t, "grove_index_entries 1234");
  ExpectLine(t, "grove_index_variant_stat{name=\"fill_factor\",variant=\"btree\"} 0.7");
}

TEST(EngineMetricsTest, HistogramsAreCumulative) {
  const std::string t = Render(SampleStats());
  ExpectLine(t, "# TYPE grove_wal_sync_duration_seconds histogram");
  ExpectLine(t, "grove_wal_sync_duration_seconds_bucket{le=\"1e-05\"} 1");
  ExpectLine(t, "grove_wal_sync_duration_seconds_bucket{le=\"2e-05\"} 3");
  ExpectLine(t, "grove_wal_sync_duration_seconds_bucket{le=\"4e-05\"} 6");
  ExpectLine(t, "grove_wal_sync_duration_seconds_bucket{le=\"+Inf\"} 10");
  ExpectLine(t, "grove_wal_sync_duration_seconds_count 10");
  ExpectLine(t, "grove_wal_sync_duration_seconds_sum 0.5");
  ExpectLine(t, "grove_checkpoint_duration_seconds_bucket{le=\"0.001\"} 2");
  ExpectLine(t, "grove_checkpoint_duration_seconds_count 2");
}

TEST(EngineMetricsTest, TypesFollowConventions) {
  for (const prometheus::MetricFamily& f : EngineFamilies(SampleStats())) {
    const bool total = f.name.size() > 6 && f.name.ends_with("_total");
    EXPECT_EQ(total, f.type == prometheus::MetricType::Counter) << f.name;
    EXPECT_TRUE(f.name.starts_with("grove_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    for (const auto& m : f.metric) {
      for (const auto& l : m.label) {
        EXPECT_TRUE(l.name == "cause" || l.name == "op" || l.name == "backend" ||
                    l.name == "variant" || l.name == "name" || l.name == "structure" ||
                    l.name == "memory")
            << f.name << " label " << l.name;
      }
    }
  }
}

TEST(EngineMetricsTest, CollectorSkipsWhileNoEngine) {
  bool open = false;
  EngineCollector collector([&]() -> std::optional<DbStats> {
    if (!open) return std::nullopt;
    return SampleStats();
  });
  EXPECT_TRUE(collector.Collect().empty());
  open = true;
  EXPECT_FALSE(collector.Collect().empty());
}

}  // namespace
}  // namespace grove::metrics
