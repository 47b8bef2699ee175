#include "predict/path_predictor.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/clock.h"

namespace grove::predict {

// The published, immutable models. Segment hit counters are the only mutable part (atomics).
struct LevelModel {
  bool valid = false;
  uint64_t nodes = 0;
  // SHORTCUT
  std::vector<learned::LinearSegment> segments;
  PhantomMap map;
  std::unique_ptr<std::atomic<uint32_t>[]> seg_hits, seg_total;
  std::unique_ptr<std::atomic<bool>[]> seg_off;
  // SHORTCUT-BASE
  std::vector<uint64_t> keys;
  std::vector<PageId> pages;
};

struct ModelState {
  std::vector<LevelModel> levels;  // index = node level
};

PathPredictor::PathPredictor(const ShortcutOptions& options, SnapshotFn snapshot, Logger* logger)
    : options_(options), snapshot_(std::move(snapshot)), logger_(logger) {
  Publish(std::make_shared<const ModelState>());
  if (options_.update == UpdateMode::kBatch) {
    background_ = std::thread([this] { BackgroundLoop(); });
  }
}

PathPredictor::~PathPredictor() {
  {
    MutexLock lock(&stash_mu_);
    stop_ = true;
    stash_cv_.SignalAll();
  }
  if (background_.joinable()) background_.join();
}

void PathPredictor::Predict(uint64_t key, Prediction* out) const {
  out->state = LoadState();
  const ModelState& st = *out->state;
  out->levels = static_cast<int>(std::min<size_t>(st.levels.size(), kMaxLevels));
  for (int l = 0; l < out->levels; ++l) {
    out->pages[l] = 0;
    const LevelModel& m = st.levels[l];
    if (!m.valid || m.nodes == 0 || rebuilding_[l].load(std::memory_order_relaxed)) continue;
    if (options_.mode == PrefetchMode::kBase) {
      auto it = std::upper_bound(m.keys.begin(), m.keys.end(), key);
      const size_t rank = it == m.keys.begin() ? 0 : static_cast<size_t>(it - m.keys.begin()) - 1;
      out->pages[l] = m.pages[rank];
      continue;
    }
    const size_t s = learned::FindSegment(m.segments, key);
    if (m.seg_off[s].load(std::memory_order_relaxed)) continue;
    out->segments[l] = static_cast<uint32_t>(s);
    out->pages[l] = m.map.PageAt(m.segments[s].Predict(key));
  }
}

void PathPredictor::Feedback(const Prediction& p, const std::array<PageId, kMaxLevels>& actual,
                             const std::array<bool, kMaxLevels>& issued) {
  if (!p.state) return;
  const ModelState& st = *p.state;
  for (int l = 0; l < p.levels; ++l) {
    if (p.pages[l] == 0 || actual[l] == 0) continue;
    const bool hit = p.pages[l] == actual[l];
    Counters& c = counters_[l];
    c.predictions.fetch_add(1, std::memory_order_relaxed);
    if (hit) c.correct.fetch_add(1, std::memory_order_relaxed);
    if (issued[l]) (hit ? c.used : c.wasted).fetch_add(1, std::memory_order_relaxed);
    if (options_.mode != PrefetchMode::kShortcut) continue;
    const LevelModel& m = st.levels[l];
    const uint32_t s = p.segments[l];
    const uint32_t total = m.seg_total[s].fetch_add(1, std::memory_order_relaxed) + 1;
    const uint32_t hits = m.seg_hits[s].fetch_add(hit ? 1 : 0, std::memory_order_relaxed) + hit;
    if (total >= options_.accuracy_window) {
      // Judge the window, then start a new one. Races between threads only blur the window edge.
      if (static_cast<double>(hits) < options_.min_accuracy * total) {
        m.seg_off[s].store(true, std::memory_order_relaxed);
      }
      m.seg_total[s].store(0, std::memory_order_relaxed);
      m.seg_hits[s].store(0, std::memory_order_relaxed);
    }
  }
}

std::shared_ptr<const ModelState> PathPredictor::Train(const TreeSnapshot& snap,
                                                       const std::vector<PhantomMap>* maps) const {
  auto st = std::make_shared<ModelState>();
  st->levels.resize(std::min<size_t>(snap.levels.size(), kMaxLevels));
  for (size_t l = 0; l < st->levels.size(); ++l) {
    const LevelSnapshot& ls = snap.levels[l];
    LevelModel& m = st->levels[l];
    m.nodes = ls.pages.size();
    if (m.nodes == 0) continue;
    // Distinct, ascending keys: nodes whose lower fences share their first 8 bytes are told apart
    // by nudging the projection up by one (they are not separable by the model anyway).
    std::vector<uint64_t> keys = ls.low_keys;
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i] <= keys[i - 1])
        keys[i] = keys[i - 1] == UINT64_MAX ? UINT64_MAX : keys[i - 1] + 1;
    }
    if (options_.mode == PrefetchMode::kBase) {
      m.keys = std::move(keys);
      m.pages = ls.pages;
    } else {
      m.segments = learned::FitSegments(keys, options_.epsilon);
      const size_t n = m.segments.size();
      m.seg_hits.reset(new std::atomic<uint32_t>[n]());
      m.seg_total.reset(new std::atomic<uint32_t>[n]());
      m.seg_off.reset(new std::atomic<bool>[n]());
      m.map = (maps != nullptr && l < maps->size() && (*maps)[l].size() == m.nodes)
                  ? (*maps)[l]
                  : PhantomMap::FromPages(ls.pages);
    }
    m.valid = true;
  }
  return st;
}

