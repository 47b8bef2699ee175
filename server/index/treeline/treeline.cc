// TreeLine: parameters, create/open, metadata, statistics and the background thread.

#include "index/treeline/treeline.h"

#include <fmt/format.h>

#include "page/extent_allocator.h"
#include "util/clock.h"
#include "util/coding.h"

namespace grove {

using treeline::RecordCache;

namespace treeline {

StatusOr<Config> ParseConfig(const ParamMap& params) {
  Config c;
  auto flag = [&](const char* name, bool* out) -> Status {
    GROVE_ASSIGN_OR_RETURN(const std::string v, ParseEnumParam(params, name, {"true", "false"}));
    *out = v == "true";
    return Status::Ok();
  };
  GROVE_ASSIGN_OR_RETURN(c.goal, ParseDoubleParam(params, "goal", 0.05, 1.0));
  if (auto it = params.find("epsilon"); it != params.end() && it->second != "auto") {
    GROVE_ASSIGN_OR_RETURN(c.epsilon, ParseDoubleParam(params, "epsilon", 0.0, 0.5));
    if (c.goal + 2 * c.epsilon > 1.0) {
      return Status::InvalidArgument(fmt::format(
          "index.params.epsilon: goal {} + 2 x epsilon {} exceeds what a page holds (1)", c.goal,
          c.epsilon));
    }
  }
  GROVE_RETURN_IF_ERROR(flag("grouping", &c.grouping));
  GROVE_RETURN_IF_ERROR(flag("cache", &c.cache));
  GROVE_RETURN_IF_ERROR(flag("optimistic_caching", &c.optimistic));
  GROVE_RETURN_IF_ERROR(flag("batched_writeback", &c.batched_writeback));
  GROVE_RETURN_IF_ERROR(flag("forecasting", &c.forecasting));
  GROVE_ASSIGN_OR_RETURN(c.forecast_epoch,
                         ParseUintParam(params, "forecast_epoch_inserts", 100, 1ull << 40));
  GROVE_ASSIGN_OR_RETURN(const uint64_t parts,
                         ParseUintParam(params, "forecast_partitions", 1, 1000000));
  c.forecast_partitions = static_cast<uint32_t>(parts);
  GROVE_ASSIGN_OR_RETURN(c.forecast_future_epochs,
                         ParseDoubleParam(params, "forecast_future_epochs", 0.0, 1000.0));
  GROVE_ASSIGN_OR_RETURN(const uint64_t radius, ParseUintParam(params, "radius", 0, 64));
  c.radius = static_cast<int>(radius);
  GROVE_ASSIGN_OR_RETURN(c.pool_share, ParseDoubleParam(params, "buffer_pool_share", 0.01, 1.0));
  GROVE_ASSIGN_OR_RETURN(c.pool_max_share,
                         ParseDoubleParam(params, "buffer_pool_max_share", 0.0, 1.0));
  GROVE_ASSIGN_OR_RETURN(c.dirty_share, ParseDoubleParam(params, "dirty_share", 0.05, 1.0));
  return c;
}

}  // namespace treeline

using treeline::Segment;

namespace {

constexpr uint32_t kMetadataVersion = 1;

// CLOCK steps a cleaning round may take to find one cold dirty record.
constexpr size_t kColdSteps = 4096;

// Victims a background write-back round chooses before it reads their pages in one submission.
constexpr size_t kWriteBackBatch = 32;

// After a reorganisation fails, the next waits this long (a failing disk would otherwise be
// retried in a busy loop).
constexpr uint64_t kReorganisationPauseNanos = 200'000'000;

// The whole budget: the record cache's part and the buffer pool as configured.
uint64_t BudgetBytes(const IndexContext& ctx) {
  return ctx.memory_bytes + ctx.pool->capacity_pages() * kPageSize;
}

// Evicted memory each side remembers for the split's weighing (memory_split.h).
uint64_t GhostBytes(const IndexContext& ctx) { return BudgetBytes(ctx) / 16; }

treeline::MemorySplit::Options SplitOptions(const IndexContext& ctx, const treeline::Config& cfg) {
  treeline::MemorySplit::Options o;
  o.total_bytes = BudgetBytes(ctx);
  o.min_pool_bytes = ctx.pool->capacity_pages() * kPageSize;
  // No record cache, no split: the pool keeps its size.
  o.max_pool_bytes = cfg.cache ? ctx.pool->max_capacity_pages() * kPageSize : o.min_pool_bytes;
  o.step_bytes = std::max<uint64_t>(kPageSize, o.total_bytes / 32);
  return o;
}

// How often the split may move, and the most it waits for evidence.
constexpr uint64_t kSplitIntervalNanos = 50'000'000;

RecordCache::Options CacheOptions(const IndexContext& ctx, const treeline::Config& cfg) {
  RecordCache::Options o;
  o.capacity_bytes = cfg.cache ? ctx.memory_bytes : 0;
  if (cfg.cache && ctx.pool->max_capacity_pages() > ctx.pool->capacity_pages()) {
    o.ghost_bytes = GhostBytes(ctx);
  }
  IndexServices* services = ctx.services;
  if (services != nullptr) o.is_blob = [services](Slice cell) { return services->HoldsBlob(cell); };
  return o;
}

treeline::InsertForecaster::Options ForecastOptions(const treeline::Config& cfg) {
  treeline::InsertForecaster::Options o;
  o.epoch_inserts = cfg.forecast_epoch;
  o.partitions = cfg.forecast_partitions;
  o.future_epochs = cfg.forecast_future_epochs;
  return o;
}

// A reorganisation of one full segment dirties some 50 pages at once; the write room is a share of
// the pool, so the pool needs a few times that.
constexpr uint64_t kMinPoolPages = 256;

Status CheckPool(const IndexContext& ctx) {
  if (ctx.pool->capacity_pages() < kMinPoolPages) {
    return Status::InvalidArgument(fmt::format(
        "cache_bytes: treeline needs a buffer pool of at least {} KiB (cache_bytes x "
        "index.params.buffer_pool_share); it has {} KiB",
        kMinPoolPages * kPageSize / 1024, ctx.pool->capacity_pages() * kPageSize / 1024));
  }
  return Status::Ok();
}

}  // namespace

VariantSpec TreeLine::Spec() {
  VariantSpec spec;
  spec.name = "treeline";
  spec.summary =
      "TreeLine: record cache with same-page batched write-back, page groups placed by linear "
      "models, overflow pages, reorganisation, insert forecasting";
  spec.params = {
      {"goal", "0.815", false,
       "records per page at reorganisation, as a share of what fits (0.05..1; the paper's 44 of "
       "54)"},
      {"epsilon", "auto", false,
       "model error as a share of what fits a page (0..0.5), or auto: (1 - goal) / 2; goal + 2 x "
       "epsilon <= 1"},
      {"grouping", "true", false, "page groups of 2..16 pages; false: every segment one page"},
      {"cache", "true", false, "the record cache; false: every write goes to its page at once"},
      {"optimistic_caching", "false", false,
       "admit the other records of a page a read fetched, at priority 1"},
      {"batched_writeback", "true", false,
       "write back every dirty record of an evicted record's page at once"},
      {"forecasting", "false", false, "insert forecasting at reorganisation"},
      {"forecast_epoch_inserts", "100000", false, "inserts per forecasting epoch"},
      {"forecast_partitions", "1000", false, "histogram partitions (b); the sample holds 10 x b"},
      {"forecast_future_epochs", "1", false,
       "epochs of inserts a reorganisation leaves room for (f)"},
      {"radius", "5", false, "neighbouring segments a reorganisation may take on each side (r)"},
      {"dirty_share", "0.5", false,
       "while more of the record cache's entries than this are dirty, the background thread "
       "writes back the pages of dirty records that went cold (priority 0); 1: only what "
       "eviction picks, as in the paper (0.05..1)"},
      {"buffer_pool_share", "0.05", false,
       "share of cache_bytes for the buffer pool (pages in flight, dirty pages, inner nodes), at "
       "least 8 MiB or a quarter of cache_bytes, whichever is less; the rest is the record cache "
       "(0.01..1). The pool starts at this share and never goes below it"},
      {"buffer_pool_max_share", "0", false,
       "share of cache_bytes the buffer pool may grow to, taking it from the record cache while "
       "more pages would save more device reads than more records (uniform reads, scans); at or "
       "below buffer_pool_share (the default, 0) the split is fixed (0..1)"},
  };
  spec.page_types = {{static_cast<uint16_t>(treeline::kDataPage), "treeline page"}};
  spec.create = &TreeLine::Create;
  spec.open = &TreeLine::Open;
  // Writes go to the record cache; without it, each write goes to its base and overflow page.
  spec.pages_per_op = [](const ParamMap& params) -> uint64_t {
    StatusOr<treeline::Config> c = treeline::ParseConfig(params);
    return c.ok() && !c->cache ? 2 : 0;
  };
  spec.buffer_pool_share = [](const ParamMap& params) -> double {
    StatusOr<treeline::Config> c = treeline::ParseConfig(params);
    return c.ok() ? c->pool_share : 1.0;
  };
  spec.buffer_pool_max_share = [](const ParamMap& params) -> double {
    StatusOr<treeline::Config> c = treeline::ParseConfig(params);
    if (!c.ok()) return 1.0;
    return c->cache ? std::max(c->pool_share, c->pool_max_share) : c->pool_share;
  };
  // A small budget keeps a pool of some size for the pages in flight of every writer and
  // write-back and the dirty pages until a checkpoint: 8 MiB, or a quarter of the budget.
  spec.min_buffer_pool_bytes = 8 << 20;
  return spec;
}

TreeLine::TreeLine(const IndexContext& ctx, const treeline::Config& cfg)
    : ctx_(ctx),
      pool_(ctx.pool),
      cfg_(cfg),
      cache_(CacheOptions(ctx, cfg)),
      forecaster_(ForecastOptions(cfg)),
      split_(SplitOptions(ctx, cfg), ctx.pool->capacity_pages() * kPageSize),
      split_pool_bytes_(split_.pool_bytes()) {}

TreeLine::~TreeLine() { Shutdown(); }

Status TreeLine::AttachCore(Slice* metadata) {
  core::TreeOptions o;
  o.name = "treeline";
  o.max_key = ctx_.options->max_key_bytes;
  o.leaf_payload_bytes = Segment::kEncodedBytes;
  if (metadata != nullptr) {
    uint32_t version;
    if (!GetVarint32(metadata, &version) || version != kMetadataVersion) {
      return Status::DataLoss("treeline metadata in the manifest is of another format version");
    }
    GROVE_ASSIGN_OR_RETURN(tree_, core::BTreeCore::Open(ctx_, o, metadata));
    uint64_t entries, segments, single, pages, overflow;
    if (!GetVarint64(metadata, &entries) || !GetVarint64(metadata, &segments) ||
        !GetVarint64(metadata, &single) || !GetVarint64(metadata, &pages) ||
        !GetVarint64(metadata, &overflow) || !metadata->empty()) {
      return Status::DataLoss("treeline metadata in the manifest is malformed");
    }
    page_entries_ = entries;
    segments_ = segments;
    segments_single_ = single;
    data_pages_ = pages;
    overflow_pages_ = overflow;
  } else {
    // An empty tree: one empty one-page segment under the root.
    GROVE_ASSIGN_OR_RETURN(const PageId page, ctx_.allocator->Allocate(1));
    auto g = pool_->NewPage(page, treeline::kDataPage);
    if (!g.ok()) {
      ctx_.allocator->Free(page, 1);
      return g.status();
    }
    treeline::DataPage::Format(g->mutable_data(), 0, 1, false);
    Segment seg;
    seg.first = page;
    GROVE_ASSIGN_OR_RETURN(tree_, core::BTreeCore::Create(ctx_, o, seg.Encode()));
  }
  bg_.Start(std::chrono::milliseconds(5), [this] { return BackgroundRound(); });
  return Status::Ok();
}

StatusOr<std::unique_ptr<Index>> TreeLine::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const treeline::Config cfg, treeline::ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckPool(ctx));
  auto t = std::unique_ptr<TreeLine>(new TreeLine(ctx, cfg));
  GROVE_RETURN_IF_ERROR(t->AttachCore(nullptr));
  return std::unique_ptr<Index>(std::move(t));
}

