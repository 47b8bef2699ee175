#include "index/aulid/aulid.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "index/aulid/prefix.h"
#include "index/core/tree.h"
#include "util/coding.h"

namespace grove {

namespace {
// 3: 16-byte slots with per-node slots per page (slot.h); versions 1 and 2 (64-byte slots) are
// refused: their inner pages cannot be read by this layout.
constexpr uint32_t kMetadataVersion = 3;
}  // namespace

VariantSpec Aulid::Spec() {
  VariantSpec spec;
  spec.name = "aulid";
  spec.summary =
      "AULID: B+-tree leaves under learned inner nodes (FMCD mixed nodes, packed "
      "arrays, two-layer B+-tree nodes)";
  spec.params = {
      {"fill_factor", core::kBulkLoadFill, false,
       "bulk load packs leaves to this fraction of a page (0.5..1.0)"},
      {"mode", "aulid", false,
       "aulid | lipp_b: lipp_b is the paper's LIPP-B+ ablation (every conflict in the inner part "
       "creates a child mixed node)"},
      {"scan_forward", "on", false,
       "on | off: a lookup that lands on a smaller DATA slot looks right in the page it read"},
      {"adjust", "on", false, "on | off: Algorithm 2's rebuild of mixed nodes that grew deep"},
      {"alpha", "0.05", false, "Adjust: share of a node's entries at depth >= 3 (0..1)"},
      {"beta", "1.2", false, "Adjust: growth over the size a node was built with (1..100)"},
      {"slots_per_entry", "2", false,
       "slots of a mixed node per entry it is built over (1..8); 0: LIPP's gap rule (6, 3 or 2 "
       "slots per entry by node size)"},
      {"fulfill", "off", false,
       "on | off: bulk builds copy each DATA slot's entry into the NULL slots before it, so a "
       "lookup landing on one needs no further read; for read-only use (the first change of "
       "the inner part retires the copies until the next full build)"},
  };
  spec.page_types = {{static_cast<uint16_t>(aulid::kSlotPage), "aulid mixed-node slot page"},
                     {static_cast<uint16_t>(aulid::kSlabPage), "aulid packed-array slab"},
                     {static_cast<uint16_t>(aulid::kBranchPage), "aulid branch page"}};
  spec.create = &Aulid::Create;
  spec.open = &Aulid::Open;
  spec.pages_per_op = [](const ParamMap&) { return kPagesPerOp; };
  return spec;
}

StatusOr<Aulid::Config> Aulid::ParseConfig(const ParamMap& params) {
  Config c;
  GROVE_ASSIGN_OR_RETURN(c.fill, ParseDoubleParam(params, "fill_factor", 0.5, 1.0));
  GROVE_ASSIGN_OR_RETURN(const std::string mode,
                         ParseEnumParam(params, "mode", {"aulid", "lipp_b"}));
  GROVE_ASSIGN_OR_RETURN(const std::string sf,
                         ParseEnumParam(params, "scan_forward", {"on", "off"}));
  GROVE_ASSIGN_OR_RETURN(const std::string adj, ParseEnumParam(params, "adjust", {"on", "off"}));
  GROVE_ASSIGN_OR_RETURN(const std::string ful, ParseEnumParam(params, "fulfill", {"on", "off"}));
  GROVE_ASSIGN_OR_RETURN(c.inner.alpha, ParseDoubleParam(params, "alpha", 0.0, 1.0));
  GROVE_ASSIGN_OR_RETURN(c.inner.beta, ParseDoubleParam(params, "beta", 1.0, 100.0));
  GROVE_ASSIGN_OR_RETURN(c.inner.slots_per_entry,
                         ParseDoubleParam(params, "slots_per_entry", 0.0, 8.0));
  if (c.inner.slots_per_entry > 0 && c.inner.slots_per_entry < 1) {
    return Status::InvalidArgument(
        "index.params.slots_per_entry: must be 0 (LIPP's gap rule) or between 1 and 8");
  }
  c.inner.lipp = mode == "lipp_b";
  c.inner.scan_forward = sf == "on";
  c.inner.adjust = adj == "on";
  c.inner.fulfill = ful == "on";
  return c;
}

namespace {

// No Adjust rebuild dirties more than a quarter of the pool: under appends, a node that large is
// left to grow deeper and a smaller one on the path is rebuilt instead.
aulid::InnerOptions WithRebuildBound(aulid::InnerOptions o, uint64_t pool_pages) {
  o.max_rebuild_pages = std::max<uint64_t>(16, pool_pages / 4);
  return o;
}

}  // namespace

Aulid::Aulid(const IndexContext& ctx, const Config& cfg)
    : ctx_(ctx),
      pool_(ctx.pool),
      cfg_(cfg),
      max_key_(ctx.options->max_key_bytes),
      max_cell_(MaxCellBytes(*ctx.options)),
      inner_(ctx.pool, ctx.allocator, WithRebuildBound(cfg.inner, ctx.pool->capacity_pages())) {}

StatusOr<std::unique_ptr<Index>> Aulid::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const Config cfg, ParseConfig(params));
  auto t = std::unique_ptr<Aulid>(new Aulid(ctx, cfg));
  // One empty leaf: the tail, and the last leaf for good.
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, t->NewLeaf());
  WriterLock lock(&t->inner_mu_);  // no other thread has `t` yet: for the analysis
  t->tail_ = t->last_ = leaf.id();
  t->leaf_pages_ = 1;
  return std::unique_ptr<Index>(std::move(t));
}