void PathPredictor::Publish(std::shared_ptr<const ModelState> state) {
  state_mu_.Lock();
  state_.swap(state);
  state_mu_.Unlock();
  // The old state (now in `state`) is released here, outside the lock.
}

std::shared_ptr<const ModelState> PathPredictor::LoadState() const {
  state_mu_.LockShared();
  std::shared_ptr<const ModelState> s = state_;
  state_mu_.UnlockShared();
  return s;
}

Status PathPredictor::Rebuild() {
  MutexLock lock(&rebuild_mu_);
  const uint64_t t0 = NowNanos();
  {
    MutexLock stash(&stash_mu_);
    stash_.clear();
    pending_.fill(0);
    shape_changed_ = false;
  }
  TreeSnapshot snap;
  GROVE_RETURN_IF_ERROR(snapshot_(&snap));
  Publish(Train(snap, nullptr));
  const uint64_t dt = NowNanos() - t0;
  retrains_.fetch_add(1);
  retrain_nanos_.fetch_add(dt);
  last_retrain_nanos_.store(dt);
  for (auto& r : rebuilding_) r.store(false);
  return Status::Ok();
}

Status PathPredictor::RunBatch() {
  MutexLock lock(&rebuild_mu_);
  const uint64_t t0 = NowNanos();
  std::vector<Change> changes;
  bool full;
  {
    MutexLock stash(&stash_mu_);
    changes.swap(stash_);  // changes from now on queue up for the next batch
    pending_.fill(0);
    full = shape_changed_;
    shape_changed_ = false;
    batch_wanted_ = false;
  }
  std::array<bool, kMaxLevels> affected{};
  for (const Change& c : changes) affected[c.level] = true;
  if (full) affected.fill(true);
  for (int l = 0; l < kMaxLevels; ++l) {
    if (affected[l]) rebuilding_[l].store(true);
  }

  // Insert-range / collapse-range on the affected maps, then retrain from a fresh collection of
  // boundary keys. The collection is the ground truth: where it disagrees with the updated map
  // (changes that raced the collection), the map is repaired from it.
  std::shared_ptr<const ModelState> cur = LoadState();
  std::vector<PhantomMap> maps;
  if (options_.mode == PrefetchMode::kShortcut && !full) {
    for (const LevelModel& m : cur->levels) maps.push_back(m.map);
    for (const Change& c : changes) {
      if (static_cast<size_t>(c.level) >= maps.size()) continue;
      PhantomMap& map = maps[c.level];
      const PageId anchor = c.split ? c.original : c.page;
      uint64_t rank = UINT64_MAX;
      for (const auto& e : map.extent_list()) {
        if (anchor >= e.first_page && anchor < e.first_page + e.length) {
          rank = e.first_rank + (anchor - e.first_page);
          break;
        }
      }
      if (rank == UINT64_MAX) continue;  // the node appeared after the last build
      if (c.split) {
        map.InsertAt(rank + 1, c.page);
      } else {
        map.RemoveAt(rank);
      }
    }
  }
  TreeSnapshot snap;
  Status s = snapshot_(&snap);
  if (s.ok()) {
    for (size_t l = 0; l < maps.size() && l < snap.levels.size(); ++l) {
      const auto& pages = snap.levels[l].pages;
      bool same = maps[l].size() == pages.size();
      for (uint64_t r = 0; same && r < pages.size(); ++r) same = maps[l].PageAt(r) == pages[r];
      if (!same) {
        maps[l] = PhantomMap::FromPages(pages);
        map_repairs_.fetch_add(1);
      }
    }
    Publish(Train(snap, maps.empty() ? nullptr : &maps));
  }
  for (int l = 0; l < kMaxLevels; ++l) rebuilding_[l].store(false);
  const uint64_t dt = NowNanos() - t0;
  retrains_.fetch_add(1);
  retrain_nanos_.fetch_add(dt);
  last_retrain_nanos_.store(dt);
  return s;
}

