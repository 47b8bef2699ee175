// AHA-tree background work: freezing and flushing memtables, leveled compaction of the root
// buffer (and of node buffers' level 0), and the scheduling of the tree's work (aha_tree.cc). One
// thread does it all, in maintenance units that are short: each output run is allocated and written
// in a unit of its own, and a flush or compaction becomes visible in one final unit that installs
// its outputs, retires its inputs and releases the cells it dropped. Merging and reading inputs
// happen outside units, so checkpoints never wait for a whole compaction.

#include <algorithm>

#include <fmt/format.h>

#include "index/aha/aha.h"
#include "index/aha/merge.h"
#include "util/clock.h"

namespace grove {

using aha::Entry;
using aha::Level;
using aha::Run;
using aha::Version;

namespace {

// A memtable whose oldest record is this many records behind the newest is flushed even when not
// full, so that recovery replays a bounded number of records ...
constexpr uint64_t kWalWindowRecords = 200000;
// ... and one that keeps more than this share of checkpoint.wal_bytes of log on disk, so that the
// log stays within checkpoint.wal_bytes: the checkpoint after the flush moves the redo point past
// it (overwrites of a small working set never fill a memtable, and records of large values
// pass any record count's bytes).
constexpr double kWalShare = 0.25;
// After a failure, background work pauses this long (a failing disk would otherwise be retried in
// a busy loop).
constexpr auto kErrorPause = std::chrono::milliseconds(200);
// Writes that stopped this long ago leave the memtable to adaptation (FindAdaptWork).
constexpr uint64_t kQuietNanos = 20'000'000;

bool SameRun(const std::shared_ptr<const Run>& a, const std::shared_ptr<const Run>& b) {
  return a.get() == b.get();
}

void EraseRuns(std::vector<std::shared_ptr<const Run>>* runs,
               const std::vector<std::shared_ptr<const Run>>& gone) {
  std::erase_if(*runs, [&](const std::shared_ptr<const Run>& r) {
    return std::any_of(gone.begin(), gone.end(),
                       [&](const std::shared_ptr<const Run>& g) { return SameRun(r, g); });
  });
}

void SortByKey(std::vector<std::shared_ptr<const Run>>* runs) {
  std::sort(runs->begin(), runs->end(),
            [](const auto& a, const auto& b) { return a->meta().min_key < b->meta().min_key; });
}

}  // namespace

void AhaTree::Shutdown() {
  bg_.Stop();
  // A clean stop leaves nothing to replay: the memtables are written into runs (writes are
  // refused by now; maintenance units still run). When units cannot run (an open that failed,
  // a fail-stop), or a flush fails, the log keeps the rest.
  if (ctx_.services == nullptr ||
      !ctx_.services->RunMaintenance(0, [](WriteRoom*) { return Status::Ok(); }).ok()) {
    return;
  }
  Status s = Freeze();
  for (int i = 0; s.ok() && i < 4 && !current()->frozen.empty(); ++i) s = FlushOldest();
  if (!s.ok() && !s.IsUnavailable()) NoteBackgroundError("flush at shutdown", s);
}

bool AhaTree::HoldsTooMuchLog(Lsn first) const {
  if (first == kMaxLsn) return false;
  if (first + kWalWindowRecords < latest_lsn_.load()) return true;
  if (ctx_.services == nullptr || ctx_.options == nullptr) return false;
  return static_cast<double>(ctx_.services->LogBytesFrom(first)) >
         kWalShare * static_cast<double>(ctx_.options->checkpoint.wal_bytes);
}

bool AhaTree::BackgroundRound() {
  StatusOr<bool> did = Step();
  if (!did.ok()) {
    // Unavailable: not open yet (recovery replays the WAL first), closing or fail-stopped;
    // Shutdown ends the loop.
    if (!did.status().IsUnavailable()) NoteBackgroundError("background step", did.status());
    bg_.Pause(kErrorPause);
    return false;
  }
  if (*did) bg_steps_.fetch_add(1);
  return *did;
}

StatusOr<bool> AhaTree::Step() {
  const Snapshot snap = TakeSnapshot();
  const uint64_t entries = snap.active->entries();
  const Lsn first = snap.active->first_lsn();
  const bool full = snap.active->bytes() >= FreezeBytes();
  const bool old = entries > 0 && HoldsTooMuchLog(first);
  if ((full || old) && snap.version->frozen.size() < 2) {
    GROVE_RETURN_IF_ERROR(Freeze());
    return true;
  }
  if (!snap.version->frozen.empty()) {
    GROVE_RETURN_IF_ERROR(FlushOldest());
    return true;
  }
  // The root's level 0 first (writers wait on it); otherwise root compactions, work on the nodes
  // below and adaptation take turns, so none starves the others.
  const int level = PickCompaction(*snap.version);
  if (level == 0) return RootStep(*snap.version, level);
  NodeWork work;
  if (tree_work_) {
    work = FindNodeWork(*snap.version);
    if (work.kind == NodeWorkKind::kNone) tree_work_ = false;
  }
  AdaptWork adapt;
  std::vector<aha::HotRange> hot;
  const bool eager = cfg_.adapt == aha::Config::Adapt::kEager;
  if (cfg_.adapt != aha::Config::Adapt::kOff && (eager || adapt_requested_.load())) {
    hot = HotRanges();
    // Writes are quiet when no write came for kQuietNanos.
    const uint64_t now = NowNanos();
    if (const Lsn lsn = latest_lsn_.load(); lsn != quiet_lsn_) {
      quiet_lsn_ = lsn;
      quiet_since_ns_ = now;
    }
    adapt = FindAdaptWork(snap, hot, now - quiet_since_ns_ >= kQuietNanos);
    if (adapt.kind == AdaptKind::kNone) {
      // Converged: every buffer on the hot ranges is empty and their leaves are pages.
      adapt_requested_ = false;
      if (adapting_.exchange(false)) {
        const uint64_t us = (NowNanos() - adapt_start_ns_.load()) / 1000;
        if (adaptations_.fetch_add(1, std::memory_order_relaxed) == 0) first_adaptation_us_ = us;
        last_adaptation_us_ = us;
        adaptation_us_total_.fetch_add(us, std::memory_order_relaxed);
      }
    } else if (!adapting_.exchange(true)) {
      adapt_start_ns_ = NowNanos();
    }
  }
  const bool has[3] = {level > 0, work.kind != NodeWorkKind::kNone, adapt.kind != AdaptKind::kNone};
  for (int k = 0; k < 3; ++k) {
    const int which = (turn_ + k) % 3;
    if (!has[which]) continue;
    turn_ = (which + 1) % 3;
    if (which == 0) return RootStep(*snap.version, level);
    if (which == 1) {
      GROVE_RETURN_IF_ERROR(DoNodeWork(work));
    } else {
      GROVE_RETURN_IF_ERROR(DoAdaptWork(adapt, hot));
    }
    return true;
  }
  return false;
}

StatusOr<bool> AhaTree::RootStep(const Version& v, int level) {
  if (static_cast<size_t>(level) + 1 == v.root->levels.size()) {
    GROVE_RETURN_IF_ERROR(EmptyLevel({}));
  } else {
    GROVE_RETURN_IF_ERROR(Compact({}, static_cast<size_t>(level)));
  }
  return true;
}

Status AhaTree::Freeze() {
  WriterLock lock(&mem_mu_);
  if (active_->entries() == 0) return Status::Ok();
  auto next = std::make_shared<Version>(*current());
  next->frozen.insert(next->frozen.begin(), active_);
  active_ = std::make_shared<aha::MemTable>();
  active_bytes_.store(0, std::memory_order_relaxed);
  Publish(std::move(next));
  return Status::Ok();
}

Status AhaTree::FlushOldest() {
  const auto v = current();
  if (v->frozen.empty()) return Status::Ok();
  const std::shared_ptr<const aha::MemTable> table = v->frozen.back();
  std::vector<std::unique_ptr<aha::Source>> sources;
  std::vector<DirectLeaf> direct;
  if (cfg_.tree_insert && !v->root->leaf()) {
    std::vector<Entry> rest;
    GROVE_RETURN_IF_ERROR(SplitForTreeInsert(*v, table, &rest, &direct));
    sources.push_back(aha::NewVectorSource(std::move(rest)));
  } else {
    sources.push_back(aha::NewMemTableSource(table, "", true, false));
  }
  // Runs are cut at the hot bounds, so that none straddles a hot range it holds no key of: a
  // search there would probe it, and adaptation would have to cut it.
  std::vector<std::string> hot_bounds;
  for (const aha::HotRange& h : HotRanges()) {
    hot_bounds.push_back(h.lo);
    hot_bounds.push_back(h.hi);
  }
  std::sort(hot_bounds.begin(), hot_bounds.end());
  std::vector<std::shared_ptr<const Run>> out;
  std::vector<std::string> released;  // one source: nothing is shadowed
  std::vector<aha::PageExtent> extents;
  aha::LeafPages retired;
  std::vector<aha::LeafPages> pages(direct.size());
  Status s = WriteRuns(std::move(sources), /*bottom=*/false,
                       hot_bounds.empty() ? nullptr : &hot_bounds, &out, &released);
  // Tree insert: the rest merged into the adapted leaves' pages, copy-on-write.
  for (size_t i = 0; i < direct.size() && s.ok(); ++i) {
    aha::PageMerger merger(pool_, aha::NodeAt(*v->root, direct[i].path).pages,
                           IoCause::kCompaction);
    for (const Entry& e : direct[i].entries) {
      s = merger.Add(e);
      if (!s.ok()) break;
    }
    if (!s.ok()) break;
    s = ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
      return merger.Finish(&space_, ctx_.direct_writer, &pages[i], &retired, &extents, &released);
    });
  }
  if (!s.ok()) {
    AbandonOutputs(out);
    AbandonPages(extents);
    return s;
  }
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        std::erase_if(next->frozen, [&](const auto& t) { return t.get() == table.get(); });
        auto& l0 = aha::CopyPath(&next->root, {})[0]->levels[0].runs;
        l0.insert(l0.begin(), out.begin(), out.end());
        for (size_t i = 0; i < direct.size(); ++i) {
          aha::CopyPath(&next->root, direct[i].path).back()->pages = pages[i];
        }
      },
      out, {}, released, extents, retired));
  flushes_.fetch_add(1, std::memory_order_relaxed);
  for (const auto& r : out) flush_bytes_.fetch_add(r->meta().pages * kPageSize);
  if (!direct.empty()) {
    for (const DirectLeaf& d : direct) tree_inserts_.fetch_add(d.entries.size());
    tree_insert_merges_.fetch_add(direct.size(), std::memory_order_relaxed);
    cells_released_.fetch_add(released.size(), std::memory_order_relaxed);
    tree_work_ = true;  // a leaf may have grown past its pages' limit
  }
  return Status::Ok();
}