StatusOr<std::unique_ptr<Index>> TreeLine::Open(const IndexContext& ctx, const ParamMap& params,
                                                Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const treeline::Config cfg, treeline::ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckPool(ctx));
  auto t = std::unique_ptr<TreeLine>(new TreeLine(ctx, cfg));
  Slice in = metadata;
  GROVE_RETURN_IF_ERROR(t->AttachCore(&in));
  return std::unique_ptr<Index>(std::move(t));
}

std::string TreeLine::SerializeMetadata() {
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  tree_->Serialize(&s);
  PutVarint64(&s, page_entries_.load());
  PutVarint64(&s, segments_.load());
  PutVarint64(&s, segments_single_.load());
  PutVarint64(&s, data_pages_.load());
  PutVarint64(&s, overflow_pages_.load());
  return s;
}

treeline::BuildOptions TreeLine::BuildOptionsFor(double goal_scale) const {
  treeline::BuildOptions o;
  o.grouping = cfg_.grouping;
  o.goal_fill = cfg_.goal;
  o.epsilon_fill = cfg_.epsilon;
  o.goal_scale = goal_scale;
  o.page_capacity = treeline::kPageCapacity;
  return o;
}

void TreeLine::PageRange(const Segment& seg, int i, const core::Fences& fences, std::string* low,
                         std::string* high, bool* has_high) const {
  *low = fences.has_low ? fences.low : std::string();
  if (i > 0) {
    const std::string p = treeline::KeyAtProjection(seg.LowOf(i));
    if (p > *low) *low = p;
  }
  *has_high = fences.has_high;
  if (fences.has_high) *high = fences.high;
  if (i + 1 < seg.pages) {
    const uint64_t next = seg.LowOf(i + 1);
    if (next != UINT64_MAX) {
      const std::string p = treeline::KeyAtProjection(next);
      if (!*has_high || p < *high) {
        *high = p;
        *has_high = true;
      }
    }
  }
}