StatusOr<std::unique_ptr<Index>> Aulid::Open(const IndexContext& ctx, const ParamMap& params,
                                             Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const Config cfg, ParseConfig(params));
  auto t = std::unique_ptr<Aulid>(new Aulid(ctx, cfg));
  Slice in = metadata;
  uint32_t version = 0;
  uint64_t entries = 0, leaves = 0, splits = 0, joins = 0, merges = 0, merge_joins = 0;
  uint64_t bulk_ms = 0;
  Slice prefix;
  WriterLock lock(&t->inner_mu_);  // no other thread has `t` yet: for the analysis
  if (!GetVarint32(&in, &version) || version == 0 || version > kMetadataVersion) {
    return Status::DataLoss("aulid metadata in the manifest is of another format version");
  }
  if (version < kMetadataVersion) {
    return Status::FailedPrecondition(fmt::format(
        "this aulid database has format version {} (64-byte inner slots); this build reads "
        "version {} only: read its records out with the build that wrote it (a full scan) and "
        "load them into a new database",
        version, kMetadataVersion));
  }
  if (!GetLengthPrefixed(&in, &prefix) || !GetVarint64(&in, &t->tail_) ||
      !GetVarint64(&in, &t->last_) || !GetVarint64(&in, &t->last_entry_) ||
      !GetVarint64(&in, &entries) || !GetVarint64(&in, &leaves) || !GetVarint64(&in, &splits) ||
      !GetVarint64(&in, &joins) || !GetVarint64(&in, &merges) || !GetVarint64(&in, &merge_joins) ||
      !GetVarint64(&in, &bulk_ms) || t->tail_ == kInvalidPageId || t->last_ == kInvalidPageId) {
    return Status::DataLoss("aulid metadata in the manifest is malformed");
  }
  GROVE_RETURN_IF_ERROR(t->inner_.Deserialize(&in));
  if (!in.empty()) return Status::DataLoss("aulid metadata in the manifest has trailing bytes");
  t->prefix_ = std::string(prefix);
  t->entries_ = entries;
  t->leaf_pages_ = leaves;
  t->splits_ = splits;
  t->run_joins_ = joins;
  t->merges_ = merges;
  t->merge_run_joins_ = merge_joins;
  t->bulk_load_ms_ = bulk_ms;
  return std::unique_ptr<Index>(std::move(t));
}

std::string Aulid::SerializeMetadata() {
  ReaderLock lock(&inner_mu_);
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  PutLengthPrefixed(&s, prefix_);
  PutVarint64(&s, tail_);
  PutVarint64(&s, last_);
  PutVarint64(&s, last_entry_);
  PutVarint64(&s, entries_.load());
  PutVarint64(&s, leaf_pages_.load());
  PutVarint64(&s, splits_.load());
  PutVarint64(&s, run_joins_.load());
  PutVarint64(&s, merges_.load());
  PutVarint64(&s, merge_run_joins_.load());
  PutVarint64(&s, bulk_load_ms_.load());
  inner_.Serialize(&s);
  return s;
}