int AhaTree::PickCompaction(const Version& v) const {
  const auto& levels = v.root->levels;
  double best = 1.0;
  int level = -1;
  const double l0 = static_cast<double>(levels[0].runs.size()) / cfg_.l0_runs;
  if (l0 >= best) {
    best = l0;
    level = 0;
  }
  for (size_t l = 1; l < levels.size(); ++l) {
    const double score =
        static_cast<double>(levels[l].pages()) / static_cast<double>(LevelLimitPages(l));
    if (score >= best) {
      best = score;
      level = static_cast<int>(l);
    }
  }
  return level;
}

Status AhaTree::Compact(const aha::Path& path, size_t from) {
  const auto v = current();
  const aha::Node& node = aha::NodeAt(*v->root, path);
  const std::vector<std::string> guards = Guards(node, aha::RangeAt(*v->root, path));
  const size_t to = from + 1;
  std::vector<std::shared_ptr<const Run>> upper;  // inputs from `from`, freshest first
  if (from == 0) {
    upper = node.levels[0].runs;
  } else {
    // Round robin over the level's key space, as LevelDB's compaction pointer does (the root's
    // levels only: below the root, only level 0 is compacted).
    const auto& runs = node.levels[from].runs;
    std::string& pointer = compact_pointer_[from];
    auto it = std::find_if(runs.begin(), runs.end(),
                           [&](const auto& r) { return r->meta().min_key > pointer; });
    if (it == runs.end()) it = runs.begin();
    upper.push_back(*it);
    pointer = (*it)->meta().min_key;
  }
  if (upper.empty()) return Status::Ok();
  std::string lo = upper[0]->meta().min_key, hi = upper[0]->meta().max_key;
  for (const auto& r : upper) {
    lo = std::min(lo, r->meta().min_key);
    hi = std::max(hi, r->meta().max_key);
  }
  std::vector<std::shared_ptr<const Run>> lower;
  for (const auto& r : node.levels[to].runs) {
    if (r->meta().max_key >= lo && r->meta().min_key <= hi) lower.push_back(r);
  }
  // Tombstones go where nothing older can lie below: the last level of a leaf without pages.
  const bool bottom = to + 1 == node.levels.size() && node.leaf() && !node.adapted();
  const bool moved = from > 0 && lower.empty();  // a trivial move: nothing to merge with

  std::vector<std::shared_ptr<const Run>> out, retired;
  std::vector<std::string> released;
  uint64_t read_bytes = 0;
  if (moved) {
    out = upper;
  } else {
    std::vector<std::unique_ptr<aha::Source>> sources;
    for (const auto& r : upper) {
      sources.push_back(
          aha::NewRunSource(pool_, r, "", true, false, IoCause::kCompaction, cfg_.run_pages));
      read_bytes += r->meta().data_pages * kPageSize;
    }
    if (!lower.empty()) {
      for (const auto& r : lower) read_bytes += r->meta().data_pages * kPageSize;
      sources.push_back(
          aha::NewLevelSource(pool_, lower, "", true, false, IoCause::kCompaction, cfg_.run_pages));
    }
    if (Status s = WriteRuns(std::move(sources), bottom, &guards, &out, &released); !s.ok()) {
      AbandonOutputs(out);  // the runs written before the failure
      return s;
    }
    retired = upper;
    retired.insert(retired.end(), lower.begin(), lower.end());
  }
  const std::vector<std::shared_ptr<const Run>> none;
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        aha::Node* n = aha::CopyPath(&next->root, path).back();
        EraseRuns(&n->levels[from].runs, upper);
        EraseRuns(&n->levels[to].runs, lower);
        auto& dst = n->levels[to].runs;
        dst.insert(dst.end(), out.begin(), out.end());
        SortByKey(&dst);
      },
      moved ? none : out, retired, released));
  if (!path.empty()) {
    node_compactions_.fetch_add(1, std::memory_order_relaxed);
    tree_work_ = true;
  } else {
    compactions_.fetch_add(1, std::memory_order_relaxed);
  }
  cells_released_.fetch_add(released.size(), std::memory_order_relaxed);
  if (!moved) {
    compaction_bytes_read_.fetch_add(read_bytes, std::memory_order_relaxed);
    for (const auto& r : out) {
      compaction_bytes_written_.fetch_add(r->meta().pages * kPageSize, std::memory_order_relaxed);
    }
  }
  return Status::Ok();
}

