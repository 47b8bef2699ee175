// HlnTree: parameters, create/open, metadata, statistics and the descent to a leaf's parent.

#include "index/hln/hln_tree.h"

#include <fmt/format.h>

#include "index/core/shortcut.h"
#include "page/extent_allocator.h"
#include "util/coding.h"

namespace grove {

using core::Fences;
using core::InnerNodeView;

namespace {

constexpr uint32_t kMetadataVersion = 2;
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

uint64_t MinPoolPagesFor(const hln::Config& c) { return kMinCacheLeaves * c.leaf_pages; }

Status CheckCache(const IndexContext& ctx, const hln::Config& c) {
  const uint64_t need = MinPoolPagesFor(c);
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
      {"fill_factor", core::kBulkLoadFill, false,
       "bulk load fills leaves to this fraction (0.5..1)"},
  };
  for (ParamSpec& p : shortcut::ParamSpecs()) spec.params.push_back(std::move(p));
  spec.page_types = {{static_cast<uint16_t>(hln::kSubnodePage), "hln subnode"}};
  spec.create = &HlnTree::Create;
  spec.open = &HlnTree::Open;
  spec.pages_per_op = [](const ParamMap& params) -> uint64_t {
    StatusOr<hln::Config> c = ParseConfig(params);
    return c.ok() ? PagesPerOp(*c) : kDefaultPagesPerOp;
  };
  return spec;
}

uint64_t HlnTree::PagesDirtiedPerOp() const { return PagesPerOp(cfg_); }

uint64_t HlnTree::MinPoolPages() const { return MinPoolPagesFor(cfg_); }

HlnTree::HlnTree(const IndexContext& ctx, const hln::Config& cfg,
                 const predict::ShortcutOptions& prefetch)
    : ctx_(ctx), pool_(ctx.pool), cfg_(cfg), order_(cfg.fnv), max_key_(ctx.options->max_key_bytes) {
  if (prefetch.mode != predict::PrefetchMode::kNone) {
    predictor_ = std::make_unique<predict::PathPredictor>(
        prefetch, [this](predict::TreeSnapshot* snap) { return CollectShape(snap); }, ctx.logger);
  }
}

core::TreeOptions HlnTree::CoreOptions() const {
  core::TreeOptions o;
  o.name = "hln";
  o.max_key = max_key_;
  o.leaf_payload_bytes = LeafPayloadBytes();
  o.observer = predictor_.get();
  return o;
}

Status HlnTree::AttachCore(Slice* metadata) {
  if (metadata != nullptr) {
    GROVE_ASSIGN_OR_RETURN(tree_, core::BTreeCore::Open(ctx_, CoreOptions(), metadata));
  } else {
    std::vector<PageWriteGuard> leaf;
    GROVE_RETURN_IF_ERROR(NewLeaf(&leaf));
    const std::vector<int> hints(cfg_.leaf_pages, 0);
    auto tree =
        core::BTreeCore::Create(ctx_, CoreOptions(), EncodeLeafRef(leaf[0].id(), false, hints));
    if (!tree.ok()) {
      FreeLeaf(&leaf);
      return tree.status();
    }
    tree_ = std::move(*tree);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Index>> HlnTree::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const hln::Config cfg, ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckCache(ctx, cfg));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<HlnTree>(new HlnTree(ctx, cfg, prefetch));
  GROVE_RETURN_IF_ERROR(tree->AttachCore(nullptr));
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

StatusOr<std::unique_ptr<Index>> HlnTree::Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const hln::Config cfg, ParseConfig(params));
  GROVE_RETURN_IF_ERROR(CheckCache(ctx, cfg));
  GROVE_ASSIGN_OR_RETURN(const predict::ShortcutOptions prefetch, shortcut::ParseOptions(params));
  auto tree = std::unique_ptr<HlnTree>(new HlnTree(ctx, cfg, prefetch));
  Slice in = metadata;
  uint32_t version;
  if (!GetVarint32(&in, &version) || version != kMetadataVersion) {
    return Status::DataLoss("hln metadata in the manifest is of another format version");
  }
  GROVE_RETURN_IF_ERROR(tree->AttachCore(&in));
  uint32_t pages, bits, flags;
  uint64_t entries, leaves, stash_leaves, used, floor, ceiling;
  if (!GetVarint64(&in, &entries) || !GetVarint64(&in, &leaves) ||
      !GetVarint64(&in, &stash_leaves) || !GetVarint64(&in, &used) || !GetVarint32(&in, &pages) ||
      !GetVarint32(&in, &bits) || !GetVarint32(&in, &flags) || !GetVarint64(&in, &floor) ||
      !GetVarint64(&in, &ceiling) || !in.empty()) {
    return Status::DataLoss("hln metadata in the manifest is malformed");
  }
  if (pages != static_cast<uint32_t>(cfg.leaf_pages) ||
      bits != static_cast<uint32_t>(cfg.hint_bits) || ((flags & 1) != 0) != cfg.fnv ||
      ((flags & 2) != 0) != cfg.stash) {
    return Status::DataLoss(
        "hln metadata describes another layout than the superblock's layout parameters");
  }
  tree->entries_ = entries;
  tree->leaves_ = leaves;
  tree->stash_leaves_ = stash_leaves;
  tree->used_bytes_ = used;
  tree->key_floor_ = floor;
  tree->key_ceiling_ = ceiling;
  // Models are not persisted: training reads only the inner nodes, so build them now.
  if (tree->predictor_) GROVE_RETURN_IF_ERROR(tree->predictor_->Rebuild());
  return std::unique_ptr<Index>(std::move(tree));
}

std::string HlnTree::SerializeMetadata() {
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  tree_->Serialize(&s);
  PutVarint64(&s, entries_.load());
  PutVarint64(&s, leaves_.load());
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
  s.height = tree_->height();
  s.inner_pages = tree_->inner_pages();
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

}  // namespace grove
