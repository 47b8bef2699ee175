// AHA-tree Verify: the tree's shape (routing keys, buffer levels, runs inside their node's range);
// every run's pages (filter and index pages included), order, bounds and filter; the freshness
// invariant (a fresher buffer never holds an older version of a key than a buffer below it); and
// the cells, live and shadowed, for the engine's value store accounting.

#include <fmt/format.h>

#include "index/aha/aha.h"
#include "index/aha/bloom.h"
#include "index/aha/merge.h"

namespace grove {

using aha::Entry;
using aha::Level;
using aha::Node;
using aha::Run;

namespace {

// The run's own checks: page by page, keys ascending and inside [min, max], the counts and LSN
// bounds of its descriptor, and no key its Bloom filter would turn away.
void VerifyRun(BufferPool* pool, const Run& run, const std::string& where, IndexVerifier* v) {
  const auto& m = run.meta();
  if (Status s = run.CheckFilterAndIndex(pool); !s.ok()) {
    v->Problem(fmt::format("{}: {}", where, s.ToString()));
  }
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

std::string NodeName(const aha::Path& path) {
  if (path.empty()) return "aha root";
  std::string s = "aha node";
  for (size_t i : path) s += fmt::format("/{}", i);
  return s;
}

}  // namespace

Status AhaTree::Verify(IndexVerifier* v) {
  const Snapshot snap = TakeSnapshot();
  // Structure first, node by node: routing keys, level shapes, every run inside its node's range
  // (and checked once, page by page).
  struct Frame {
    const Node* node;
    aha::Path path;
    aha::KeyRange range;
  };
  std::vector<Frame> stack{{snap.version->root.get(), {}, {}}};
  std::vector<Frame> leaves;
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    const Node& n = *f.node;
    const std::string name = NodeName(f.path);
    const size_t want = f.path.empty() ? cfg_.root_levels : aha::kNodeLevels;
    if (n.levels.size() != want) {
      v->Problem(fmt::format("{}: {} buffer levels, {} expected", name, n.levels.size(), want));
    }
    for (size_t l = 0; l < n.levels.size(); ++l) {
      const Level& level = n.levels[l];
      for (size_t i = 0; i < level.runs.size(); ++i) {
        const Run& r = *level.runs[i];
        const std::string where =
            fmt::format("{} level {} run {} (page {})", name, l, i, r.meta().first);
        v->ClaimPages(r.meta().first, r.meta().pages, "aha run");
        VerifyRun(pool_, r, where, v);
        if (!f.range.Contains(r.meta().min_key) || !f.range.Contains(r.meta().max_key)) {
          v->Problem(where + ": holds keys outside its node's range");
        }
        if (l > 0 && i > 0 && level.runs[i - 1]->meta().max_key >= r.meta().min_key) {
          v->Problem(where + ": overlaps the run before it in a level that must be disjoint");
        }
      }
    }
    if (!n.pages.empty() && !n.leaf()) v->Problem(name + ": an inner node with leaf pages");
    for (size_t i = 0; i < n.pages.size(); ++i) {
      const aha::LeafPage& page = *n.pages[i];
      v->ClaimPages(page.id, 1, "aha leaf page");
      std::vector<Entry> entries;
      if (Status s = aha::ReadLeafPage(pool_, page, IoCause::kScan, &entries); !s.ok()) {
        v->Problem(fmt::format("{} leaf page {}: {}", name, i, s.ToString()));
        continue;
      }
      const bool last = i + 1 == n.pages.size();
      for (size_t j = 1; j < entries.size(); ++j) {
        if (!(entries[j - 1].key < entries[j].key)) {
          v->Problem(fmt::format("{} leaf page {} (page {}): keys not strictly ascending", name, i,
                                 page.id));
          break;
        }
      }
      for (const Entry& e : entries) {
        if (!f.range.Contains(e.key) || (i > 0 && e.key < page.low) ||
            (!last && e.key >= n.pages[i + 1]->low)) {
          v->Problem(
              fmt::format("{} leaf page {} (page {}): a key outside its place", name, i, page.id));
          break;
        }
      }
      if (entries.size() != page.entries) {
        v->Problem(fmt::format("{} leaf page {}: {} entries, {} listed", name, i, entries.size(),
                               page.entries));
      }
      if (!entries.empty() && entries[0].key != page.low) {
        v->Problem(fmt::format("{} leaf page {}: its first key is not the one listed", name, i));
      }
    }
    if (n.leaf()) {
      leaves.push_back(f);
      continue;
    }
    if (n.pivots.size() + 1 != n.children.size()) {
      v->Problem(fmt::format("{}: {} routing keys for {} children", name, n.pivots.size(),
                             n.children.size()));
      continue;
    }
    for (size_t i = 0; i < n.pivots.size(); ++i) {
      if ((i > 0 && n.pivots[i - 1] >= n.pivots[i]) || !f.range.Contains(n.pivots[i]) ||
          n.pivots[i] == f.range.lo) {
        v->Problem(fmt::format("{}: routing key {} is out of order or outside the node", name, i));
      }
    }
    for (size_t i = n.children.size(); i-- > 0;) {
      aha::Path p = f.path;
      p.push_back(i);
      stack.push_back({n.children[i].get(), std::move(p), n.ChildRange(f.range, i)});
    }
  }
  for (const auto& [first, pages] : space_.RetiredExtents()) {
    v->ClaimUnusedPages(first, pages, "aha retired run");
  }

