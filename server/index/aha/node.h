#pragma once

// The node tree of AHA-tree: node pages with routing keys, each owning an LSM buffer (levels of
// sorted runs). Nodes live in memory and are immutable once published: a change copies the path
// from the root to the node it touches (copy on write), so readers keep the version they started
// with. The variant's metadata (docs/formats/aha.md, "Variant metadata") stores the whole tree.
//
//   root                     levels: the rootLSM's disk levels (root_levels); the memtables sit
//   | pivots p1 .. pk        above it in the Version
//   +-- child 0: keys < p1               every node: levels[0] takes whole runs pushed down by
//   +-- child 1: p1 <= keys < p2         its parent (newest first, may overlap); levels[1..]
//   +-- ...                              are disjoint and in key order
//   +-- child k: keys >= pk
//
// A leaf is a node without children. Before the first tree formation the root is a leaf: the
// whole index is its buffer. An adapted leaf (a hot range's, after its buffers were emptied) also
// holds B+-tree leaf pages below its buffer (page_leaf.h). Freshness invariant: a buffer nearer the
// root holds newer versions than any buffer below it, and within a buffer a lower level index is
// newer.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "index/aha/merge.h"
#include "index/aha/page_leaf.h"
#include "index/aha/run.h"

namespace grove::aha {

// Levels of a buffer below the root: pushed runs, and the compacted level.
inline constexpr size_t kNodeLevels = 2;

// A level of a buffer. Level 0: runs that may overlap, newest first. Deeper: disjoint, in key
// order.
struct Level {
  std::vector<std::shared_ptr<const Run>> runs;
  uint64_t pages() const;
  // A disjoint level's (below level 0) run whose range may hold `key`, or null.
  const Run* RunFor(Slice key) const;
};

// [lo, hi): a node's keys. lo empty: from the smallest key; !has_hi: to the largest.
struct KeyRange {
  std::string lo;
  std::string hi;
  bool has_hi = false;
  bool Contains(Slice key) const {
    return key.compare(lo) >= 0 && (!has_hi || key.compare(hi) < 0);
  }
};

struct Node {
  std::vector<Level> levels;
  std::vector<std::string> pivots;                    // child i holds [pivots[i-1], pivots[i])
  std::vector<std::shared_ptr<const Node>> children;  // empty: a leaf
  // An adapted leaf's B+-tree pages (page_leaf.h): its oldest versions, below its buffer.
  LeafPages pages;

  bool leaf() const { return children.empty(); }
  bool adapted() const { return !pages.empty(); }
  size_t ChildFor(Slice key) const;
  KeyRange ChildRange(const KeyRange& mine, size_t i) const;
  uint64_t buffer_pages() const;
  size_t buffer_runs() const;
  bool buffer_empty() const { return buffer_runs() == 0; }
};

// A node's place: the child indexes from the root.
using Path = std::vector<size_t>;

const Node& NodeAt(const Node& root, const Path& path);
KeyRange RangeAt(const Node& root, const Path& path);
// Replaces `*root` by a copy whose nodes along `path` are copies too, and returns those copies,
// the root first: the caller edits them and publishes the new root.
std::vector<Node*> CopyPath(std::shared_ptr<const Node>* root, const Path& path);
// Levels on the longest path from the root to a leaf (down-splits make the tree unbalanced).
size_t Height(const Node& root);

// Child i of `parent` replaced by `nodes`, in key order, with `seps` (one fewer) between them as
// routing keys: how leaf and inner splits and leaf transformations change a parent.
void ReplaceChild(Node* parent, size_t i, const std::vector<std::shared_ptr<const Node>>& nodes,
                  const std::vector<std::string>& seps);
// Runs pushed down into `parent`'s children: to_child[c] (newest first) goes to the front of
// child c's level 0, the child copied first (level-emptying, hotspot-emptying).
void PushToChildren(Node* parent,
                    const std::vector<std::vector<std::shared_ptr<const Run>>>& to_child);
// A node with empty buffer levels (kNodeLevels).
std::shared_ptr<Node> NewNode();
// The first tree formation (paper §4.1): the root, a leaf, hands its last level's runs (disjoint)
// to new leaves, one run each, with no rewrite; more leaves than `fanout` get inner nodes.
void FormTree(Node* root, size_t fanout);
// Tree formation and leaf splits: nodes with the given separators (seps[i] divides
// nodes[i] from nodes[i + 1]) grouped under new inner nodes with empty buffers, level by level,
// until at most `fanout` remain.
void GroupNodes(std::vector<std::shared_ptr<const Node>>* nodes, std::vector<std::string>* seps,
                size_t fanout);

// Metadata: a node and its subtree. Runs are opened by `open`.
void EncodeNode(const Node& node, std::string* out);
using OpenRunFn = std::function<StatusOr<std::shared_ptr<const Run>>(const RunMeta&)>;
// A buffer's levels alone (the first part of a node; version 1 metadata was only this).
Status DecodeLevels(Slice* in, const OpenRunFn& open, std::vector<Level>* out);
StatusOr<std::shared_ptr<const Node>> DecodeNode(Slice* in, const OpenRunFn& open,
                                                 size_t depth = 0);

// A merged source over a node's buffer and its subtree, within `bounds`: children are opened one
// after another, only when the scan reaches them, and only those meeting the bounds.
struct ScanContext {
  BufferPool* pool;
  IoCause cause;
  uint32_t readahead;
  std::string lower, upper;  // the scan's bounds (upper only with has_upper)
  bool has_upper;
  bool reverse;
  mutable uint64_t runs_opened = 0;  // buffers (runs) the scan probed
};
std::unique_ptr<Source> NewNodeSource(const ScanContext* ctx, std::shared_ptr<const Node> node,
                                      const KeyRange& range, Slice start, bool from_start);
// The sources of one buffer (level 0 runs one by one, each deeper level as one), freshest first,
// skipping runs outside the scan's bounds.
void AddBufferSources(const ScanContext& ctx, const std::vector<Level>& levels, Slice start,
                      bool from_start, std::vector<std::unique_ptr<Source>>* out);

}  // namespace grove::aha
