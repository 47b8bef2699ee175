// HlnTree: parameters, create/open, metadata, statistics and the descent to a leaf's parent.

#include "index/hln/hln_tree.h"

#include <fmt/format.h>

#include "index/shortcut.h"
#include "page/extent_allocator.h"
#include "util/coding.h"

namespace grove {

using index_common::Fences;
using index_common::InnerNode;
using index_common::InnerNodeView;

namespace {

constexpr uint32_t kMetadataVersion = 1;
// A structure change pins and dirties up to two leaves at once; the cache must hold many of them
// besides everything else (see docs/variants.md, "memory").
constexpr uint64_t kMinCacheLeaves = 16;

StatusOr<hln::Config> ParseConfig(const ParamMap& params) {
  hln::Config c;
  GROVE_ASSIGN_OR_RETURN(const std::string pages,
                         ParseEnumParam(params, "leaf_pages", {"4", "16", "64", "256"}));
  GROVE_ASSIGN_OR_RETURN(const std::string bits,
                         ParseEnumParam(params, "hint_bits", {"0", "2", "4", "8"}));
  GROVE_ASSIGN_OR_RETURN(const std::string hash, ParseEnumParam(params, "hash", {"none", "fnv"}));
  GROVE_ASSIGN_OR_RETURN(const std::string stash,
                         ParseEnumParam(params, "stash", {"false", "true"}));
  GROVE_ASSIGN_OR_RETURN(c.hint_range, ParseDoubleParam(params, "hint_range", 0.01, 1.0));
  GROVE_ASSIGN_OR_RETURN(c.threshold, ParseDoubleParam(params, "rebalance_threshold", 0.5, 1.0));
  GROVE_ASSIGN_OR_RETURN(c.fill_factor, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  c.leaf_pages = std::stoi(pages);
  c.hint_bits = std::stoi(bits);
  c.fnv = hash == "fnv";
  c.stash = stash == "true";
  return c;
}

// A split or merge rewrites every subnode of two leaves, each with a stash overflow subnode at
// most; a rebalance or stash conversion rewrites fewer.
uint64_t PagesPerOp(const hln::Config& c) { return 2 * static_cast<uint64_t>(c.leaf_pages) + 2; }

Status CheckCache(const IndexContext& ctx, const hln::Config& c) {
  const uint64_t need = kMinCacheLeaves * c.leaf_pages;
  if (ctx.pool->capacity_pages() < need) {
    return Status::InvalidArgument(fmt::format(
        "cache_bytes: hln with index.params.leaf_pages={} needs a cache of at least {} leaves "
        "({} KiB); it has {} KiB",
        c.leaf_pages, kMinCacheLeaves, need * kPageSize / 1024,
        ctx.pool->capacity_pages() * kPageSize / 1024));
  }
  return Status::Ok();
}

}  // namespace

VariantSpec HlnTree::Spec() {
  VariantSpec spec;
  spec.name = "hln";
  spec.summary =
      "HLN-tree: huge leaves of independent 4 KiB subnodes, hints in the last inner level, "
      "rebalancing, stash nodes, optional FNV hashing inside leaves";
  spec.params = {
      {"leaf_pages", "16", true, "subnodes (4 KiB pages) per leaf: 4, 16, 64 or 256"},
      {"hint_bits", "4", true, "hint bits per subnode in the last inner level: 0, 2, 4 or 8"},
      {"hash", "none", true, "order inside leaves: none (keys) or fnv (FNV-1a of the key)"},
      {"stash", "false", true, "convert leaves above the threshold into stash nodes: true/false"},
      {"hint_range", "0.2", true,
       "largest hint offset as a fraction of a subnode's expected key range (0.01..1)"},
      {"rebalance_threshold", "0.97", false,
       "a full subnode rebalances its leaf while the leaf is at most this full (0.5..1)"},
      {"fill_factor", "0.9", false, "bulk load fills leaves to this fraction (0.5..1)"},
  };
  for (ParamSpec& p : shortcut::ParamSpecs()) spec.params.push_back(std::move(p));
  spec.page_types = {{static_cast<uint16_t>(hln::kSubnodePage), "hln subnode"},
                     {static_cast<uint16_t>(hln::kInnerPage), "hln inner node"}};
  spec.create = &HlnTree::Create;
  spec.open = &HlnTree::Open;
  spec.pages_per_op = [](const ParamMap& params) -> uint64_t {
    StatusOr<hln::Config> c = ParseConfig(params);
    return c.ok() ? PagesPerOp(*c) : kDefaultPagesPerOp;
  };
  return spec;
}

uint64_t HlnTree::PagesDirtiedPerOp() const { return PagesPerOp(cfg_); }

HlnTree::HlnTree(const IndexContext& ctx, const hln::Config& cfg, PageId root,
                 const predict::ShortcutOptions& prefetch)
    : ctx_(ctx),
      pool_(ctx.pool),
      cfg_(cfg),
      order_(cfg.fnv),
      root_(root),
      max_key_(ctx.options->max_key_bytes) {
  if (prefetch.mode != predict::PrefetchMode::kNone) {
    predictor_ = std::make_unique<predict::PathPredictor>(
        prefetch, [this](predict::TreeSnapshot* snap) { return CollectShape(snap); }, ctx.logger);
  }
}

StatusOr<std::unique_ptr<Index>> HlnTree::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const hln::Config cfg, ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckCache(ctx, cfg));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  GROVE_ASSIGN_OR_RETURN(const PageId root, ctx.allocator->Allocate(1));
  auto tree = std::unique_ptr<HlnTree>(new HlnTree(ctx, cfg, root, prefetch));
  std::vector<PageWriteGuard> leaf;
  GROVE_RETURN_IF_ERROR(tree->NewLeaf(&leaf));
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard g,
                         ctx.pool->NewPage(root, hln::kInnerPage, Retention::kHigh));
  InnerNode::Format(g.mutable_data(), 1);
  const std::vector<int> hints(cfg.leaf_pages, 0);
  InnerNode(g.mutable_data()).InsertChild("", tree->EncodeLeafRef(leaf[0].id(), false, hints));
  g.Release();
  leaf.clear();
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