IndexStats TreeLine::GetStats() {
  IndexStats s;
  s.variant = "treeline";
  s.height = tree_->height();
  s.inner_pages = tree_->inner_pages();
  s.inner_bytes = s.inner_pages * kPageSize;
  s.leaf_pages = data_pages_.load() + overflow_pages_.load();
  s.entries = page_entries_.load();
  const RecordCache::Stats c = cache_.GetStats();
  auto& x = s.extra;
  x["segments"] = static_cast<double>(segments_.load());
  x["data_pages"] = static_cast<double>(data_pages_.load());
  x["overflow_pages"] = static_cast<double>(overflow_pages_.load());
  x["segment_efficiency"] =
      data_pages_.load() == 0
          ? 0.0
          : 1.0 - static_cast<double>(segments_single_.load()) / data_pages_.load();
  x["cache_entries"] = static_cast<double>(c.entries);
  x["cache_dirty_entries"] = static_cast<double>(c.dirty);
  x["cache_bytes"] = static_cast<double>(c.bytes);
  x["cache_capacity_bytes"] = static_cast<double>(c.capacity_bytes);
  x["buffer_pool_split_bytes"] = static_cast<double>(split_pool_bytes_.load());
  x["cache_ghost_hits_total"] =
      static_cast<double>(read_ghost_hits_.load() + cache_.write_ghost_hits());
  x["pool_ghost_hits_total"] = static_cast<double>(pool_->ghost_hits());
  x["cache_hits_total"] = static_cast<double>(c.hits);
  x["cache_misses_total"] = static_cast<double>(c.misses);
  x["cache_clean_evictions_total"] = static_cast<double>(c.clean_evictions);
  x["cache_dirty_evictions_total"] = static_cast<double>(c.dirty_evictions);
  x["cache_admissions_total"] = static_cast<double>(c.admissions);
  x["cache_admissions_dropped_total"] = static_cast<double>(c.admissions_dropped);
  x["writeback_offered_records_total"] = static_cast<double>(c.writeback_offered);
  x["writebacks_total"] = static_cast<double>(writebacks_.load());
  x["writeback_records_total"] = static_cast<double>(writeback_records_.load());
  x["records_per_writeback"] =
      writebacks_.load() == 0 ? 0.0
                              : static_cast<double>(writeback_records_.load()) / writebacks_.load();
  x["overflows_created_total"] = static_cast<double>(overflows_created_.load());
  x["reorganisations_total"] = static_cast<double>(reorganisations_.load());
  x["reorg_segments_in_total"] = static_cast<double>(reorg_segments_in_.load());
  x["reorg_segments_out_total"] = static_cast<double>(reorg_segments_out_.load());
  x["page_reads_total"] = static_cast<double>(page_reads_.load());
  x["overflow_reads_total"] = static_cast<double>(overflow_reads_.load());
  x["forecast_epochs_total"] = static_cast<double>(forecaster_.finished_epochs());
  return s;
}

