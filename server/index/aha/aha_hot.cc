// AHA-tree's adaptation to hot ranges (paper §4.5, §5, §6): hot ranges configured or detected,
// hotspot-emptying one node at a time from the root down, leaf transformation (down or side
// split) into B+-tree leaf pages, and merging later writes into those pages. The reverse
// direction needs no procedure of its own: writes to an adapted range go through the buffers
// again (batch insert) and reach the pages by push-downs and merges, and the next range searches
// on it adapt it again.
//
// Detector (the paper takes hot ranges as given): every finished range search reports the span
// it covered, from its first to its last key. Every 64 searches the detector takes the last 256
// spans, and the range from the 5th percentile of their first keys to the 95th percentile of
// their last keys is hot when it covers at most a quarter of the leaves (and the tree has at
// least four): searches spread over the key space find no hot range. One range at a time; the
// range found stays while 80% of the recent searches lie inside it.

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "index/aha/aha.h"
#include "index/aha/merge.h"
#include "util/clock.h"

namespace grove {

using aha::HotRange;
using aha::KeyRange;
using aha::Node;
using aha::Path;
using aha::Run;
using aha::Version;

namespace {

using RunList = std::vector<std::shared_ptr<const Run>>;

constexpr size_t kSpanWindow = 256;
constexpr uint64_t kDetectEvery = 64;
constexpr double kMaxHotLeafShare = 0.25;
// The detected range is kept while this share of the recent searches lies inside it.
constexpr double kKeepShare = 0.8;
// A leaf whose buffer is under this share of a run splits sideways even with `split: down`.
constexpr uint64_t kSmallBufferDivisor = 4;

bool Meets(Slice min, Slice max, const HotRange& h) {
  return max.compare(h.lo) >= 0 && min.compare(h.hi) < 0;
}

bool RangeMeets(const KeyRange& r, const HotRange& h) {
  return (!r.has_hi || Slice(r.hi).compare(h.lo) > 0) && Slice(r.lo).compare(h.hi) < 0;
}

bool RunMeetsHot(const Run& r, const KeyRange& range, const std::vector<HotRange>& hot) {
  for (const HotRange& h : hot) {
    if (RangeMeets(range, h) && Meets(r.meta().min_key, r.meta().max_key, h)) return true;
  }
  return false;
}

bool BufferMeetsHot(const Node& n, const KeyRange& range, const std::vector<HotRange>& hot) {
  for (const auto& level : n.levels) {
    for (const auto& r : level.runs) {
      if (RunMeetsHot(*r, range, hot)) return true;
    }
  }
  return false;
}

bool InsideHot(Slice min, Slice max, const std::vector<HotRange>& hot) {
  for (const HotRange& h : hot) {
    if (min.compare(h.lo) >= 0 && max.compare(h.hi) < 0) return true;
  }
  return false;
}

// A node's range cut at the hot bounds inside it: consecutive parts, each wholly hot or cold.
struct Part {
  KeyRange range;
  bool hot = false;
};
std::vector<Part> PartsOf(const KeyRange& r, const std::vector<HotRange>& hot) {
  std::vector<std::string> cuts;
  for (const HotRange& h : hot) {
    for (const std::string* b : {&h.lo, &h.hi}) {
      if (Slice(*b).compare(r.lo) > 0 && (!r.has_hi || Slice(*b).compare(r.hi) < 0)) {
        cuts.push_back(*b);
      }
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Part> parts;
  std::string lo = r.lo;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    Part p;
    p.range.lo = lo;
    if (i < cuts.size()) {
      p.range.hi = cuts[i];
      p.range.has_hi = true;
      lo = cuts[i];
    } else {
      p.range.hi = r.hi;
      p.range.has_hi = r.has_hi;
    }
    // A part lies wholly inside or outside each hot range: test its first key.
    for (const HotRange& h : hot) {
      if (Slice(p.range.lo).compare(h.lo) >= 0 && Slice(p.range.lo).compare(h.hi) < 0) {
        p.hot = true;
      }
    }
    parts.push_back(std::move(p));
  }
  return parts;
}

// Adapted leaves for `pages`, at most aha::kMaxLeafPagesPerNode each; *seps gets the boundaries
// between them.
void PageLeaves(const aha::LeafPages& pages, std::vector<std::shared_ptr<const Node>>* nodes,
                std::vector<std::string>* seps) {
  for (size_t i = 0; i < pages.size() || i == 0; i += aha::kMaxLeafPagesPerNode) {
    auto n = aha::NewNode();
    if (!pages.empty()) {
      const size_t end = std::min(pages.size(), i + aha::kMaxLeafPagesPerNode);
      n->pages.assign(pages.begin() + static_cast<ptrdiff_t>(i),
                      pages.begin() + static_cast<ptrdiff_t>(end));
      if (i > 0) seps->push_back(pages[i]->low);
    }
    nodes->push_back(std::move(n));
    if (pages.empty()) break;
  }
}

}  // namespace

std::vector<HotRange> AhaTree::HotRanges() const {
  MutexLock lock(&hot_mu_);
  return hot_;
}

void AhaTree::NoteScan(Slice first, Slice last, uint64_t runs_opened) {
  scans_.fetch_add(1, std::memory_order_relaxed);
  scan_runs_.fetch_add(runs_opened, std::memory_order_relaxed);
  if (cfg_.adapt == aha::Config::Adapt::kOff) return;
  bool meets = false;
  bool changed = false;
  {
    MutexLock lock(&hot_mu_);
    if (cfg_.hot_detect) {
      auto span = std::make_pair(std::string(first), std::string(last));
      if (spans_.size() < kSpanWindow) {
        spans_.push_back(std::move(span));
      } else {
        spans_[spans_seen_ % kSpanWindow] = std::move(span);
      }
      if (++spans_seen_ % kDetectEvery == 0 && spans_.size() >= kDetectEvery) {
        std::vector<HotRange> found = DetectLocked(*current());
        if (found != detected_) {
          detected_ = std::move(found);
          std::vector<HotRange> all = cfg_.hot_ranges;
          all.insert(all.end(), detected_.begin(), detected_.end());
          hot_ = aha::MergeHotRanges(std::move(all));
          detections_.fetch_add(1, std::memory_order_relaxed);
          changed = true;
        }
      }
    }
    for (const HotRange& h : hot_) meets = meets || Meets(first, last, h);
  }
  // Query-triggered (§5): a search that meets a hot range starts (or continues) adaptation. The
  // background looks at the request within its idle period (10 ms); only a hot range that has
  // just changed wakes it at once. Waking it on every search cost a futex wake per search and a
  // background round per search once the range had converged (a few percent of a read-heavy
  // phase's CPU on each side).
  if (meets && !adapt_requested_.exchange(true) && changed) bg_.Kick();
}

std::vector<HotRange> AhaTree::DetectLocked(const Version& v) const {
  std::vector<std::string> firsts, lasts;
  for (const auto& [f, l] : spans_) {
    firsts.push_back(f);
    lasts.push_back(l);
  }
  // Hysteresis: the range in force stays while most recent searches still lie inside it. The
  // percentiles move a little with every window, and every move of a hot bound would cut more
  // runs and transform more leaves (with down-split, one level deeper each time).
  if (!detected_.empty()) {
    const HotRange& cur = detected_[0];
    size_t inside = 0;
    for (const auto& [f, l] : spans_) {
      inside += Slice(f).compare(cur.lo) >= 0 && Slice(l).compare(cur.hi) < 0;
    }
    if (static_cast<double>(inside) >= kKeepShare * static_cast<double>(spans_.size())) {
      return detected_;
    }
  }
  std::sort(firsts.begin(), firsts.end());
  std::sort(lasts.begin(), lasts.end());
  const size_t n = firsts.size();
  HotRange h{firsts[n * 5 / 100], lasts[std::min(n - 1, n * 95 / 100)]};
  h.hi.push_back('\0');  // the last key itself is inside: [lo, last] = [lo, last + "\0")
  if (h.hi <= h.lo) return {};
  // Leaves it covers, against all of them.
  uint64_t leaves = 0, covered = 0;
  std::vector<std::pair<const Node*, KeyRange>> stack{{v.root.get(), KeyRange{}}};
  while (!stack.empty()) {
    auto [node, range] = stack.back();
    stack.pop_back();
    if (node->leaf()) {
      ++leaves;
      covered += RangeMeets(range, h);
      continue;
    }
    for (size_t i = 0; i < node->children.size(); ++i) {
      stack.emplace_back(node->children[i].get(), node->ChildRange(range, i));
    }
  }
  if (leaves < 4 || static_cast<double>(covered) > kMaxHotLeafShare * static_cast<double>(leaves)) {
    return {};
  }
  return {h};
}

AhaTree::AdaptWork AhaTree::FindAdaptWork(const Snapshot& snap, const std::vector<HotRange>& hot,
                                          bool writes_quiet) const {
  if (hot.empty()) return {};
  const Version& v = *snap.version;
  // Once writes have stopped, the active memtable is frozen when it holds versions in a hot
  // range: nothing would fill it any more, and every search of the range would merge it. While
  // writes go on it stays (freezing it at every search would make runs of a few entries).
  if (writes_quiet && v.frozen.size() < 2) {
    for (const HotRange& h : hot) {
      if (snap.active->HasKeyIn(h.lo, h.hi)) return {AdaptKind::kFreeze, {}};
    }
  }
  const Node& root = *v.root;
  if (root.leaf()) {
    // Nothing below the root yet: form the tree from its last level, if it holds anything.
    if (!root.levels.back().runs.empty() && BufferMeetsHot(root, KeyRange{}, hot)) {
      return {AdaptKind::kForm, {}};
    }
    return {};
  }
  struct Item {
    const Node* node;
    Path path;
    KeyRange range;
  };
  std::deque<Item> queue{{&root, {}, KeyRange{}}};  // breadth first: upper levels empty first
  while (!queue.empty()) {
    Item it = std::move(queue.front());
    queue.pop_front();
    const Node& n = *it.node;
    bool meets = false;
    for (const HotRange& h : hot) meets = meets || RangeMeets(it.range, h);
    if (!meets) continue;
    const bool hot_runs = BufferMeetsHot(n, it.range, hot);
    if (!n.leaf()) {
      if (hot_runs) return {AdaptKind::kEmptyHot, it.path};
      for (size_t i = 0; i < n.children.size(); ++i) {
        Path p = it.path;
        p.push_back(i);
        queue.push_back({n.children[i].get(), std::move(p), n.ChildRange(it.range, i)});
      }
      continue;
    }
    if (hot_runs) return {n.adapted() ? AdaptKind::kMergePages : AdaptKind::kTransform, it.path};
  }
  return {};
}

Status AhaTree::DoAdaptWork(const AdaptWork& w, const std::vector<HotRange>& hot) {
  adapt_steps_.fetch_add(1, std::memory_order_relaxed);
  switch (w.kind) {
    case AdaptKind::kFreeze:
      return Freeze();
    case AdaptKind::kForm:
      return FormTree();
    case AdaptKind::kEmptyHot:
      return EmptyHot(w.path, hot);
    case AdaptKind::kTransform:
      return Transform(w.path, hot);
    case AdaptKind::kMergePages:
      return MergePages(w.path);
    case AdaptKind::kNone:
      break;
  }
  return Status::Ok();
}

std::vector<std::string> AhaTree::Guards(const Node& node, const KeyRange& range) const {
  std::vector<std::string> g = node.pivots;
  for (const HotRange& h : HotRanges()) {
    for (const std::string* b : {&h.lo, &h.hi}) {
      if (range.Contains(*b)) g.push_back(*b);
    }
  }
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

Status AhaTree::EmptyHot(const Path& path, const std::vector<HotRange>& hot) {
  const auto v = current();
  const Node& node = aha::NodeAt(*v->root, path);
  const KeyRange range = aha::RangeAt(*v->root, path);
  std::vector<std::string> guards = node.pivots;
  for (const HotRange& h : hot) {
    guards.push_back(h.lo);
    guards.push_back(h.hi);
  }
  std::sort(guards.begin(), guards.end());
  guards.erase(std::unique(guards.begin(), guards.end()), guards.end());
  // Per level, each run meeting a hot range: replaced in place by its cold pieces; its hot
  // pieces go to the children, newest level first so their level 0 stays newest first.
  std::vector<std::vector<RunList>> stays(node.levels.size());
  std::vector<RunList> to_child(node.children.size());
  RunList cut, pieces;
  for (size_t l = 0; l < node.levels.size(); ++l) {
    for (const auto& r : node.levels[l].runs) {
      if (!RunMeetsHot(*r, range, hot)) {
        stays[l].push_back({r});
        continue;
      }
      const size_t first = pieces.size();
      if (Status s = CutRun(r, guards, &pieces); !s.ok()) {
        AbandonOutputs(pieces);
        return s;
      }
      cut.push_back(r);
      RunList cold;
      for (size_t i = first; i < pieces.size(); ++i) {
        const auto& m = pieces[i]->meta();
        if (InsideHot(m.min_key, m.max_key, hot)) {
          to_child[node.ChildFor(m.min_key)].push_back(pieces[i]);
        } else {
          cold.push_back(pieces[i]);
        }
      }
      stays[l].push_back(std::move(cold));
    }
  }
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        Node* n = aha::CopyPath(&next->root, path).back();
        for (size_t l = 0; l < n->levels.size(); ++l) {
          RunList runs;
          for (const RunList& group : stays[l]) runs.insert(runs.end(), group.begin(), group.end());
          n->levels[l].runs = std::move(runs);
        }
        aha::PushToChildren(n, to_child);
      },
      pieces, cut, {}));
  hot_runs_emptied_.fetch_add(cut.size(), std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

Status AhaTree::Transform(const Path& path, const std::vector<HotRange>& hot) {
  const auto v = current();
  const Node& leaf = aha::NodeAt(*v->root, path);
  const KeyRange range = aha::RangeAt(*v->root, path);
  const std::vector<Part> parts = PartsOf(range, hot);
  const bool whole_hot = parts.size() == 1 && parts[0].hot;
  // A small buffer (what hotspot-emptying pushed into a leaf beside an adapted one when the hot
  // bounds moved) is split sideways: compacting it costs little, and down-splitting it would
  // grow a chain of inner nodes, one per move, that every search there walks through.
  const bool small = leaf.buffer_pages() * kSmallBufferDivisor < cfg_.run_pages;
  if (!whole_hot && cfg_.down_split && !small) {
    // Down-split (§6.1): the leaf becomes an inner node that keeps its buffer, over one empty
    // leaf per part; hotspot-emptying then pushes the hot data into the hot ones. No IO.
    auto inner = std::make_shared<Node>();
    inner->levels = leaf.levels;
    for (size_t i = 0; i < parts.size(); ++i) {
      inner->children.push_back(aha::NewNode());
      if (i > 0) inner->pivots.push_back(parts[i].range.lo);
    }
    GROVE_RETURN_IF_ERROR(Install(
        [&](Version* next) {
          Path parent(path.begin(), path.end() - 1);
          Node* p = aha::CopyPath(&next->root, parent).back();
          p->children[path.back()] = inner;
        },
        {}, {}, {}));
    transforms_.fetch_add(1, std::memory_order_relaxed);
    tree_work_ = true;
    return Status::Ok();
  }
  // Side-split (§6.1), or a wholly hot leaf: the whole buffer compacted, cold parts into runs of
  // new sibling leaves, hot parts into leaf pages (§6.2).
  std::vector<std::unique_ptr<aha::Source>> sources;
  RunList inputs;
  BufferSources(leaf, &sources, &inputs);
  aha::MergingIterator merge(std::move(sources), false, /*keep_shadowed=*/true);
  std::vector<std::string> released;
  RunList outputs;
  std::vector<aha::PageExtent> extents;
  std::vector<std::shared_ptr<const Node>> nodes;
  std::vector<std::string> seps;
  auto fail = [&](const Status& s) {
    AbandonOutputs(outputs);
    AbandonPages(extents);
    return s;
  };
  const aha::RunOptions options{cfg_.run_pages, cfg_.bloom_bits_per_key};
  size_t part = 0;
  while (part < parts.size()) {
    const Part& p = parts[part];
    auto in_part = [&](const aha::Entry& e) {
      return !p.range.has_hi || Slice(e.key).compare(p.range.hi) < 0;
    };
    if (part > 0) seps.push_back(p.range.lo);
    if (p.hot) {
      aha::LeafPageBuilder builder(cfg_.leaf_alloc);
      for (; merge.Valid() && in_part(merge.entry()); merge.Next()) {
        for (const aha::Entry& old : merge.shadowed()) {
          if (!old.tombstone) released.push_back(old.cell);
        }
        if (!merge.entry().tombstone) builder.Add(merge.entry());
      }
      if (!merge.status().ok()) return fail(merge.status());
      StatusOr<aha::LeafPages> pages = aha::LeafPages();
      Status s = ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
        pages = builder.Finish(&space_, ctx_.direct_writer, IoCause::kCompaction, &extents);
        return pages.status();
      });
      if (!s.ok()) return fail(s);
      PageLeaves(*pages, &nodes, &seps);
    } else {
      RunList runs;
      aha::RunBuilder builder(options);
      for (; merge.Valid() && in_part(merge.entry()); merge.Next()) {
        for (const aha::Entry& old : merge.shadowed()) {
          if (!old.tombstone) released.push_back(old.cell);
        }
        const aha::Entry& e = merge.entry();
        if (e.tombstone) continue;  // nothing lies below a leaf
        if (!builder.Fits(e)) {
          if (Status s = FinishRun(&builder, &runs, true); !s.ok()) return fail(s);
          builder = aha::RunBuilder(options);
        }
        builder.Add(e);
      }
      if (!merge.status().ok()) return fail(merge.status());
      if (!builder.empty()) {
        if (Status s = FinishRun(&builder, &runs, true); !s.ok()) return fail(s);
      }
      outputs.insert(outputs.end(), runs.begin(), runs.end());
      auto n = aha::NewNode();
      n->levels.back().runs = std::move(runs);
      nodes.push_back(std::move(n));
    }
    ++part;
  }
  const size_t i = path.back();
  const Path parent_path(path.begin(), path.end() - 1);
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        aha::ReplaceChild(aha::CopyPath(&next->root, parent_path).back(), i, nodes, seps);
      },
      outputs, inputs, released, extents));
  transforms_.fetch_add(1, std::memory_order_relaxed);
  cells_released_.fetch_add(released.size(), std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

Status AhaTree::MergePages(const Path& path) {
  const auto v = current();
  const Node& leaf = aha::NodeAt(*v->root, path);
  std::vector<std::unique_ptr<aha::Source>> sources;
  RunList inputs;
  BufferSources(leaf, &sources, &inputs);
  aha::MergingIterator merge(std::move(sources), false, /*keep_shadowed=*/true);
  aha::PageMerger merger(pool_, leaf.pages, IoCause::kCompaction);
  std::vector<std::string> released;
  for (; merge.Valid(); merge.Next()) {
    for (const aha::Entry& old : merge.shadowed()) {
      if (!old.tombstone) released.push_back(old.cell);
    }
    GROVE_RETURN_IF_ERROR(merger.Add(merge.entry()));
  }
  GROVE_RETURN_IF_ERROR(merge.status());
  aha::LeafPages pages, retired;
  std::vector<aha::PageExtent> extents;
  GROVE_RETURN_IF_ERROR(ctx_.services->RunMaintenance(0, [&](WriteRoom*) -> Status {
    return merger.Finish(&space_, ctx_.direct_writer, &pages, &retired, &extents, &released);
  }));
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        Node* n = aha::CopyPath(&next->root, path).back();
        for (auto& level : n->levels) level.runs.clear();
        n->pages = pages;
      },
      {}, inputs, released, extents, retired));
  page_merges_.fetch_add(1, std::memory_order_relaxed);
  cells_released_.fetch_add(released.size(), std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

Status AhaTree::SplitPages(const Path& path) {
  const auto v = current();
  const Node& leaf = aha::NodeAt(*v->root, path);
  if (leaf.pages.size() < 2 || !leaf.buffer_empty() || path.empty()) return Status::Ok();
  const size_t m = leaf.pages.size() / 2;
  auto left = aha::NewNode(), right = aha::NewNode();
  left->pages.assign(leaf.pages.begin(), leaf.pages.begin() + static_cast<ptrdiff_t>(m));
  right->pages.assign(leaf.pages.begin() + static_cast<ptrdiff_t>(m), leaf.pages.end());
  const std::string sep = leaf.pages[m]->low;
  const size_t i = path.back();
  const Path parent_path(path.begin(), path.end() - 1);
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        aha::ReplaceChild(aha::CopyPath(&next->root, parent_path).back(), i, {left, right}, {sep});
      },
      {}, {}, {}));
  leaf_splits_.fetch_add(1, std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

}  // namespace grove