StatusOr<std::unique_ptr<Index>> HlnTree::Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const hln::Config cfg, ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckCache(ctx, cfg));
  Slice in = metadata;
  uint32_t version, pages, bits, flags;
  uint64_t root, height, entries, leaves, inners, stash_leaves, used, floor, ceiling;
  if (!GetVarint32(&in, &version) || version != kMetadataVersion || !GetVarint64(&in, &root) ||
      !GetVarint64(&in, &height) || !GetVarint64(&in, &entries) || !GetVarint64(&in, &leaves) ||
      !GetVarint64(&in, &inners) || !GetVarint64(&in, &stash_leaves) || !GetVarint64(&in, &used) ||
      !GetVarint32(&in, &pages) || !GetVarint32(&in, &bits) || !GetVarint32(&in, &flags) ||
      !GetVarint64(&in, &floor) || !GetVarint64(&in, &ceiling) || !in.empty() ||
      root == kInvalidPageId || height < 2 || height > 64) {
    return Status::DataLoss("hln metadata in the manifest is malformed");
  }
  if (pages != static_cast<uint32_t>(cfg.leaf_pages) ||
      bits != static_cast<uint32_t>(cfg.hint_bits) || ((flags & 1) != 0) != cfg.fnv ||
      ((flags & 2) != 0) != cfg.stash) {
    return Status::DataLoss(
        "hln metadata describes another layout than the superblock's layout parameters");
  }
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<HlnTree>(new HlnTree(ctx, cfg, root, prefetch));
  tree->height_ = static_cast<uint32_t>(height);
  tree->entries_ = entries;
  tree->leaves_ = leaves;
  tree->inner_pages_ = inners;
  tree->stash_leaves_ = stash_leaves;
  tree->used_bytes_ = used;
  tree->key_floor_ = floor;
  tree->key_ceiling_ = ceiling;
  // Models are not persisted: training reads only the inner nodes, so rebuild them now.
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