bool TreeLine::TooDirty() const {
  return cfg_.cache && cfg_.dirty_share < 1.0 && cache_.DirtyShare() > cfg_.dirty_share;
}

bool TreeLine::Waiting(PageId segment) const {
  MutexLock lock(&state_mu_);
  return busy_.count(segment) > 0 || queued_.count(segment) > 0;
}

void TreeLine::Shutdown() {
  bg_.Stop();
  if (cfg_.cache || cache_.dirty_entries() > 0) WriteBackAll();
}

void TreeLine::WriteBackAll() {
  const uint64_t dirty = cache_.dirty_entries();
  if (dirty == 0) return;
  const uint64_t start = NowNanos();
  const uint64_t records_before = writeback_records_.load();
  // Sweeps in key order (neighbouring pages are written back one after another); a full segment
  // is skipped and queued, and its reorganisation runs between units (it is a unit of its own).
  // A few sweeps at most: each finds only what the sweep before had to skip.
  bool stopped = false;  // a unit could not run (closed, failed): the log keeps the rest
  for (int sweep = 0; sweep < 8 && !stopped && cache_.dirty_entries() > 0; ++sweep) {
    std::string from;
    bool end = false;
    while (!end && !stopped) {
      constexpr uint64_t kUnitPages = 16;
      Status s = ctx_.services->RunMaintenance(kUnitPages, [&](WriteRoom* room) -> Status {
        uint64_t prepaid = kUnitPages;  // reserved with the unit
        for (int n = 0; n < 256; ++n) {
          std::optional<std::string> key = cache_.NextDirtyKey(from);
          if (!key) {
            end = true;
            return Status::Ok();
          }
          GROVE_ASSIGN_OR_RETURN(const WriteBackResult r, WriteBack(*key, room, &prepaid));
          if (r == WriteBackResult::kNoRoom) return Status::Ok();  // the next unit
          // Done: the page's records are clean. Busy or full: they wait for the reorganisation.
          from = std::move(*key);
          from.push_back('\0');
        }
        return Status::Ok();
      });
      if (!s.ok()) {
        if (!s.IsUnavailable()) NoteBackgroundError("write-back at shutdown", s);
        stopped = true;
      }
    }
    if (!stopped && RunQueuedReorganisations() != ReorgResult::kDone) stopped = true;
  }
  if (ctx_.logger != nullptr) {
    const uint64_t left = cache_.dirty_entries();
    ctx_.logger->Log(
        left == 0 ? LogLevel::kInfo : LogLevel::kWarn,
        fmt::format("treeline: wrote back {} of {} dirty records at shutdown in {:.2f} s{}",
                    writeback_records_.load() - records_before, dirty,
                    static_cast<double>(NowNanos() - start) * 1e-9,
                    left == 0
                        ? ""
                        : fmt::format("; {} left for the next open to replay from the log", left)));
  }
}