void PathPredictor::OnSplit(int level, PageId original, PageId created) {
  Enqueue({level, original, created, true});
}

void PathPredictor::OnMerge(int level, PageId removed) { Enqueue({level, 0, removed, false}); }

void PathPredictor::Enqueue(const Change& change) {
  if (options_.update == UpdateMode::kNever || change.level >= kMaxLevels) return;
  MutexLock lock(&stash_mu_);
  stash_.push_back(change);
  const auto st = LoadState();
  const uint64_t nodes =
      static_cast<size_t>(change.level) < st->levels.size() ? st->levels[change.level].nodes : 0;
  if (++pending_[change.level] >= std::max<double>(1, options_.retrain_fraction * nodes)) {
    batch_wanted_ = true;
    stash_cv_.Signal();
  }
}

void PathPredictor::OnShapeChange() {
  if (options_.update == UpdateMode::kNever) return;
  for (auto& r : rebuilding_) r.store(true);  // level numbers below the root moved
  MutexLock lock(&stash_mu_);
  shape_changed_ = true;
  batch_wanted_ = true;
  stash_cv_.Signal();
}

void PathPredictor::BackgroundLoop() {
  for (;;) {
    {
      MutexLock lock(&stash_mu_);
      while (!stop_ && !batch_wanted_) stash_cv_.Wait();
      if (stop_) return;
    }
    Status s = RunBatch();
    if (!s.ok() && logger_ != nullptr) {
      logger_->Log(LogLevel::kWarn,
                   "shortcut: retraining failed, retrying at the next batch: " + s.ToString());
    }
  }
}

PredictorStats PathPredictor::GetStats() const {
  PredictorStats s;
  const auto st = LoadState();
  s.levels.resize(st->levels.size());
  for (size_t l = 0; l < st->levels.size() && l < kMaxLevels; ++l) {
    const LevelModel& m = st->levels[l];
    LevelStats& ls = s.levels[l];
    ls.nodes = m.nodes;
    ls.segments = m.segments.size();
    ls.extents = m.map.extents();
    for (size_t i = 0; i < m.segments.size(); ++i) ls.segments_off += m.seg_off[i].load();
    const Counters& c = counters_[l];
    ls.predictions = c.predictions.load();
    ls.correct = c.correct.load();
    ls.issued = c.used.load() + c.wasted.load();
    ls.used = c.used.load();
    ls.wasted = c.wasted.load();
    s.model_bytes +=
        m.segments.size() * (sizeof(learned::LinearSegment) + 9) + m.keys.size() * sizeof(uint64_t);
    s.map_bytes += m.map.MemoryBytes() + m.pages.size() * sizeof(PageId);
  }
  s.retrains = retrains_.load();
  s.retrain_seconds_total = static_cast<double>(retrain_nanos_.load()) * 1e-9;
  s.last_retrain_seconds = static_cast<double>(last_retrain_nanos_.load()) * 1e-9;
  s.map_repairs = map_repairs_.load();
  MutexLock lock(const_cast<Mutex*>(&stash_mu_));
  for (uint64_t p : pending_) s.pending_changes += p;
  return s;
}

}  // namespace grove::predict
