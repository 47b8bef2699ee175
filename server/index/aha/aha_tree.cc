// AHA-tree's node tree at work (paper §3.2.1, §4.1, §4.3): the first tree formation, level-emptying
// (push-down by moving runs), compaction of node buffers, multi-way leaf splits and inner splits
// that split the node's buffer at the separator. All of it runs on the background thread, which
// alone changes the tree: a piece of work reads the current version, writes whatever runs it
// needs outside any unit (each run in a unit of its own), and installs the result in one unit
// (AhaTree::Install), so readers and checkpoints see the tree before or after, never between.

#include <algorithm>

#include "index/aha/aha.h"
#include "index/aha/merge.h"

namespace grove {

using aha::Node;
using aha::Path;
using aha::Run;
using aha::Version;

namespace {

using RunList = std::vector<std::shared_ptr<const Run>>;

}  // namespace

AhaTree::NodeWork AhaTree::FindNodeWork(const Version& v) const {
  // Depth first, parents before children: a parent's push fills its children, and a child's
  // split adds to its parent, which the next search then finds first.
  struct Frame {
    const Node* node;
    Path path;
  };
  std::vector<Frame> stack{{v.root.get(), {}}};
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    const Node& n = *f.node;
    if (n.children.size() > cfg_.fanout) return {NodeWorkKind::kSplitInner, f.path};
    if (!f.path.empty() && n.adapted()) {
      // An adapted leaf merges its buffer into its pages; too many pages make two leaves.
      if (n.buffer_pages() > cfg_.node_pages || n.levels[0].runs.size() > cfg_.node_l0_runs) {
        return {NodeWorkKind::kMergePages, f.path};
      }
      if (n.pages.size() > 2 * aha::kMaxLeafPagesPerNode && n.buffer_empty()) {
        return {NodeWorkKind::kSplitPages, f.path};
      }
    } else if (!f.path.empty()) {  // the root's buffer has its own limits (PickCompaction)
      if (n.buffer_pages() > cfg_.node_pages) {
        return {n.leaf() ? NodeWorkKind::kSplitLeaf : NodeWorkKind::kEmpty, f.path};
      }
      if (n.levels[0].runs.size() > cfg_.node_l0_runs) return {NodeWorkKind::kCompact, f.path};
    }
    for (size_t i = n.children.size(); i-- > 0;) {
      Path p = f.path;
      p.push_back(i);
      stack.push_back({n.children[i].get(), std::move(p)});
    }
  }
  return {};
}

Status AhaTree::DoNodeWork(const NodeWork& w) {
  switch (w.kind) {
    case NodeWorkKind::kCompact:
      return Compact(w.path, 0);
    case NodeWorkKind::kEmpty:
      return EmptyLevel(w.path);
    case NodeWorkKind::kSplitLeaf:
      return SplitLeaf(w.path);
    case NodeWorkKind::kSplitInner:
      return SplitInner(w.path);
    case NodeWorkKind::kMergePages:
      return MergePages(w.path);
    case NodeWorkKind::kSplitPages:
      return SplitPages(w.path);
    case NodeWorkKind::kNone:
      break;
  }
  return Status::Ok();
}