Status AhaTree::WriteRuns(std::vector<std::unique_ptr<aha::Source>> sources, bool bottom,
                          const std::vector<std::string>* guards,
                          std::vector<std::shared_ptr<const Run>>* out,
                          std::vector<std::string>* released) {
  aha::MergingIterator merge(std::move(sources), false, /*keep_shadowed=*/true);
  const aha::RunOptions options{cfg_.run_pages, cfg_.bloom_bits_per_key};
  aha::RunBuilder builder(options);
  uint64_t dropped = 0;
  // The first guard above the run being built: a run never spans one (guarded compaction).
  const std::string* next_guard = nullptr;
  for (; merge.Valid(); merge.Next()) {
    for (const Entry& old : merge.shadowed()) {
      if (!old.tombstone) released->push_back(old.cell);
    }
    const Entry& e = merge.entry();
    if (bottom && e.tombstone) {  // nothing older lies below
      ++dropped;
      continue;
    }
    const bool crosses = next_guard != nullptr && Slice(e.key).compare(*next_guard) >= 0;
    if (!builder.empty() && (crosses || !builder.Fits(e))) {
      GROVE_RETURN_IF_ERROR(FinishRun(&builder, out, /*in_unit=*/true));
      builder = aha::RunBuilder(options);
    }
    if (builder.empty() && guards != nullptr) {
      auto it = std::upper_bound(guards->begin(), guards->end(), e.key);
      next_guard = it == guards->end() ? nullptr : &*it;
    }
    builder.Add(e);
  }
  GROVE_RETURN_IF_ERROR(merge.status());
  if (!builder.empty()) GROVE_RETURN_IF_ERROR(FinishRun(&builder, out, /*in_unit=*/true));
  tombstones_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  return Status::Ok();
}

