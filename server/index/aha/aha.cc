// AHA-tree: parameters, create/open, metadata, snapshots, checkpoint hooks and statistics.

#include "index/aha/aha.h"

#include <cctype>

#include <fmt/format.h>

#include "util/clock.h"
#include "util/coding.h"

namespace grove {

namespace aha {

namespace {

// A key of hot_ranges with its escapes resolved: \xHH a byte, \\ a backslash.
StatusOr<std::string> Unescape(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
      continue;
    }
    auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    if (i + 3 < in.size() && in[i + 1] == 'x' && hex(in[i + 2]) && hex(in[i + 3])) {
      out.push_back(static_cast<char>(std::stoi(in.substr(i + 2, 2), nullptr, 16)));
      i += 3;
      continue;
    }
    return Status::InvalidArgument(
        fmt::format("index.params.hot_ranges: '{}': a backslash must start \\xHH or \\\\", in));
  }
  return out;
}

// "lo..hi[,lo..hi]": key ranges [lo, hi) with lo < hi, merged where they overlap.
StatusOr<std::vector<HotRange>> ParseHotRanges(const ParamMap& params) {
  auto it = params.find("hot_ranges");
  std::vector<HotRange> out;
  if (it == params.end() || it->second.empty()) return out;
  const std::string& text = it->second;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    const size_t dots = item.find("..");
    if (dots == std::string::npos || dots == 0 || dots + 2 >= item.size()) {
      return Status::InvalidArgument(
          fmt::format("index.params.hot_ranges: '{}' is not lo..hi (two keys, lo below hi)", item));
    }
    GROVE_ASSIGN_OR_RETURN(std::string lo, Unescape(item.substr(0, dots)));
    GROVE_ASSIGN_OR_RETURN(std::string hi, Unescape(item.substr(dots + 2)));
    HotRange h{std::move(lo), std::move(hi)};
    if (h.lo >= h.hi) {
      return Status::InvalidArgument(
          fmt::format("index.params.hot_ranges: '{}': lo must be below hi", item));
    }
    out.push_back(std::move(h));
    pos = comma + 1;
  }
  return MergeHotRanges(std::move(out));
}

}  // namespace

std::vector<HotRange> MergeHotRanges(std::vector<HotRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const HotRange& a, const HotRange& b) { return a.lo < b.lo; });
  std::vector<HotRange> merged;
  for (HotRange& h : ranges) {
    if (!merged.empty() && h.lo <= merged.back().hi) {
      merged.back().hi = std::max(merged.back().hi, h.hi);
    } else {
      merged.push_back(std::move(h));
    }
  }
  return merged;
}