bool TreeLine::BackgroundRound() {
  // Full segments first: their records wait in the cache until they are reorganised. After a
  // failure, reorganisations pause for a while (the queue keeps filling meanwhile).
  if (NowNanos() >= reorg_pause_until_ns_) {
    switch (RunQueuedReorganisations()) {
      case ReorgResult::kDone:
        break;
      case ReorgResult::kLater:
        return false;  // recovery is still replaying the log: nothing else can run either
      case ReorgResult::kFailed:
        reorg_pause_until_ns_ = NowNanos() + kReorganisationPauseNanos;
        break;
    }
  }
  Rebalance();
  return FlushRound() && (cache_.Excess() > 0 || TooDirty());  // more to do at once
}

void TreeLine::Rebalance() {
  if (!split_.adaptive()) return;
  const uint64_t now = NowNanos();
  if (now < next_split_ns_) return;
  next_split_ns_ = now + kSplitIntervalNanos;
  const uint64_t pool_ghosts = pool_->ghost_hits();
  const uint64_t cache_ghosts = read_ghost_hits_.load() + cache_.write_ghost_hits();
  const uint64_t before = split_.pool_bytes();
  // The record cache keeps room for its dirty records at dirty_share of its entries (more dirty
  // than that and the cleaning writes them back): the pool takes only the rest.
  const uint64_t dirty_bytes = cache_.dirty_entries() * cache_.BytesPerEntry();
  const uint64_t keep = static_cast<uint64_t>(static_cast<double>(dirty_bytes) / cfg_.dirty_share);
  const uint64_t ceiling = split_.total_bytes() - std::min(split_.total_bytes(), keep);
  const uint64_t pool_bytes =
      split_.Decide(pool_ghosts - split_pool_ghosts_, cache_ghosts - split_cache_ghosts_, ceiling);
  split_pool_ghosts_ = pool_ghosts;
  split_cache_ghosts_ = cache_ghosts;
  // Memory leaves one side before the other gets it: the cache gives up what it has once its
  // eviction runs (clean entries at once; dirty ones through write-backs), the pool what it can
  // evict now, and the cache is granted only what the pool holds no longer, so the two stay
  // within the budget but for the dirty records the cache is still writing back.
  if (pool_bytes > before) {
    cache_.SetCapacity(split_.cache_bytes());
    for (int i = 0; i < 64 && cache_.Excess() > 0; ++i) {
      if (cache_.Evict()) break;  // a dirty victim: FlushRound writes it back
    }
  }
  const uint64_t in_use = pool_->SetCapacityPages(pool_bytes / kPageSize) * kPageSize;
  cache_.SetCapacity(split_.total_bytes() - std::max(pool_bytes, in_use));
  split_pool_bytes_.store(pool_bytes, std::memory_order_relaxed);
}