Status AhaTree::Install(const std::function<void(Version*)>& edit,
                        const std::vector<std::shared_ptr<const Run>>& outputs,
                        const std::vector<std::shared_ptr<const Run>>& retired,
                        const std::vector<std::string>& released,
                        const std::vector<aha::PageExtent>& page_extents,
                        const aha::LeafPages& retired_pages) {
  Status s = ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
    auto next = std::make_shared<Version>(*current());
    edit(next.get());
    for (const auto& r : outputs) space_.Installed(*r);
    for (const auto& r : retired) space_.Retire(r);
    for (const auto& [first, pages] : page_extents) space_.Installed(first);
    for (const auto& p : retired_pages) space_.Retire(p, p->id, 1);
    for (const std::string& cell : released) ctx_.services->ReleaseCell(cell);
    Publish(std::move(next));
    return Status::Ok();
  });
  if (!s.ok()) {
    AbandonOutputs(outputs);
    AbandonPages(page_extents);
  }
  return s;
}

void AhaTree::AbandonPages(const std::vector<aha::PageExtent>& extents) {
  if (extents.empty()) return;
  Status s = ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
    for (const auto& [first, pages] : extents) space_.Abandon(first, pages);
    return Status::Ok();
  });
  if (!s.ok() && !s.IsUnavailable()) NoteBackgroundError("freeing unused leaf pages", s);
}