StatusOr<Config> ParseConfig(const ParamMap& params) {
  Config c;
  GROVE_ASSIGN_OR_RETURN(c.pool_share, ParseDoubleParam(params, "buffer_pool_share", 0.05, 0.95));
  if (auto it = params.find("memtable_bytes"); it != params.end() && it->second != "auto") {
    GROVE_ASSIGN_OR_RETURN(c.memtable_bytes,
                           ParseUintParam(params, "memtable_bytes", 4096, 1ull << 34));
  }
  GROVE_ASSIGN_OR_RETURN(const uint64_t run_pages, ParseUintParam(params, "run_pages", 8, 256));
  c.run_pages = static_cast<uint32_t>(run_pages);
  GROVE_ASSIGN_OR_RETURN(c.bloom_bits_per_key,
                         ParseDoubleParam(params, "bloom_bits_per_key", 0.0, 32.0));
  GROVE_ASSIGN_OR_RETURN(const uint64_t l0, ParseUintParam(params, "l0_runs", 1, 64));
  c.l0_runs = static_cast<uint32_t>(l0);
  GROVE_ASSIGN_OR_RETURN(const uint64_t levels, ParseUintParam(params, "root_levels", 2, 8));
  c.root_levels = static_cast<uint32_t>(levels);
  GROVE_ASSIGN_OR_RETURN(c.level_ratio, ParseDoubleParam(params, "level_ratio", 2.0, 100.0));
  GROVE_ASSIGN_OR_RETURN(const uint64_t ra, ParseUintParam(params, "readahead_pages", 1, 64));
  c.readahead_pages = static_cast<uint32_t>(ra);
  GROVE_ASSIGN_OR_RETURN(const uint64_t fanout, ParseUintParam(params, "fanout", 2, 4096));
  c.fanout = static_cast<uint32_t>(fanout);
  GROVE_ASSIGN_OR_RETURN(c.node_pages, ParseUintParam(params, "node_pages", 16, 1u << 24));
  if (c.node_pages < 2ull * c.run_pages) {
    return Status::InvalidArgument(fmt::format(
        "index.params.node_pages ({}) must be at least twice index.params.run_pages ({}): a leaf "
        "splits into leaves of half a buffer, each of whole runs",
        c.node_pages, c.run_pages));
  }
  GROVE_ASSIGN_OR_RETURN(const uint64_t nl0, ParseUintParam(params, "node_l0_runs", 1, 64));
  c.node_l0_runs = static_cast<uint32_t>(nl0);
  GROVE_ASSIGN_OR_RETURN(c.hot_ranges, ParseHotRanges(params));
  GROVE_ASSIGN_OR_RETURN(const std::string detect,
                         ParseEnumParam(params, "hot_detect", {"true", "false"}));
  c.hot_detect = detect == "true";
  GROVE_ASSIGN_OR_RETURN(const std::string adapt,
                         ParseEnumParam(params, "adapt", {"query", "eager", "off"}));
  c.adapt = adapt == "query"   ? Config::Adapt::kQuery
            : adapt == "eager" ? Config::Adapt::kEager
                               : Config::Adapt::kOff;
  GROVE_ASSIGN_OR_RETURN(const std::string split,
                         ParseEnumParam(params, "split", {"down", "side"}));
  c.down_split = split == "down";
  GROVE_ASSIGN_OR_RETURN(const std::string alloc,
                         ParseEnumParam(params, "leaf_alloc", {"even", "sound_remedy"}));
  c.leaf_alloc = alloc == "even" ? LeafAlloc::kEven : LeafAlloc::kSoundRemedy;
  GROVE_ASSIGN_OR_RETURN(const std::string insert,
                         ParseEnumParam(params, "insert", {"batch", "tree"}));
  c.tree_insert = insert == "tree";
  return c;
}

}  // namespace aha

using aha::Level;
using aha::Node;
using aha::Run;
using aha::Version;

namespace {

// 1: the root buffer's levels; 2: the tree (node.h), root first.
constexpr uint32_t kMetadataVersion = 2;
// The memtable needs room for one active and one frozen table of at least this much.
constexpr uint64_t kMinFreezeBytes = 64 << 10;

}  // namespace

