// AHA-tree Verify: every run's pages, order, bounds and filter; the levels' shape; the freshness
// invariant (a fresher buffer never holds an older version of a key than a buffer below it); and
// the cells, live and shadowed, for the engine's value store accounting.

#include <fmt/format.h>

#include "index/aha/aha.h"
#include "index/aha/bloom.h"
#include "index/aha/merge.h"

namespace grove {

using aha::Entry;
using aha::Level;
using aha::Run;

namespace {

// The run's own checks: page by page, keys ascending and inside [min, max], the counts and LSN
// bounds of its descriptor, and no key its Bloom filter would turn away.
void VerifyRun(BufferPool* pool, const Run& run, const std::string& where, IndexVerifier* v) {
  const auto& m = run.meta();
  std::vector<Entry> page;
  std::string prev;
  uint64_t entries = 0, tombstones = 0;
  Lsn lo = kMaxLsn, hi = 0;
  for (uint32_t i = 0; i < m.data_pages; ++i) {
    if (Status s = run.ReadPage(pool, i, IoCause::kScan, &page); !s.ok()) {
      v->Problem(fmt::format("{}: {}", where, s.ToString()));
      return;
    }
    if (page.empty()) v->Problem(fmt::format("{}: data page {} is empty", where, i));
    for (const Entry& e : page) {
      if (entries > 0 && e.key <= prev) {
        v->Problem(fmt::format("{}: keys out of order at data page {}", where, i));
        return;
      }
      if (run.PageFor(e.key) != i) {
        v->Problem(fmt::format("{}: a key of data page {} is fenced to another page", where, i));
      }
      prev = e.key;
      ++entries;
      tombstones += e.tombstone;
      lo = std::min(lo, e.lsn);
      hi = std::max(hi, e.lsn);
      if (e.tombstone && !e.cell.empty()) {
        v->Problem(fmt::format("{}: a tombstone with a cell", where));
      }
      if (m.filter_pages > 0) {
        Entry probe;
        bool filtered = false;
        auto found = run.Get(pool, e.key, &probe, &filtered, IoCause::kScan);
        if (!found.ok() || !*found || probe.lsn != e.lsn) {
          v->Problem(fmt::format("{}: a key its lookup does not find{}", where,
                                 filtered ? " (the Bloom filter turns it away)" : ""));
          return;
        }
      }
    }
  }
  if (entries != m.entries || tombstones != m.tombstones || lo != m.min_lsn || hi != m.max_lsn ||
      prev != m.max_key) {
    v->Problem(fmt::format("{}: contents disagree with its descriptor ({} entries, {} listed)",
                           where, entries, m.entries));
  }
}

}  // namespace

Status AhaTree::Verify(IndexVerifier* v) {
  const Snapshot snap = TakeSnapshot();
  const auto& levels = snap.version->root;
  std::vector<std::unique_ptr<aha::Source>> sources;
  std::vector<std::string> names;  // per source, for messages
  sources.push_back(aha::NewMemTableSource(snap.active, "", true, false));
  names.push_back("the active memtable");
  for (size_t i = 0; i < snap.version->frozen.size(); ++i) {
    sources.push_back(aha::NewMemTableSource(snap.version->frozen[i], "", true, false));
    names.push_back(fmt::format("frozen memtable {}", i));
  }
  for (size_t l = 0; l < levels.size(); ++l) {
    const Level& level = levels[l];
    for (size_t i = 0; i < level.runs.size(); ++i) {
      const Run& r = *level.runs[i];
      const std::string where =
          fmt::format("aha root level {} run {} (page {})", l, i, r.meta().first);
      v->ClaimPages(r.meta().first, r.meta().pages, "aha run");
      VerifyRun(pool_, r, where, v);
      if (l > 0 && i > 0 && level.runs[i - 1]->meta().max_key >= r.meta().min_key) {
        v->Problem(where + ": overlaps the run before it in a level that must be disjoint");
      }
      if (l == 0) {
        sources.push_back(aha::NewRunSource(pool_, level.runs[i], "", true, false, IoCause::kScan,
                                            cfg_.readahead_pages));
        names.push_back(where);
      }
    }
    if (l > 0 && !level.runs.empty()) {
      sources.push_back(aha::NewLevelSource(pool_, level.runs, "", true, false, IoCause::kScan,
                                            cfg_.readahead_pages));
      names.push_back(fmt::format("aha root level {}", l));
    }
  }
  for (const auto& [first, pages] : space_.RetiredExtents()) {
    v->ClaimUnusedPages(first, pages, "aha retired run");
  }

  // Every key: its newest version is a cell (or a tombstone); the older ones are shadowed cells
  // awaiting release. The newest must come from the freshest source that holds the key.
  aha::MergingIterator merge(std::move(sources), false, /*keep_shadowed=*/true);
  uint64_t reported = 0;
  for (; merge.Valid(); merge.Next()) {
    const Entry& e = merge.entry();
    for (size_t k = 0; k < merge.shadowed().size(); ++k) {
      const Entry& old = merge.shadowed()[k];
      if (merge.shadowed_sources()[k] < merge.source() && reported++ < 10) {
        v->Problem(fmt::format("freshness: {} holds an older version (lsn {}) than {} (lsn {})",
                               names[merge.shadowed_sources()[k]], old.lsn, names[merge.source()],
                               e.lsn));
      }
      if (!old.tombstone) v->OnShadowedCell(old.key, old.cell);
    }
    if (!e.tombstone) v->OnCell(e.key, e.cell);
  }
  return merge.status();
}

}  // namespace grove