Status AhaTree::FinishRun(aha::RunBuilder* builder, std::vector<std::shared_ptr<const Run>>* out,
                          bool in_unit) {
  auto finish = [&]() -> Status {
    auto run = builder->Finish(&space_, ctx_.direct_writer,
                               in_unit ? IoCause::kCompaction : IoCause::kBulkLoad);
    if (!run.ok()) return run.status();
    out->push_back(std::move(*run));
    return Status::Ok();
  };
  // The extent is allocated inside a unit, so that a checkpoint's allocator state and its list of
  // runs in flight always agree (run_space.h). A bulk load runs alone: no unit is needed or
  // possible there.
  if (!in_unit) return finish();
  return ctx_.services->RunMaintenance(0, [&](WriteRoom*) { return finish(); });
}

void AhaTree::AbandonOutputs(const std::vector<std::shared_ptr<const Run>>& outputs) {
  if (outputs.empty()) return;
  // Freed inside a unit for the same reason they were allocated in one. When no unit can run
  // (closing), they stay in flight: the final checkpoint lists them and a reopen frees them.
  Status s = ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
    for (const auto& r : outputs) space_.Abandon(r->meta().first, r->meta().pages);
    return Status::Ok();
  });
  if (!s.ok() && !s.IsUnavailable()) NoteBackgroundError("freeing unused runs", s);
}

void AhaTree::NoteBackgroundError(const char* what, const Status& s) {
  if (ctx_.logger == nullptr || !error_log_.Allow()) return;
  ctx_.logger->Log(LogLevel::kWarn,
                   fmt::format("aha: {} failed (the memtables keep their records and the work is "
                               "retried): {}",
                               what, s.ToString()));
}

}  // namespace grove