VariantSpec AhaTree::Spec() {
  VariantSpec spec;
  spec.name = "aha";
  spec.summary =
      "AHA-tree: a buffer tree whose nodes own LSM buffers (root: memtable and levels of sorted "
      "runs with Bloom filters), pushed down by moving runs; leaves split multi-way";
  spec.params = {
      {"buffer_pool_share", "0.75", false,
       "share of cache_bytes for the buffer pool (run pages, filters); the rest holds the "
       "memtables, frozen at half of it (0.05..0.95)"},
      {"memtable_bytes", "auto", false,
       "memtable size at which it is frozen and flushed (4096..16 GiB), or auto: half of the "
       "memtables' share of cache_bytes, at least 64 KiB"},
      {"run_pages", "256", false, "pages of the largest sorted run (8..256)"},
      {"bloom_bits_per_key", "10", false, "Bloom filter bits per key in runs (0: no filters)"},
      {"l0_runs", "4", false, "level 0 runs that start a compaction into level 1 (1..64)"},
      {"root_levels", "3", false, "disk levels of the root buffer, level 0 included (2..8)"},
      {"level_ratio", "10", false, "size ratio of consecutive levels (2..100)"},
      {"readahead_pages", "8", false, "pages a scan reads per IO within a run (1..64)"},
      {"fanout", "64", false, "most children of a tree node (2..4096)"},
      {"node_pages", "2048", false,
       "size limit of a node's buffer in pages (at least 2 x run_pages): an inner node over it "
       "pushes its bottom level down, a leaf over it splits"},
      {"node_l0_runs", "8", false,
       "runs pushed into a node's level 0 that start its compaction (1..64)"},
      {"hot_ranges", "", false,
       "hot key ranges to adapt, lo..hi[,lo..hi] ([lo, hi); in keys, \\xHH is a byte and \\\\ a "
       "backslash, so ',' and '.' can be written as \\x2c and \\x2e)"},
      {"hot_detect", "true", false, "also detect a hot range from recent range searches"},
      {"adapt", "query", false,
       "when hot ranges adapt (their buffers emptied, their leaves turned into B+-tree pages): "
       "query (when range searches meet them), eager (as soon as they hold buffered data) or "
       "off"},
      {"split", "down", false,
       "leaf transformation: down (the leaf becomes an inner node over its parts) or side "
       "(compacted into sibling leaves)"},
      {"leaf_alloc", "even", false,
       "fill of new leaf pages: even (all about equally full) or sound_remedy (fills spread "
       "between half and full)"},
      {"insert", "batch", false,
       "writes to adapted leaves: batch (through the buffers, merged into the pages later) or "
       "tree (merged straight into the leaf pages when their memtable is flushed)"},
  };
  spec.page_types = {{static_cast<uint16_t>(aha::kRunData), "aha run data page"},
                     {static_cast<uint16_t>(aha::kRunFilter), "aha run filter page"},
                     {static_cast<uint16_t>(aha::kRunIndex), "aha run index page"}};
  spec.create = &AhaTree::Create;
  spec.open = &AhaTree::Open;
  spec.pages_per_op = [](const ParamMap&) -> uint64_t { return 0; };  // writes go to memory
  spec.buffer_pool_share = [](const ParamMap& params) -> double {
    StatusOr<aha::Config> c = aha::ParseConfig(params);
    return c.ok() ? c->pool_share : 1.0;
  };
  return spec;
}

AhaTree::AhaTree(const IndexContext& ctx, const aha::Config& cfg)
    : ctx_(ctx),
      pool_(ctx.pool),
      cfg_(cfg),
      space_(ctx.pool, ctx.allocator),
      active_(std::make_shared<aha::MemTable>()),
      compact_pointer_(cfg.root_levels) {
  MutexLock lock(&hot_mu_);
  hot_ = cfg.hot_ranges;  // merged by ParseConfig
}

AhaTree::~AhaTree() { bg_.Stop(); }  // Shutdown ran before, while the engine was whole

StatusOr<std::unique_ptr<Index>> AhaTree::Create(const IndexContext& ctx, const ParamMap& params) {
  GROVE_ASSIGN_OR_RETURN(const aha::Config cfg, aha::ParseConfig(params));
  auto t = std::unique_ptr<AhaTree>(new AhaTree(ctx, cfg));
  GROVE_RETURN_IF_ERROR(t->Restore(nullptr));
  t->Start();
  return std::unique_ptr<Index>(std::move(t));
}

StatusOr<std::unique_ptr<Index>> AhaTree::Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata) {
  GROVE_ASSIGN_OR_RETURN(const aha::Config cfg, aha::ParseConfig(params));
  auto t = std::unique_ptr<AhaTree>(new AhaTree(ctx, cfg));
  Slice in = metadata;
  GROVE_RETURN_IF_ERROR(t->Restore(&in));
  t->Start();
  return std::unique_ptr<Index>(std::move(t));
}