Status AhaTree::FormTree() {
  const size_t runs = current()->root->levels.back().runs.size();
  if (runs == 0) return Status::Ok();
  GROVE_RETURN_IF_ERROR(
      Install([&](Version* next) { aha::FormTree(aha::CopyPath(&next->root, {})[0], cfg_.fanout); },
              {}, {}, {}));
  formations_.fetch_add(1, std::memory_order_relaxed);
  runs_moved_.fetch_add(runs, std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

Status AhaTree::CutRun(const std::shared_ptr<const Run>& run,
                       const std::vector<std::string>& guards, RunList* pieces) {
  std::vector<std::unique_ptr<aha::Source>> sources;
  sources.push_back(
      aha::NewRunSource(pool_, run, "", true, false, IoCause::kCompaction, cfg_.run_pages));
  std::vector<std::string> released;  // one source: nothing is shadowed
  const size_t before = pieces->size();
  Status s = WriteRuns(std::move(sources), /*bottom=*/false, &guards, pieces, &released);
  if (!s.ok()) return s;
  runs_cut_.fetch_add(1, std::memory_order_relaxed);
  compaction_bytes_read_.fetch_add(run->meta().data_pages * kPageSize, std::memory_order_relaxed);
  for (size_t i = before; i < pieces->size(); ++i) {
    compaction_bytes_written_.fetch_add((*pieces)[i]->meta().pages * kPageSize,
                                        std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status AhaTree::EmptyLevel(const Path& path) {
  const auto v = current();
  const Node& node = aha::NodeAt(*v->root, path);
  if (node.leaf()) {
    if (path.empty()) return FormTree();
    if (node.adapted()) return MergePages(path);
    return SplitLeaf(path);  // a leaf has nowhere to push: it splits
  }
  // The bottom (oldest) level moves to the top of the children's buffers, which keeps the
  // freshness invariant: everything already in a child is older. The root pushes its last level;
  // another node its deepest level holding runs.
  size_t b = node.levels.size() - 1;
  if (!path.empty()) {
    while (b > 0 && node.levels[b].runs.empty()) --b;
  }
  const RunList& runs = node.levels[b].runs;
  if (runs.empty()) return Status::Ok();
  std::vector<RunList> to_child(node.children.size());
  RunList cut, pieces;
  size_t moved = 0;
  for (const auto& r : runs) {
    const size_t c = node.ChildFor(r->meta().min_key);
    if (c == node.ChildFor(r->meta().max_key)) {
      to_child[c].push_back(r);  // guarded compaction made it: a pointer move
      ++moved;
      continue;
    }
    const size_t first = pieces.size();
    if (Status s = CutRun(r, node.pivots, &pieces); !s.ok()) {
      AbandonOutputs(pieces);
      return s;
    }
    cut.push_back(r);
    for (size_t i = first; i < pieces.size(); ++i) {
      to_child[node.ChildFor(pieces[i]->meta().min_key)].push_back(pieces[i]);
    }
  }
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        Node* n = aha::CopyPath(&next->root, path).back();
        n->levels[b].runs.clear();
        aha::PushToChildren(n, to_child);
      },
      pieces, cut, {}));
  pushdowns_.fetch_add(1, std::memory_order_relaxed);
  runs_moved_.fetch_add(moved, std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

void AhaTree::BufferSources(const Node& node, std::vector<std::unique_ptr<aha::Source>>* sources,
                            RunList* inputs) const {
  for (size_t l = 0; l < node.levels.size(); ++l) {
    const RunList& runs = node.levels[l].runs;
    inputs->insert(inputs->end(), runs.begin(), runs.end());
    if (l == 0) {
      for (const auto& r : runs) {
        sources->push_back(
            aha::NewRunSource(pool_, r, "", true, false, IoCause::kCompaction, cfg_.run_pages));
      }
    } else if (!runs.empty()) {
      sources->push_back(
          aha::NewLevelSource(pool_, runs, "", true, false, IoCause::kCompaction, cfg_.run_pages));
    }
  }
}

Status AhaTree::SplitLeaf(const Path& path) {
  const auto v = current();
  const Node& leaf = aha::NodeAt(*v->root, path);
  // The whole buffer, compacted (tombstones end here: nothing lies below a leaf).
  std::vector<std::unique_ptr<aha::Source>> sources;
  RunList inputs;
  BufferSources(leaf, &sources, &inputs);
  RunList out;
  std::vector<std::string> released;
  if (Status s = WriteRuns(std::move(sources), /*bottom=*/true, nullptr, &out, &released);
      !s.ok()) {
    AbandonOutputs(out);
    return s;
  }
  // Consecutive runs shared out so that each new leaf holds about half a full buffer: a
  // multi-way split (paper §3.2.1) that leaves room for the pushes to come.
  const uint64_t target = cfg_.node_pages / 2;
  std::vector<RunList> groups(1);
  uint64_t pages = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (pages >= target && i > 0) {
      groups.emplace_back();
      pages = 0;
    }
    groups.back().push_back(out[i]);
    pages += out[i]->meta().pages;
  }
  std::vector<std::shared_ptr<const Node>> leaves;
  std::vector<std::string> seps;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto n = aha::NewNode();
    n->levels.back().runs = groups[g];
    leaves.push_back(std::move(n));
    if (g > 0) seps.push_back(groups[g][0]->meta().min_key);
  }
  const size_t i = path.back();
  Path parent_path(path.begin(), path.end() - 1);
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        aha::ReplaceChild(aha::CopyPath(&next->root, parent_path).back(), i, leaves, seps);
      },
      out, inputs, released));
  if (leaves.size() > 1) leaf_splits_.fetch_add(1, std::memory_order_relaxed);
  node_compactions_.fetch_add(1, std::memory_order_relaxed);
  cells_released_.fetch_add(released.size(), std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

Status AhaTree::SplitInner(const Path& path) {
  const auto v = current();
  const Node& node = aha::NodeAt(*v->root, path);
  const size_t m = node.children.size() / 2;
  const std::string sep = node.pivots[m - 1];
  auto left = aha::NewNode(), right = aha::NewNode();
  left->children.assign(node.children.begin(), node.children.begin() + static_cast<ptrdiff_t>(m));
  left->pivots.assign(node.pivots.begin(), node.pivots.begin() + static_cast<ptrdiff_t>(m - 1));
  right->children.assign(node.children.begin() + static_cast<ptrdiff_t>(m), node.children.end());
  right->pivots.assign(node.pivots.begin() + static_cast<ptrdiff_t>(m), node.pivots.end());
  if (path.empty()) {
    // The root keeps its buffer (the rootLSM takes the writes) and gains a level of inner nodes
    // with empty buffers: nothing to rewrite, and the freshness invariant holds trivially.
    GROVE_RETURN_IF_ERROR(Install(
        [&](Version* next) {
          Node* root = aha::CopyPath(&next->root, {})[0];
          root->pivots = {sep};
          root->children = {left, right};
        },
        {}, {}, {}));
    inner_splits_.fetch_add(1, std::memory_order_relaxed);
    tree_work_ = true;
    return Status::Ok();
  }
  // The buffer splits at the separator (paper Fig. 3): runs on one side move, a run across it
  // is cut in two. Level by level and in order, so each level keeps its shape.
  RunList cut, pieces;
  const std::vector<std::string> guard{sep};
  for (size_t l = 0; l < node.levels.size(); ++l) {
    for (const auto& r : node.levels[l].runs) {
      if (Slice(r->meta().max_key).compare(sep) < 0) {
        left->levels[l].runs.push_back(r);
      } else if (Slice(r->meta().min_key).compare(sep) >= 0) {
        right->levels[l].runs.push_back(r);
      } else {
        const size_t first = pieces.size();
        if (Status s = CutRun(r, guard, &pieces); !s.ok()) {
          AbandonOutputs(pieces);
          return s;
        }
        cut.push_back(r);
        for (size_t i = first; i < pieces.size(); ++i) {
          const bool lo = Slice(pieces[i]->meta().max_key).compare(sep) < 0;
          (lo ? left : right)->levels[l].runs.push_back(pieces[i]);
        }
      }
    }
  }
  const size_t i = path.back();
  Path parent_path(path.begin(), path.end() - 1);
  GROVE_RETURN_IF_ERROR(Install(
      [&](Version* next) {
        aha::ReplaceChild(aha::CopyPath(&next->root, parent_path).back(), i, {left, right}, {sep});
      },
      pieces, cut, {}));
  inner_splits_.fetch_add(1, std::memory_order_relaxed);
  tree_work_ = true;
  return Status::Ok();
}

}  // namespace grove