TreeLine::ReorgResult TreeLine::RunQueuedReorganisations() {
  std::vector<ReorgTask> tasks;
  {
    MutexLock lock(&state_mu_);
    tasks.swap(reorg_queue_);
  }
  // A segment stays in queued_ (write-backs leave it alone) until its reorganisation ran: were it
  // dropped when taken from the queue, every write-back in between would offer it its range's
  // whole backlog again.
  for (size_t i = 0; i < tasks.size(); ++i) {
    const ReorgResult r = RunReorganisation(tasks[i]);
    MutexLock lock(&state_mu_);
    if (r == ReorgResult::kLater) {
      // No unit can run yet (recovery) or any more (closing): the rest wait, still queued.
      reorg_queue_.insert(reorg_queue_.end(), tasks.begin() + static_cast<std::ptrdiff_t>(i),
                          tasks.end());
      return r;
    }
    queued_.erase(tasks[i].segment);
    if (r == ReorgResult::kFailed) {
      // After a failure the rest are dropped; write-backs that find them full queue them again.
      for (size_t j = i + 1; j < tasks.size(); ++j) queued_.erase(tasks[j].segment);
      return r;
    }
  }
  return ReorgResult::kDone;
}

TreeLine::ReorgResult TreeLine::RunReorganisation(const ReorgTask& task) {
  // The unit's room starts at one full segment's worth and grows as the reorganisation learns
  // what it needs; when even waiting cannot give that much, the segment is rebuilt alone.
  constexpr uint64_t kInitialPages = 2 * treeline::kMaxSegmentPages + 8;
  uint64_t need = kInitialPages;
  int radius = cfg_.radius;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t asked = need;
    Status s = ctx_.services->RunMaintenance(
        asked, [&](WriteRoom* room) { return Reorganise(task, radius, room, &need); });
    if (s.ok()) return ReorgResult::kDone;
    if (s.IsUnavailable()) return ReorgResult::kLater;  // not open yet, closing, fail-stopped
    if (!s.IsResourceExhausted()) {
      NoteBackgroundError("reorganisation", s);
      return ReorgResult::kFailed;
    }
    if (need <= asked) {  // even `asked` can never be had: rebuild the segment alone
      if (radius == 0) break;
      radius = 0;
      need = kInitialPages;
    }
  }
  NoteBackgroundError("reorganisation",
                      Status::ResourceExhausted(fmt::format("no write room for {} pages", need)));
  return ReorgResult::kFailed;
}