Status AhaTree::Restore(Slice* in) {
  auto v = std::make_shared<Version>();
  auto root = std::make_shared<Node>();
  root->levels.resize(cfg_.root_levels);
  v->root = root;
  if (in == nullptr) {
    Publish(std::move(v));
    return Status::Ok();
  }
  uint32_t version;
  if (!GetVarint32(in, &version) || (version != 1 && version != kMetadataVersion)) {
    return Status::DataLoss("aha metadata in the manifest is of another format version");
  }
  aha::OpenRunFn open = [&](const aha::RunMeta& m) -> StatusOr<std::shared_ptr<const Run>> {
    GROVE_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, Run::Open(pool_, m));
    if (run->index_rebuilt()) {
      run_index_rebuilds_.fetch_add(1, std::memory_order_relaxed);
      if (ctx_.logger != nullptr) {
        ctx_.logger->Log(LogLevel::kWarn,
                         fmt::format("aha: the index of the run at page {} is damaged; its fences "
                                     "were read from its data pages (grovectl verify names the "
                                     "page; the next compaction of the run rewrites it)",
                                     m.first));
      }
    }
    return std::shared_ptr<const Run>(std::move(run));
  };
  std::shared_ptr<const Node> decoded;
  if (version == 1) {
    // The root buffer's levels alone: a tree that has not formed yet.
    auto n = std::make_shared<Node>();
    GROVE_RETURN_IF_ERROR(aha::DecodeLevels(in, open, &n->levels));
    decoded = std::move(n);
  } else {
    GROVE_ASSIGN_OR_RETURN(decoded, aha::DecodeNode(in, open));
  }
  if (decoded->levels.size() > cfg_.root_levels) {
    return Status::InvalidArgument(fmt::format(
        "index.params.root_levels: the data directory's root buffer has {} levels, more than {}",
        decoded->levels.size(), cfg_.root_levels));
  }
  // The extents this checkpoint no longer names but still counted as allocated.
  GROVE_RETURN_IF_ERROR(aha::RunSpace::FreeRetiredAtOpen(in, ctx_.allocator));
  if (!in->empty()) return Status::DataLoss("aha metadata: trailing bytes");
  auto top = std::make_shared<Node>(*decoded);
  top->levels.resize(cfg_.root_levels);
  v->root = std::move(top);
  Publish(std::move(v));
  return Status::Ok();
}

void AhaTree::Start() {
  bg_.Start(std::chrono::milliseconds(10), [this] { return BackgroundRound(); });
}

std::shared_ptr<const Version> AhaTree::current() const {
  MutexLock lock(&state_mu_);
  return version_;
}

void AhaTree::Publish(std::shared_ptr<const Version> v) {
  uint64_t frozen = 0;
  for (const auto& t : v->frozen) frozen += t->bytes();
  MutexLock lock(&state_mu_);
  frozen_bytes_.store(frozen, std::memory_order_relaxed);
  root_l0_runs_.store(v->root->levels[0].runs.size(), std::memory_order_relaxed);
  version_ = std::move(v);
}

AhaTree::Snapshot AhaTree::TakeSnapshot() const {
  ReaderLock lock(&mem_mu_);
  return Snapshot{active_, current()};
}

uint64_t AhaTree::FreezeBytes() const {
  if (cfg_.memtable_bytes > 0) return cfg_.memtable_bytes;
  return std::max<uint64_t>(kMinFreezeBytes, ctx_.memory_bytes / 2);
}

uint64_t AhaTree::LevelLimitPages(size_t level) const {
  double pages = static_cast<double>(cfg_.l0_runs) * static_cast<double>(FreezeBytes()) / kPageSize;
  for (size_t i = 1; i < level; ++i) pages *= cfg_.level_ratio;
  return static_cast<uint64_t>(pages);
}

Status AhaTree::PrepareCheckpoint(uint64_t epoch) {
  space_.PrepareCheckpoint(epoch);
  return Status::Ok();
}

std::string AhaTree::SerializeMetadata() {
  const auto v = current();
  std::string s;
  PutVarint32(&s, kMetadataVersion);
  aha::EncodeNode(*v->root, &s);
  space_.Serialize(&s);
  return s;
}

Lsn AhaTree::OldestUnpersistedLsn() const {
  const Snapshot snap = TakeSnapshot();
  Lsn oldest = snap.active->first_lsn();
  for (const auto& t : snap.version->frozen) oldest = std::min(oldest, t->first_lsn());
  return oldest;
}

void AhaTree::ListMemoryOnlyCells(std::vector<std::string>* cells) {
  const Snapshot snap = TakeSnapshot();
  auto blob = [this](Slice cell) { return ctx_.services->HoldsBlob(cell); };
  snap.active->ValueCells(blob, cells);
  for (const auto& t : snap.version->frozen) t->ValueCells(blob, cells);
}