  // Then the versions, leaf range by leaf range, merging every buffer on the path down to the
  // leaf (freshest first). Each key's newest version is a cell (or a tombstone); the older ones
  // are shadowed cells awaiting release, and must all lie in buffers below the newest one's.
  uint64_t reported = 0;
  for (const Frame& leaf : leaves) {
    const aha::KeyRange& range = leaf.range;
    const aha::ScanContext scan{pool_,
                                IoCause::kScan,
                                cfg_.readahead_pages,
                                range.lo,
                                range.hi,
                                range.has_hi,
                                /*reverse=*/false};
    std::vector<std::unique_ptr<aha::Source>> sources;
    std::vector<std::string> names;  // per source, for messages
    sources.push_back(aha::NewMemTableSource(snap.active, range.lo, false, false));
    names.push_back("the active memtable");
    for (size_t i = 0; i < snap.version->frozen.size(); ++i) {
      sources.push_back(aha::NewMemTableSource(snap.version->frozen[i], range.lo, false, false));
      names.push_back(fmt::format("frozen memtable {}", i));
    }
    const Node* n = snap.version->root.get();
    for (size_t depth = 0;; ++depth) {
      const size_t before = sources.size();
      aha::AddBufferSources(scan, n->levels, range.lo, false, &sources);
      for (size_t i = before; i < sources.size(); ++i) {
        names.push_back(
            fmt::format("{} (source {})",
                        NodeName(aha::Path(leaf.path.begin(),
                                           leaf.path.begin() + static_cast<ptrdiff_t>(depth))),
                        i - before));
      }
      if (depth == leaf.path.size()) break;
      n = n->children[leaf.path[depth]].get();
    }
    if (n->adapted()) {
      sources.push_back(aha::NewPagesSource(pool_, n->pages, range.lo, false, false, IoCause::kScan,
                                            cfg_.readahead_pages));
      names.push_back(NodeName(leaf.path) + " leaf pages");
    }
    aha::MergingIterator merge(std::move(sources), false, /*keep_shadowed=*/true);
    for (; merge.Valid(); merge.Next()) {
      const Entry& e = merge.entry();
      if (range.has_hi && Slice(e.key).compare(range.hi) >= 0) break;
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
    GROVE_RETURN_IF_ERROR(merge.status());
  }
  return Status::Ok();
}

}  // namespace grove