std::string HlnTree::SerializeMetadata() {
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  PutVarint64(&s, root_);
  PutVarint64(&s, height_.load());
  PutVarint64(&s, entries_.load());
  PutVarint64(&s, leaves_.load());
  PutVarint64(&s, inner_pages_.load());
  PutVarint64(&s, stash_leaves_.load());
  PutVarint64(&s, used_bytes_.load());
  PutVarint32(&s, static_cast<uint32_t>(cfg_.leaf_pages));
  PutVarint32(&s, static_cast<uint32_t>(cfg_.hint_bits));
  PutVarint32(&s, (cfg_.fnv ? 1u : 0u) | (cfg_.stash ? 2u : 0u));
  PutVarint64(&s, key_floor_.load());
  PutVarint64(&s, key_ceiling_.load());
  return s;
}

IndexStats HlnTree::GetStats() {
  IndexStats s;
  s.variant = "hln";
  s.height = height_.load();
  s.inner_pages = inner_pages_.load();
  const uint64_t leaves = leaves_.load();
  s.leaf_pages = leaves * cfg_.leaf_pages;
  s.inner_bytes = s.inner_pages * kPageSize;
  s.entries = entries_.load();
  auto& x = s.extra;
  x["leaves"] = static_cast<double>(leaves);
  x["stash_leaves"] = static_cast<double>(stash_leaves_.load());
  x["hint_bytes"] = static_cast<double>(leaves * hln::HintBytes(cfg_.leaf_pages, cfg_.hint_bits));
  x["fill_grade"] = leaves == 0 ? 0.0
                                : static_cast<double>(used_bytes_.load()) /
                                      (static_cast<double>(s.leaf_pages) * hln::kSubnodeCapacity);
  x["point_lookups_total"] = static_cast<double>(lookups_.load());
  x["extra_subnode_reads_total"] = static_cast<double>(extra_reads_.load());
  x["stash_overflow_reads_total"] = static_cast<double>(overflow_reads_.load());
  x["rebalances_total"] = static_cast<double>(rebalances_.load());
  x["splits_total"] = static_cast<double>(splits_.load());
  x["merges_total"] = static_cast<double>(merges_.load());
  x["tidies_total"] = static_cast<double>(tidies_.load());
  x["tidy_failures_total"] = static_cast<double>(tidy_failures_.load());
  x["stash_conversions_total"] = static_cast<double>(stash_conversions_.load());
  x["stash_rebuilds_total"] = static_cast<double>(stash_rebuilds_.load());
  const uint64_t splits = splits_.load();
  x["split_fill_grade"] =
      splits == 0 ? 0.0 : static_cast<double>(split_fill_ppm_.load()) * 1e-6 / splits;
  x["subnode_writes_single_total"] = static_cast<double>(writes_single_.load());
  x["subnode_writes_rebalance_total"] = static_cast<double>(writes_rebalance_.load());
  x["subnode_writes_split_total"] = static_cast<double>(writes_split_.load());
  const uint64_t guessed = verify_keys_guessed_.load();
  x["verify_misguessed_fraction"] =
      guessed == 0 ? 0.0 : static_cast<double>(verify_keys_misguessed_.load()) / guessed;
  if (predictor_) shortcut::AddStats(*predictor_, &s);
  return s;
}

std::string HlnTree::EncodeLeafRef(PageId leaf, bool stash, const std::vector<int>& hints) const {
  std::string s(9, '\0');
  EncodeFixed64(s.data(), leaf);
  s[8] = stash ? 1 : 0;
  s += hln::EncodeHints(hints, cfg_.hint_bits, hln::HintBytes(cfg_.leaf_pages, cfg_.hint_bits));
  return s;
}