IndexStats AhaTree::GetStats() {
  const Snapshot snap = TakeSnapshot();
  IndexStats s;
  s.variant = "aha";
  auto& x = s.extra;
  uint64_t runs = 0, filter = 0, index = 0, data = 0, fence_bytes = 0, versions = 0;
  auto count = [&](const Level& level) {
    uint64_t bytes = 0;
    for (const auto& r : level.runs) {
      const auto& m = r->meta();
      filter += m.filter_pages;
      index += m.index_pages();
      data += m.data_pages;
      bytes += m.bytes;
      versions += m.entries - m.tombstones;
      fence_bytes += r->memory_bytes();
    }
    runs += level.runs.size();
    return bytes;
  };
  const Node& root = *snap.version->root;
  for (size_t l = 0; l < root.levels.size(); ++l) {
    x[fmt::format("root_level{}_runs", l)] = static_cast<double>(root.levels[l].runs.size());
    x[fmt::format("root_level{}_bytes", l)] = static_cast<double>(count(root.levels[l]));
  }
  // Below the root: buffer bytes and runs per depth (1: the root's children), and the nodes.
  std::vector<uint64_t> depth_bytes, depth_runs;
  uint64_t leaves = 0, inner = 0, leaf_bytes = 0, adapted = 0, leaf_pages = 0;
  // Utilisation of leaf pages, in tenths: [0, 0.5), then 0.5.., 0.6.., 0.7.., 0.8.., 0.9..1.
  uint64_t fill[6] = {0, 0, 0, 0, 0, 0};
  const double capacity = static_cast<double>(aha::LeafPageCapacity());
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const auto& c : root.children) stack.emplace_back(c.get(), 1);
  while (!stack.empty()) {
    auto [n, depth] = stack.back();
    stack.pop_back();
    if (depth_bytes.size() <= depth) {
      depth_bytes.resize(depth + 1);
      depth_runs.resize(depth + 1);
    }
    for (const Level& level : n->levels) {
      const uint64_t bytes = count(level);
      depth_bytes[depth] += bytes;
      depth_runs[depth] += level.runs.size();
      if (n->leaf()) leaf_bytes += bytes;
    }
    (n->leaf() ? leaves : inner) += 1;
    if (n->adapted()) {
      ++adapted;
      leaf_pages += n->pages.size();
      for (const auto& p : n->pages) {
        versions += p->entries;
        const double u = static_cast<double>(p->used) / capacity;
        fill[u < 0.5 ? 0 : std::min(5, static_cast<int>(u * 10) - 4)] += 1;
      }
    }
    for (const auto& c : n->children) stack.emplace_back(c.get(), depth + 1);
  }
  for (size_t d = 1; d < depth_bytes.size(); ++d) {
    x[fmt::format("depth{}_buffer_bytes", d)] = static_cast<double>(depth_bytes[d]);
    x[fmt::format("depth{}_runs", d)] = static_cast<double>(depth_runs[d]);
  }
  s.height = aha::Height(root);
  x["leaves"] = static_cast<double>(leaves);
  x["inner_nodes"] = static_cast<double>(inner);
  x["leaf_buffer_bytes"] = static_cast<double>(leaf_bytes);
  x["formations_total"] = static_cast<double>(formations_.load());
  x["pushdowns_total"] = static_cast<double>(pushdowns_.load());
  x["runs_moved_total"] = static_cast<double>(runs_moved_.load());
  x["runs_cut_total"] = static_cast<double>(runs_cut_.load());
  x["leaf_splits_total"] = static_cast<double>(leaf_splits_.load());
  x["inner_splits_total"] = static_cast<double>(inner_splits_.load());
  x["node_compactions_total"] = static_cast<double>(node_compactions_.load());
  x["adapted_leaves"] = static_cast<double>(adapted);
  x["leaf_pages"] = static_cast<double>(leaf_pages);
  const char* bucket[6] = {"lt50", "50", "60", "70", "80", "90"};
  for (int b = 0; b < 6; ++b) {
    x[fmt::format("leaf_pages_fill_{}", bucket[b])] = static_cast<double>(fill[b]);
  }
  const auto hot = HotRanges();
  x["hot_ranges"] = static_cast<double>(hot.size());
  x["hot_detections_total"] = static_cast<double>(detections_.load());
  x["adaptation_in_progress"] = adapting_.load() ? 1.0 : 0.0;
  x["adaptation_seconds"] =
      adapting_.load() ? static_cast<double>(NowNanos() - adapt_start_ns_.load()) / 1e9 : 0.0;
  x["adaptations_total"] = static_cast<double>(adaptations_.load());
  x["last_adaptation_seconds"] = static_cast<double>(last_adaptation_us_.load()) / 1e6;
  x["first_adaptation_seconds"] = static_cast<double>(first_adaptation_us_.load()) / 1e6;
  x["adaptation_seconds_total"] = static_cast<double>(adaptation_us_total_.load()) / 1e6;
  x["adaptation_steps_total"] = static_cast<double>(adapt_steps_.load());
  x["leaf_transforms_total"] = static_cast<double>(transforms_.load());
  x["page_merges_total"] = static_cast<double>(page_merges_.load());
  x["tree_inserts_total"] = static_cast<double>(tree_inserts_.load());
  x["tree_insert_merges_total"] = static_cast<double>(tree_insert_merges_.load());
  x["hot_runs_emptied_total"] = static_cast<double>(hot_runs_emptied_.load());
  x["scans_total"] = static_cast<double>(scans_.load());
  x["scan_runs_probed_total"] = static_cast<double>(scan_runs_.load());
  x["runs_probed_per_scan"] =
      scans_.load() == 0 ? 0.0 : static_cast<double>(scan_runs_.load()) / scans_.load();
  // What a lookup reads besides data pages: the filter pages play the inner nodes' part (the
  // index pages are read once, when a run is opened, and kept in memory as fence keys).
  s.inner_pages = filter;
  s.inner_bytes = s.inner_pages * kPageSize;
  s.leaf_pages = data;
  s.model_bytes = fence_bytes;
  uint64_t frozen_bytes = 0;
  versions += snap.active->entries();
  for (const auto& t : snap.version->frozen) {
    frozen_bytes += t->bytes();
    versions += t->entries();
  }
  // Versions, not keys: a key written twice in different buffers counts twice, a deleted one
  // may still count. Zero exactly when the index holds nothing.
  s.entries = versions;
  x["memtable_bytes"] = static_cast<double>(snap.active->bytes());
  x["memtable_entries"] = static_cast<double>(snap.active->entries());
  x["frozen_memtables"] = static_cast<double>(snap.version->frozen.size());
  x["frozen_memtable_bytes"] = static_cast<double>(frozen_bytes);
  x["memtable_freeze_bytes"] = static_cast<double>(FreezeBytes());
  x["runs"] = static_cast<double>(runs);
  x["run_index_pages"] = static_cast<double>(index);
  x["retired_runs"] = static_cast<double>(space_.retired_runs());
  x["flushes_total"] = static_cast<double>(flushes_.load());
  x["run_index_rebuilds_total"] = static_cast<double>(run_index_rebuilds_.load());
  x["flush_bytes_total"] = static_cast<double>(flush_bytes_.load());
  x["compactions_total"] = static_cast<double>(compactions_.load());
  x["compaction_bytes_read_total"] = static_cast<double>(compaction_bytes_read_.load());
  x["compaction_bytes_written_total"] = static_cast<double>(compaction_bytes_written_.load());
  x["tombstones_dropped_total"] = static_cast<double>(tombstones_dropped_.load());
  x["cells_released_total"] = static_cast<double>(cells_released_.load());
  x["gets_total"] = static_cast<double>(gets_.load());
  x["runs_probed_total"] = static_cast<double>(runs_probed_.load());
  x["runs_probed_per_get"] =
      gets_.load() == 0 ? 0.0 : static_cast<double>(runs_probed_.load()) / gets_.load();
  x["filter_skips_total"] = static_cast<double>(filter_skips_.load());
  x["write_stalls_total"] = static_cast<double>(stalls_.load());
  x["bulk_load_seconds"] = static_cast<double>(bulk_load_us_.load()) / 1e6;
  return s;
}

}  // namespace grove
