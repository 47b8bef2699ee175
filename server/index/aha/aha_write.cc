// AHA-tree writes: the memtable, admission control, and bulk loads into the bottom level.

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "index/aha/aha.h"
#include "util/clock.h"

namespace grove {

using aha::Entry;
using aha::Run;
using aha::Version;

Status AhaTree::Put(const WriteContext& w, Slice key, Slice cell,
                    std::optional<std::string>* old_cell) {
  return Write(w, key, false, cell, old_cell);
}

Status AhaTree::Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) {
  return Write(w, key, true, Slice(), old_cell);
}

Status AhaTree::Write(const WriteContext& w, Slice key, bool tombstone, Slice cell,
                      std::optional<std::string>* old_cell) {
  uint64_t bytes;
  {
    ReaderLock lock(&mem_mu_);
    *old_cell = active_->Put(key, w.lsn, tombstone, cell, &bytes);
    // Under the lock, so that Freeze's reset is never overwritten by a write to the old table.
    active_bytes_.store(bytes, std::memory_order_relaxed);
  }
  Lsn seen = latest_lsn_.load(std::memory_order_relaxed);
  while (w.lsn > seen && !latest_lsn_.compare_exchange_weak(seen, w.lsn)) {
  }
  if (bytes >= FreezeBytes()) bg_.Kick();
  return Status::Ok();
}

Status AhaTree::SplitForTreeInsert(const Version& v, std::shared_ptr<const aha::MemTable> table,
                                   std::vector<Entry>* rest, std::vector<DirectLeaf>* direct) {
  std::unique_ptr<aha::Source> src = aha::NewMemTableSource(std::move(table), "", true, false);
  std::vector<const aha::Node*> nodes;  // the key's path, root first
  aha::Path path;
  Entry older;
  for (; src->Valid(); src->Next()) {
    const Entry& e = src->entry();
    nodes.assign(1, v.root.get());
    path.clear();
    while (!nodes.back()->leaf()) {
      path.push_back(nodes.back()->ChildFor(e.key));
      nodes.push_back(nodes.back()->children[path.back()].get());
    }
    bool to_pages = nodes.back()->adapted();
    // Any older version in a buffer on the path (Bloom filters answer most keys) keeps this one
    // in the buffers: below it, in the pages, it would be shadowed by the older one.
    for (size_t d = 0; d < nodes.size() && to_pages; ++d) {
      for (size_t l = 0; l < nodes[d]->levels.size() && to_pages; ++l) {
        const aha::Level& level = nodes[d]->levels[l];
        std::vector<const Run*> candidates;
        if (l == 0) {
          for (const auto& r : level.runs) candidates.push_back(r.get());
        } else if (const Run* r = level.RunFor(e.key); r != nullptr) {
          candidates.push_back(r);
        }
        for (const Run* r : candidates) {
          bool filtered = false;
          GROVE_ASSIGN_OR_RETURN(const bool found,
                                 r->Get(pool_, e.key, &older, &filtered, IoCause::kCompaction));
          if (found) {
            to_pages = false;
            break;
          }
        }
      }
    }
    if (!to_pages) {
      rest->push_back(e);
      continue;
    }
    if (direct->empty() || direct->back().path != path) direct->push_back({path, {}});
    direct->back().entries.push_back(e);
  }
  return src->status();
}

Status AhaTree::Prepare(Slice key) {
  // Admission control (the paper's soft limit): writes wait here, outside the write gate and
  // holding nothing, only while the memtables hold four times the freeze size or level 0 has three
  // times the runs that start its compaction, so that flushes and compactions keep up. A wait
  // ends once the background thread finishes a step (so a batch's keys, each prepared in turn, are
  // paced by the background work rather than each waiting it out), and after 2 s at most: a stuck
  // background thread (a full disk) slows writes down but does not stop them.
  // Read from counters that writes, freezes and Publish keep: this runs before every write.
  auto over = [&] {
    const uint64_t bytes = active_bytes_.load(std::memory_order_relaxed) +
                           frozen_bytes_.load(std::memory_order_relaxed);
    return bytes > 4 * FreezeBytes() ||
           root_l0_runs_.load(std::memory_order_relaxed) >= 3 * static_cast<size_t>(cfg_.l0_runs);
  };
  if (!over()) return Status::Ok();
  stalls_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t steps = bg_steps_.load();
  for (int i = 0; i < 2000 && over() && bg_steps_.load() == steps; ++i) {
    bg_.Kick();
    if (!bg_.WaitForRound(std::chrono::milliseconds(1))) break;
  }
  return Status::Ok();
}

Status AhaTree::BulkLoad(const BulkSource& source) {
  const uint64_t t0 = NowNanos();
  auto v = current();
  bool active_empty;
  {
    ReaderLock lock(&mem_mu_);
    active_empty = active_->entries() == 0;
  }
  const bool empty =
      active_empty && v->frozen.empty() && v->root->leaf() && v->root->buffer_empty();
  if (!empty) {
    return Status::FailedPrecondition("aha: bulk load needs an empty index");
  }
  // The sorted input becomes the bottom level of the root buffer, run by run.
  aha::RunBuilder builder(aha::RunOptions{cfg_.run_pages, cfg_.bloom_bits_per_key});
  std::vector<std::shared_ptr<const Run>> runs;
  std::string key, cell, prev;
  uint64_t n = 0;
  Status s;
  for (;;) {
    StatusOr<bool> more = source(&key, &cell);
    if (!more.ok()) {
      s = more.status();
      break;
    }
    if (!*more) break;
    s = CheckBulkEntry(n, prev, key, cell.size(), ctx_.options->max_key_bytes,
                       MaxCellBytes(*ctx_.options));
    if (!s.ok()) break;
    Entry e{key, 0, false, cell};
    if (!builder.Fits(e)) {
      s = FinishRun(&builder, &runs, /*in_unit=*/false);
      if (!s.ok()) break;
      builder = aha::RunBuilder(aha::RunOptions{cfg_.run_pages, cfg_.bloom_bits_per_key});
    }
    builder.Add(e);
    prev = key;
    ++n;
  }
  if (s.ok() && !builder.empty()) s = FinishRun(&builder, &runs, /*in_unit=*/false);
  if (!s.ok()) {
    // No unit can run during a bulk load (it pauses the write gate); none is needed either.
    for (const auto& r : runs) space_.Abandon(r->meta().first, r->meta().pages);
    return s;
  }
  // The paper's bottom-up bulk load: runs beyond the last level's size become the leaves at once
  // (the first tree formation), as the background would make them.
  auto next = std::make_shared<Version>(*v);
  aha::Node* root = aha::CopyPath(&next->root, {})[0];
  root->levels.back().runs = runs;
  const size_t last = root->levels.size() - 1;
  if (root->levels.back().pages() > LevelLimitPages(last)) {
    aha::FormTree(root, cfg_.fanout);
    formations_.fetch_add(1, std::memory_order_relaxed);
  }
  for (const auto& r : runs) space_.Installed(*r);
  Publish(std::move(next));
  bulk_load_us_ = (NowNanos() - t0) / 1000;
  return Status::Ok();
}

}  // namespace grove