uint64_t Aulid::ProjWith(const std::string& prefix, Slice key) {
  return aulid::ProjectPast(prefix, key);
}

uint64_t Aulid::Proj(Slice key) const { return ProjWith(prefix_, key); }

StatusOr<PageWriteGuard> Aulid::NewLeaf() {
  GROVE_ASSIGN_OR_RETURN(const PageId id, ctx_.allocator->Allocate(1));
  StatusOr<PageWriteGuard> g = pool_->NewPage(id, core::kLeafPage);
  if (!g.ok()) {
    ctx_.allocator->Free(id, 1);
    return g.status();
  }
  core::Leaf::Format(g->mutable_data());
  return g;
}

IndexStats Aulid::GetStats() {
  IndexStats s;
  s.variant = "aulid";
  s.entries = entries_.load();
  s.leaf_pages = leaf_pages_.load();
  auto& x = s.extra;
  {
    ReaderLock lock(&inner_mu_);
    aulid::NodeSpace& sp = inner_.space();
    s.inner_pages = sp.mixed_pages() + sp.slab_pages() + sp.branch_pages();
    s.inner_bytes = s.inner_pages * kPageSize;
    x["inner_entries"] = static_cast<double>(inner_.size());
    x["prefix_bytes"] = static_cast<double>(prefix_.size());
    x["slab_pages"] = static_cast<double>(sp.slab_pages());
    x["branch_pages"] = static_cast<double>(sp.branch_pages());
    // Figures of the last full walk (bulk load or Verify): walking on every scrape would read
    // the whole inner part.
    x["mixed_nodes"] = static_cast<double>(shape_.mixed_nodes);
    x["data_slot_depth"] = shape_.mean_depth;
    x["entries_data"] = static_cast<double>(shape_.data);
    x["entries_packed"] = static_cast<double>(shape_.packed);
    x["entries_branch"] = static_cast<double>(shape_.branch);
    x["descriptors_out_of_line"] = static_cast<double>(shape_.descriptors_out_of_line);
    s.height = static_cast<uint32_t>(std::ceil(shape_.mean_depth)) + 1;
    const aulid::InnerCounters& c = inner_.counters();
    x["smo_create_total"] = static_cast<double>(c.creates);
    x["smo_adjust_total"] = static_cast<double>(c.adjusts);
    x["smo_adjust_declined_total"] = static_cast<double>(c.declined);
    x["smo_promotion_total"] = static_cast<double>(c.promotions);
    x["smo_branch_split_total"] = static_cast<double>(c.branch_splits);
    x["fulfill_copies_valid"] = inner_.copies_valid() ? 1.0 : 0.0;
  }
  x["smo_split_total"] = static_cast<double>(splits_.load());
  x["split_run_joins_total"] = static_cast<double>(run_joins_.load());
  x["smo_merge_total"] = static_cast<double>(merges_.load());
  x["merge_run_joins_total"] = static_cast<double>(merge_run_joins_.load());
  x["reindex_total"] = static_cast<double>(reindexes_.load());
  x["bulk_load_seconds"] = bulk_load_ms_.load() / 1000.0;
  const uint64_t n = lookups_.load();
  x["lookups_total"] = static_cast<double>(n);
  x["inner_pages_per_lookup"] = n == 0 ? 0.0 : static_cast<double>(lookup_inner_pages_) / n;
  x["mixed_pages_per_lookup"] = n == 0 ? 0.0 : static_cast<double>(lookup_mixed_pages_) / n;
  x["packed_pages_per_lookup"] = n == 0 ? 0.0 : static_cast<double>(lookup_packed_pages_) / n;
  x["branch_pages_per_lookup"] = n == 0 ? 0.0 : static_cast<double>(lookup_branch_pages_) / n;
  x["leaf_pages_per_lookup"] = n == 0 ? 0.0 : static_cast<double>(lookup_leaf_pages_) / n;
  return s;
}

}  // namespace grove
