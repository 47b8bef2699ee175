#include "index/aha/node.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/coding.h"

namespace grove::aha {

uint64_t Level::pages() const {
  uint64_t n = 0;
  for (const auto& r : runs) n += r->meta().pages;
  return n;
}

const Run* Level::RunFor(Slice key) const {
  auto it = std::upper_bound(runs.begin(), runs.end(), key,
                             [](Slice k, const std::shared_ptr<const Run>& r) {
                               return k.compare(r->meta().min_key) < 0;
                             });
  if (it == runs.begin()) return nullptr;
  const Run* r = std::prev(it)->get();
  return r->Covers(key) ? r : nullptr;
}

size_t Node::ChildFor(Slice key) const {
  auto it = std::upper_bound(pivots.begin(), pivots.end(), key,
                             [](Slice k, const std::string& p) { return k.compare(p) < 0; });
  return static_cast<size_t>(it - pivots.begin());
}

KeyRange Node::ChildRange(const KeyRange& mine, size_t i) const {
  KeyRange r = mine;
  if (i > 0) r.lo = pivots[i - 1];
  if (i < pivots.size()) {
    r.hi = pivots[i];
    r.has_hi = true;
  }
  return r;
}

uint64_t Node::buffer_pages() const {
  uint64_t n = 0;
  for (const Level& l : levels) n += l.pages();
  return n;
}

size_t Node::buffer_runs() const {
  size_t n = 0;
  for (const Level& l : levels) n += l.runs.size();
  return n;
}

const Node& NodeAt(const Node& root, const Path& path) {
  const Node* n = &root;
  for (size_t i : path) n = n->children[i].get();
  return *n;
}

KeyRange RangeAt(const Node& root, const Path& path) {
  KeyRange r;
  const Node* n = &root;
  for (size_t i : path) {
    r = n->ChildRange(r, i);
    n = n->children[i].get();
  }
  return r;
}

std::vector<Node*> CopyPath(std::shared_ptr<const Node>* root, const Path& path) {
  std::vector<Node*> out;
  auto copy = std::make_shared<Node>(**root);
  out.push_back(copy.get());
  *root = copy;
  Node* n = copy.get();
  for (size_t i : path) {
    auto child = std::make_shared<Node>(*n->children[i]);
    n->children[i] = child;
    n = child.get();
    out.push_back(n);
  }
  return out;
}

size_t Height(const Node& root) {
  size_t h = 0;
  for (const auto& c : root.children) h = std::max(h, Height(*c));
  return h + 1;
}

void PushToChildren(Node* parent,
                    const std::vector<std::vector<std::shared_ptr<const Run>>>& to_child) {
  for (size_t c = 0; c < to_child.size(); ++c) {
    if (to_child[c].empty()) continue;
    auto child = std::make_shared<Node>(*parent->children[c]);
    auto& l0 = child->levels[0].runs;
    l0.insert(l0.begin(), to_child[c].begin(), to_child[c].end());
    parent->children[c] = std::move(child);
  }
}

void ReplaceChild(Node* parent, size_t i, const std::vector<std::shared_ptr<const Node>>& nodes,
                  const std::vector<std::string>& seps) {
  const auto at = static_cast<std::ptrdiff_t>(i);
  parent->children.erase(parent->children.begin() + at);
  parent->children.insert(parent->children.begin() + at, nodes.begin(), nodes.end());
  parent->pivots.insert(parent->pivots.begin() + at, seps.begin(), seps.end());
}

std::shared_ptr<Node> NewNode() {
  auto n = std::make_shared<Node>();
  n->levels.resize(kNodeLevels);
  return n;
}

void FormTree(Node* root, size_t fanout) {
  std::vector<std::shared_ptr<const Node>> nodes;
  std::vector<std::string> seps;
  const auto& bottom = root->levels.back().runs;
  for (size_t i = 0; i < bottom.size(); ++i) {
    auto leaf = NewNode();
    leaf->levels.back().runs.push_back(bottom[i]);
    nodes.push_back(std::move(leaf));
    if (i > 0) seps.push_back(bottom[i]->meta().min_key);
  }
  GroupNodes(&nodes, &seps, fanout);
  root->levels.back().runs.clear();
  root->pivots = std::move(seps);
  root->children = std::move(nodes);
}

void GroupNodes(std::vector<std::shared_ptr<const Node>>* nodes, std::vector<std::string>* seps,
                size_t fanout) {
  while (nodes->size() > fanout) {
    const size_t n = nodes->size();
    const size_t groups = (n + fanout - 1) / fanout;
    std::vector<std::shared_ptr<const Node>> up;
    std::vector<std::string> up_seps;
    size_t begin = 0;
    for (size_t g = 0; g < groups; ++g) {
      const size_t end = n * (g + 1) / groups;  // even groups, each <= fanout
      auto inner = std::make_shared<Node>();
      inner->levels.resize(kNodeLevels);
      inner->children.assign(nodes->begin() + begin, nodes->begin() + end);
      inner->pivots.assign(seps->begin() + begin, seps->begin() + end - 1);
      if (g > 0) up_seps.push_back((*seps)[begin - 1]);
      up.push_back(std::move(inner));
      begin = end;
    }
    *nodes = std::move(up);
    *seps = std::move(up_seps);
  }
}

// A node: varint32 levels, then per level varint64 runs and their descriptors; varint64 leaf
// pages, each varint64 id, varint32 used bytes, varint32 entries, length-prefixed low key; varint32
// children; when > 0, children - 1 length-prefixed pivots and the children, in order.
void EncodeNode(const Node& node, std::string* out) {
  PutVarint32(out, static_cast<uint32_t>(node.levels.size()));
  for (const Level& level : node.levels) {
    PutVarint64(out, level.runs.size());
    for (const auto& r : level.runs) r->meta().EncodeTo(out);
  }
  PutVarint64(out, node.pages.size());
  for (const auto& p : node.pages) {
    PutVarint64(out, p->id);
    PutVarint32(out, p->used);
    PutVarint32(out, p->entries);
    PutLengthPrefixed(out, p->low);
  }
  PutVarint32(out, static_cast<uint32_t>(node.children.size()));
  if (node.leaf()) return;
  for (const std::string& p : node.pivots) PutLengthPrefixed(out, p);
  for (const auto& c : node.children) EncodeNode(*c, out);
}

Status DecodeLevels(Slice* in, const OpenRunFn& open, std::vector<Level>* out) {
  uint32_t levels;
  if (!GetVarint32(in, &levels) || levels == 0 || levels > 64) {
    return Status::DataLoss("aha metadata: malformed level count");
  }
  out->resize(levels);
  for (uint32_t l = 0; l < levels; ++l) {
    uint64_t n;
    if (!GetVarint64(in, &n) || n > (1u << 24)) {
      return Status::DataLoss(fmt::format("aha metadata: malformed level {}", l));
    }
    for (uint64_t i = 0; i < n; ++i) {
      RunMeta m;
      GROVE_RETURN_IF_ERROR(RunMeta::DecodeFrom(in, &m));
      GROVE_ASSIGN_OR_RETURN(std::shared_ptr<const Run> run, open(m));
      (*out)[l].runs.push_back(std::move(run));
    }
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<const Node>> DecodeNode(Slice* in, const OpenRunFn& open, size_t depth) {
  if (depth > 64) return Status::DataLoss("aha metadata: the tree is deeper than 64 levels");
  auto node = std::make_shared<Node>();
  GROVE_RETURN_IF_ERROR(DecodeLevels(in, open, &node->levels));
  uint64_t pages;
  if (!GetVarint64(in, &pages) || pages > (1u << 24)) {
    return Status::DataLoss("aha metadata: malformed leaf page count");
  }
  for (uint64_t i = 0; i < pages; ++i) {
    auto page = std::make_shared<LeafPage>();
    Slice low;
    if (!GetVarint64(in, &page->id) || !GetVarint32(in, &page->used) ||
        !GetVarint32(in, &page->entries) || page->entries == 0 || !GetLengthPrefixed(in, &low) ||
        page->id < 2 || (i > 0 && low.compare(node->pages.back()->low) <= 0)) {
      return Status::DataLoss(fmt::format("aha metadata: malformed leaf page {}", i));
    }
    page->low.assign(low.data(), low.size());
    node->pages.push_back(std::move(page));
  }
  uint32_t children;
  if (!GetVarint32(in, &children) || children > (1u << 20)) {
    return Status::DataLoss("aha metadata: malformed child count");
  }
  if (children == 0) return std::shared_ptr<const Node>(std::move(node));
  if (!node->pages.empty()) return Status::DataLoss("aha metadata: an inner node with leaf pages");
  node->pivots.resize(children - 1);
  for (std::string& p : node->pivots) {
    Slice s;
    if (!GetLengthPrefixed(in, &s)) return Status::DataLoss("aha metadata: malformed pivot");
    p.assign(s.data(), s.size());
  }
  for (uint32_t i = 0; i < children; ++i) {
    GROVE_ASSIGN_OR_RETURN(std::shared_ptr<const Node> child, DecodeNode(in, open, depth + 1));
    node->children.push_back(std::move(child));
  }
  return std::shared_ptr<const Node>(std::move(node));
}

void AddBufferSources(const ScanContext& ctx, const std::vector<Level>& levels, Slice start,
                      bool from_start, std::vector<std::unique_ptr<Source>>* out) {
  // Each run (level 0) or level is positioned only when the merge reaches it (NewLazySource):
  // its bound is where its first entry in the scan's direction can be at the earliest.
  const ScanContext* c = &ctx;
  auto bound = [&](const Run& r) {
    if (!ctx.reverse) {
      const std::string& lo = r.meta().min_key;
      return from_start || start.compare(lo) < 0 ? lo : std::string(start);
    }
    const std::string& hi = r.meta().max_key;
    return from_start || start.compare(hi) > 0 ? hi : std::string(start);
  };
  const std::string first(start);
  for (size_t l = 0; l < levels.size(); ++l) {
    const Level& level = levels[l];
    if (l == 0) {
      for (const auto& r : level.runs) {
        if (!r->Overlaps(ctx.lower, ctx.upper, ctx.has_upper)) continue;
        out->push_back(NewLazySource(bound(*r), [c, r, first, from_start] {
          ++c->runs_opened;
          return NewRunSource(c->pool, r, first, from_start, c->reverse, c->cause, c->readahead);
        }));
      }
      continue;
    }
    std::vector<std::shared_ptr<const Run>> runs;
    for (const auto& r : level.runs) {
      if (r->Overlaps(ctx.lower, ctx.upper, ctx.has_upper)) runs.push_back(r);
    }
    // The run the level source starts in: the first (last) that reaches `start`.
    const Run* at = nullptr;
    if (from_start) {
      if (!runs.empty()) at = ctx.reverse ? runs.back().get() : runs.front().get();
    } else if (!ctx.reverse) {
      for (const auto& r : runs) {
        if (start.compare(r->meta().max_key) <= 0) {
          at = r.get();
          break;
        }
      }
    } else {
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (start.compare((*it)->meta().min_key) >= 0) {
          at = it->get();
          break;
        }
      }
    }
    if (at == nullptr) continue;
    out->push_back(NewLazySource(bound(*at), [c, runs = std::move(runs), first, from_start] {
      ++c->runs_opened;
      return NewLevelSource(c->pool, runs, first, from_start, c->reverse, c->cause, c->readahead);
    }));
  }
}

namespace {

// The children of a node, one after another in the scan's direction, each opened when the scan
// reaches it.
class ChildrenSource final : public Source {
 public:
  ChildrenSource(const ScanContext* ctx, std::shared_ptr<const Node> node, KeyRange range,
                 Slice start, bool from_start)
      : ctx_(ctx), node_(std::move(node)), range_(std::move(range)) {
    const int n = static_cast<int>(node_->children.size());
    int i;
    if (from_start) {
      i = ctx_->reverse ? n - 1 : 0;
    } else {
      i = static_cast<int>(node_->ChildFor(start));
    }
    OpenChild(i, start, from_start);
  }
  bool Valid() const override { return child_ != nullptr && child_->Valid(); }
  const Entry& entry() const override { return child_->entry(); }
  void Next() override {
    child_->Next();
    SkipExhausted();
  }
  Status status() const override { return child_ ? child_->status() : Status::Ok(); }
  // A child may be a lazy source itself (a leaf with one run): its pending state is ours.
  bool Pending() const override { return child_ != nullptr && child_->Pending(); }
  void Open() override {
    child_->Open();
    SkipExhausted();
  }

 private:
  // Whether child i lies wholly outside the scan's bounds (beyond it in the scan's direction).
  bool Beyond(int i) const {
    if (i < 0 || i >= static_cast<int>(node_->children.size())) return true;
    const KeyRange r = node_->ChildRange(range_, static_cast<size_t>(i));
    if (!ctx_->reverse) return ctx_->has_upper && Slice(r.lo).compare(ctx_->upper) >= 0;
    return r.has_hi && Slice(r.hi).compare(ctx_->lower) <= 0;
  }
  void SkipExhausted() {
    if (!child_->Valid() && child_->status().ok()) {
      OpenChild(i_ + (ctx_->reverse ? -1 : 1), "", true);
    }
  }
  void OpenChild(int i, Slice start, bool from_start) {
    for (;; i += ctx_->reverse ? -1 : 1) {
      i_ = i;
      if (Beyond(i)) {
        child_.reset();
        return;
      }
      const size_t c = static_cast<size_t>(i);
      child_ =
          NewNodeSource(ctx_, node_->children[c], node_->ChildRange(range_, c), start, from_start);
      if (child_->Valid() || !child_->status().ok()) return;
      from_start = true;
    }
  }

  const ScanContext* ctx_;
  std::shared_ptr<const Node> node_;
  KeyRange range_;
  int i_ = 0;
  std::unique_ptr<Source> child_;
};

class NodeSource final : public Source {
 public:
  NodeSource(std::vector<std::unique_ptr<Source>> sources, bool reverse)
      : merge_(std::move(sources), reverse, /*keep_shadowed=*/false) {}
  bool Valid() const override { return merge_.Valid(); }
  const Entry& entry() const override { return merge_.entry(); }
  void Next() override { merge_.Next(); }
  Status status() const override { return merge_.status(); }

 private:
  MergingIterator merge_;
};

}  // namespace

std::unique_ptr<Source> NewNodeSource(const ScanContext* ctx, std::shared_ptr<const Node> node,
                                      const KeyRange& range, Slice start, bool from_start) {
  std::vector<std::unique_ptr<Source>> sources;
  AddBufferSources(*ctx, node->levels, start, from_start, &sources);
  if (node->adapted()) {
    sources.push_back(NewPagesSource(ctx->pool, node->pages, start, from_start, ctx->reverse,
                                     ctx->cause, ctx->readahead));
  }
  if (!node->leaf()) {
    sources.push_back(std::make_unique<ChildrenSource>(ctx, node, range, start, from_start));
  }
  if (sources.size() == 1) return std::move(sources[0]);
  return std::make_unique<NodeSource>(std::move(sources), ctx->reverse);
}

}  // namespace grove::aha