hln::LeafRef HlnTree::DecodeLeafRef(Slice payload) const {
  hln::LeafRef r;
  r.leaf = DecodeFixed64(payload.data());
  r.stash = (payload[8] & 1) != 0;
  r.hints = hln::DecodeHints(payload.substr(9), PackedCount(r), cfg_.hint_bits);
  return r;
}

hln::HintParams HlnTree::HintParamsFor(bool stash) const {
  hln::HintParams p;
  p.parts = stash ? cfg_.leaf_pages - 1 : cfg_.leaf_pages;
  p.bits = cfg_.hint_bits;
  p.hint_range = cfg_.hint_range;
  return p;
}

void HlnTree::NoteKey(Slice key) {
  const uint64_t p = Project(key);
  uint64_t cur = key_floor_.load(std::memory_order_relaxed);
  while (p < cur && !key_floor_.compare_exchange_weak(cur, p)) {
  }
  cur = key_ceiling_.load(std::memory_order_relaxed);
  while (p > cur && !key_ceiling_.compare_exchange_weak(cur, p)) {
  }
}

int HlnTree::Guess(const hln::LeafRef& ref, const Fences& leaf_fences, Slice key) const {
  return hln::GuessSubnode(Space(leaf_fences).Position(key), ref.hints, HintParamsFor(ref.stash));
}

StatusOr<HlnTree::ParentLatch> HlnTree::DescendToParent(Slice key, Seek mode, IoCause cause,
                                                        bool exclusive, PrefetchBatch* batch,
                                                        Path* path) {
  for (;;) {
    if (path != nullptr) path->fill(kInvalidPageId);
    ParentLatch out;
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(root_, cause, Retention::kHigh));
    if (InnerNodeView(g.data()).level() == 1 && exclusive) {
      g.Release();
      GROVE_ASSIGN_OR_RETURN(out.excl, pool_->FetchWrite(root_, cause, Retention::kHigh));
      if (InnerNodeView(out.excl.data()).level() != 1) continue;  // the root grew meanwhile
    } else {
      out.shared = std::move(g);
    }
    for (;;) {
      const InnerNodeView n(out.data());
      int i = 0;
      switch (mode) {
        case Seek::kAtOrAfter:
          i = n.ChildIndexFor(key);
          break;
        case Seek::kBefore:
          i = std::max(0, n.ChildIndexBelow(key));
          break;
        case Seek::kLast:
          i = n.count() - 1;
          break;
      }
      if (n.level() == 1) {
        out.child = i;
        return out;
      }
      const PageId child = n.child(i);
      const Fences child_fences = n.ChildFences(i, out.fences);
      const uint16_t level = n.level();
      if (level == 2 && exclusive) {
        GROVE_ASSIGN_OR_RETURN(PageWriteGuard c, pool_->FetchWrite(child, cause, Retention::kHigh));
        if (InnerNodeView(c.data()).level() != 1) {
          return Status::DataLoss(fmt::format("hln: page {} at level 2 has child {} at level {}",
                                              out.id(), child, InnerNodeView(c.data()).level()));
        }
        out.shared.Release();
        out.excl = std::move(c);
      } else {
        // A prefetched image is admitted only here, where the child pointer names exactly its page.
        GROVE_ASSIGN_OR_RETURN(PageReadGuard c,
                               pool_->FetchRead(child, cause, Retention::kHigh, batch));
        if (path != nullptr && level - 1 < predict::kMaxLevels) (*path)[level - 1] = child;
        if (InnerNodeView(c.data()).level() + 1 != level) {
          return Status::DataLoss(fmt::format("hln: page {} at level {} has child {} at level {}",
                                              out.id(), level, child,
                                              InnerNodeView(c.data()).level()));
        }
        out.shared = std::move(c);  // releases the parent after the child is latched
      }
      out.fences = child_fences;
    }
  }
}

}  // namespace grove