bool TreeLine::FlushRound() {
  // Eviction the writers could not do, and records too old to hold the WAL back: the redo point
  // stays behind the oldest dirty record.
  const uint64_t window = std::max<uint64_t>(100000, 4 * cache_.dirty_entries());
  // Or by bytes: while the oldest dirty record keeps more than a quarter of checkpoint.wal_bytes
  // of log on disk (checked once a round: the log's mutex is the writers'), so that the log stays
  // within about checkpoint.wal_bytes whatever the record size.
  const Lsn first = cache_.OldestDirtyLsn();
  const bool log_heavy =
      first != kMaxLsn && ctx_.services != nullptr && ctx_.options != nullptr &&
      ctx_.services->LogBytesFrom(first) > ctx_.options->checkpoint.wal_bytes / 4;
  auto too_old = [&] {
    const Lsn oldest = cache_.OldestDirtyLsn();
    return oldest != kMaxLsn && (log_heavy || oldest + window < latest_lsn_.load());
  };
  // Cold dirty records hold memory that reads could use: cleaned while too many are dirty.
  if (cache_.Excess() == 0 && !too_old() && !TooDirty()) return false;
  // The round's victims are chosen first and their base pages read with one IO submission
  // (PrefetchBasePages), so that the write-backs find them in the pool instead of one thread
  // reading a page per write-back at queue depth 1 (at 1 KiB records a write-back carries 1-2
  // records, so most of them read a page). The descents are repeated by the write-backs; inner
  // nodes are cached, the page reads are what the batch saves.
  std::vector<std::string> victims;
  std::set<std::string> chosen;
  for (size_t n = 0; n < 2 * kWriteBackBatch && victims.size() < kWriteBackBatch; ++n) {
    std::optional<std::string> victim = cache_.Evict();
    if (!victim && too_old()) victim = cache_.OldestDirtyKey();
    if (!victim && TooDirty()) victim = cache_.ColdDirtyKey(kColdSteps);
    if (!victim) break;
    if (!chosen.insert(*victim).second) break;  // the same again: nothing more to find now
    victims.push_back(std::move(*victim));
  }
  if (victims.empty()) return false;
  PrefetchBasePages(victims);
  int written = 0;
  constexpr uint64_t kUnitPages = 8;
  Status s = ctx_.services->RunMaintenance(kUnitPages, [&](WriteRoom* room) -> Status {
    uint64_t prepaid = kUnitPages;  // reserved with the unit
    for (const std::string& victim : victims) {
      // An earlier write-back of the round may have taken it with its page.
      const std::optional<std::string> still = cache_.NextDirtyKey(victim);
      if (!still || *still != victim) continue;
      GROVE_ASSIGN_OR_RETURN(const WriteBackResult r, WriteBack(victim, room, &prepaid));
      if (r != WriteBackResult::kDone) break;  // the next round, after reorganisations
      ++written;
    }
    return Status::Ok();
  });
  if (!s.ok() && !s.IsUnavailable()) NoteBackgroundError("write-back", s);
  return written > 0;
}

}  // namespace grove
