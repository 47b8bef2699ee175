#include "conformance/cases.h"

#include <cstdlib>

#include <fmt/format.h>

#include "conformance/buffered_variant.h"
#include "conformance/sorted_variant.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

uint64_t HlnMinCache(uint64_t leaf_pages) { return 16 * leaf_pages * 4096; }

VariantCase Hln(std::string name, ParamMap params) {
  VariantCase c;
  c.name = std::move(name);
  c.variant = "hln";
  const uint64_t leaf_pages = params.count("leaf_pages") ? std::stoull(params["leaf_pages"]) : 16;
  c.params = std::move(params);
  c.min_cache_bytes = HlnMinCache(leaf_pages);
  // The hint walk reads the guessed subnode and, when the guess is wrong, its neighbours; a stash
  // node's overflow subnode is one more. Bulk-loaded leaves with fresh hints miss rarely.
  c.max_reads_per_get = static_cast<uint32_t>(leaf_pages);
  c.max_mean_reads_per_get = 1.5;
  c.scan_readahead = !c.params.count("hash") || c.params.at("hash") != "fnv";
  return c;
}

VariantCase TreeLineCase(std::string name, ParamMap params) {
  VariantCase c;
  c.name = std::move(name);
  c.variant = "treeline";
  c.params = std::move(params);
  c.min_cache_bytes = 4 << 20;  // a buffer pool of 1 MiB (a quarter) at the default share
  // A base page, then its overflow page.
  c.max_reads_per_get = 2;
  c.max_mean_reads_per_get = 1.2;
  c.deterministic_io = false;  // the background thread writes back and reorganises
  return c;
}

VariantCase AulidCase(std::string name, ParamMap params) {
  VariantCase c;
  c.name = std::move(name);
  c.variant = "aulid";
  c.params = std::move(params);
  // The leaf, and its right sibling when a lookup lands on a smaller DATA slot that ScanFward
  // cannot settle.
  c.max_reads_per_get = 2;
  c.max_mean_reads_per_get = 1.3;
  // Mixed nodes spend 2 slots of 16 bytes per leaf: the inner part fits the smallest cache as
  // a B+-tree's does.
  return c;
}

// A key for aha's hot_ranges parameter: every byte as \xHH.
std::string EscapeKey(const std::string& key) {
  std::string out;
  for (unsigned char c : key) out += fmt::format("\\x{:02x}", c);
  return out;
}

VariantCase AhaCase(std::string name, ParamMap params) {
  VariantCase c;
  c.name = std::move(name);
  c.variant = "aha";
  c.params = std::move(params);
  // A Bloom filter page (cached: the filters are the runs' "inner nodes"), then the data page;
  // a false positive reads one more run's pair.
  c.max_reads_per_get = 4;
  c.max_mean_reads_per_get = 1.2;
  // A quarter of the cache holds the memtables; the pool must keep the filters of 400,000 keys.
  c.min_cache_bytes = 3 << 20;
  c.deterministic_io = false;  // the background thread flushes and compacts
  return c;
}

// Small buffers (fanout 4), hot ranges over the suite's key styles adapted eagerly, side splits
// and sound-remedy pages, with the given insert mode.
ParamMap AhaAdaptParams(const std::string& insert) {
  return {{"memtable_bytes", "16384"},
          {"run_pages", "32"},
          {"l0_runs", "2"},
          {"level_ratio", "2"},
          {"fanout", "4"},
          {"node_pages", "64"},
          {"node_l0_runs", "2"},
          {"adapt", "eager"},
          {"split", "side"},
          {"leaf_alloc", "sound_remedy"},
          {"insert", insert},
          {"hot_ranges", "t/3..t/6," + EscapeKey(EncodeU64Key(64)) + ".." +
                             EscapeKey(EncodeU64Key(400)) + "," +
                             EscapeKey(std::string(96, 'k') + EncodeU64Key(200)) + ".." +
                             EscapeKey(std::string(96, 'k') + EncodeU64Key(500))}};
}

}  // namespace

std::shared_ptr<const IndexRegistry> TestVariantRegistry() {
  auto r = std::make_shared<IndexRegistry>(*IndexRegistry::Builtins());
  // Their names and page types are none of the built-ins'.
  r->Register(BufferedVariantSpec()).IgnoreError();
  r->Register(SortedVariantSpec()).IgnoreError();
  return r;
}

std::vector<VariantCase> ConformanceCases() {
  std::vector<VariantCase> cases = {
      {.name = "btree", .variant = "btree", .btree_structure = true, .scan_readahead = true},
      {.name = "btree_shortcut",
       .variant = "btree",
       .params = {{"prefetch", "shortcut"}, {"shortcut_min_uncached", "1"}},
       .btree_structure = true,
       .scan_readahead = true},
      Hln("hln", {}),
      Hln("hln_fnv_stash",
          {{"leaf_pages", "4"}, {"hash", "fnv"}, {"stash", "true"}, {"hint_bits", "2"}}),
      {.name = "buffered",
       .variant = "buffered",
       .registry = TestVariantRegistry(),
       .deterministic_io = false},
      {.name = "sorted", .variant = "sorted", .registry = TestVariantRegistry()},
      TreeLineCase("treeline", {}),
      TreeLineCase("treeline_uncached", {{"cache", "false"}}),
      // A record cache of a tenth of the budget: write-backs, overflow pages and
      // reorganisations all through the suite, crash points included.
      TreeLineCase("treeline_small_cache", {{"buffer_pool_share", "0.9"}}),
      AulidCase("aulid", {}),
      // The paper's LIPP-B+ ablation: every inner conflict makes a child node.
      AulidCase("aulid_lipp_b", {{"mode", "lipp_b"}}),
      AhaCase("aha", {}),
      // Small memtables, runs and buffers, a fanout of 4 and early compactions: flushes,
      // merges, trivial moves, the tree's formation, push-downs and leaf and inner splits all
      // through the suite, crash points included.
      AhaCase("aha_small_runs", {{"memtable_bytes", "16384"},
                                 {"run_pages", "32"},
                                 {"l0_runs", "2"},
                                 {"level_ratio", "2"},
                                 {"fanout", "4"},
                                 {"node_pages", "64"},
                                 {"node_l0_runs", "2"}}),
      // The same with hot ranges adapted eagerly, side splits, sound-remedy pages and tree
      // insert: the suite's keys ("t/..." and the recovery tests' and crash points' binary keys)
      // fall partly in hot ranges, whose buffers are emptied and leaves turned into pages as
      // data arrives, and whose later writes are merged into the pages at flushes, crash points
      // included.
      AhaCase("aha_adapt", AhaAdaptParams("tree")),
  };
  const char* all = std::getenv("GROVE_CONFORMANCE");
  if (all != nullptr && std::string(all) == "all") {
    cases.push_back({.name = "btree_shortcut_base",
                     .variant = "btree",
                     .params = {{"prefetch", "shortcut_base"}},
                     .btree_structure = true,
                     .scan_readahead = true});
    cases.push_back(Hln("hln_l4_stash", {{"leaf_pages", "4"}, {"stash", "true"}}));
    cases.push_back(Hln("hln_l64", {{"leaf_pages", "64"}}));
    cases.push_back(Hln("hln_l256", {{"leaf_pages", "256"}}));
    cases.push_back(Hln("hln_no_hints", {{"leaf_pages", "4"}, {"hint_bits", "0"}}));
    cases.push_back(Hln("hln_shortcut", {{"prefetch", "shortcut"}}));
    cases.push_back(TreeLineCase("treeline_pages", {{"grouping", "false"}}));
    cases.push_back(TreeLineCase("treeline_unbatched", {{"batched_writeback", "false"}}));
    cases.push_back(TreeLineCase("treeline_optimistic", {{"optimistic_caching", "true"}}));
    // The memory split free to move: the pool's limit and the record cache's capacity change
    // under the suite's reads and writes, crash points included.
    cases.push_back(TreeLineCase("treeline_split", {{"buffer_pool_max_share", "0.9"}}));
    cases.push_back(TreeLineCase("treeline_forecast", {{"forecasting", "true"},
                                                       {"forecast_epoch_inserts", "100"},
                                                       {"forecast_partitions", "8"}}));
    // Fulfill copies from bulk loads, retired by the first inner change.
    cases.push_back(AulidCase("aulid_fulfill", {{"fulfill", "on"}}));
    cases.push_back(AulidCase("aulid_no_scan_forward", {{"scan_forward", "off"}}));
    // Batch insert: writes to adapted leaves go through the buffers and are merged into the
    // pages by adaptation.
    cases.push_back(AhaCase("aha_adapt_batch", AhaAdaptParams("batch")));
  }
  return cases;
}

Options ConformanceOptions(const VariantCase& c, const std::string& dir, IoBackendKind backend) {
  Options o = SmallOptions(dir, backend);
  o.cache_bytes = std::max<uint64_t>(4 << 20, c.min_cache_bytes);
  o.index.variant = c.variant;
  o.index.params = c.params;
  o.index.registry = c.registry;
  return o;
}

uint64_t BatchEntriesThatFit(const VariantCase& c, const Options& o) {
  const IndexRegistry builtins = *IndexRegistry::Builtins();
  const IndexRegistry& r = c.registry ? *c.registry : builtins;
  const uint64_t per_op = WorstCaseWritePages(1, 0, r.PagesPerOp(c.variant, c.params)) - 8;
  // The write room is a share of the buffer pool, which may have only part of cache_bytes.
  Options pool_view = o;
  pool_view.cache_bytes = r.BufferPoolBytes(c.variant, c.params, o.cache_bytes);
  const uint64_t room = WriteRoomPages(pool_view) / 4;  // the limit for a batch applied at once
  if (per_op == 0) return o.max_batch_entries;          // writes that dirty no page always fit
  return room > 8 + per_op ? (room - 8) / per_op : 1;
}

bool RoomHoldsOperations(const VariantCase& c, const Options& o, uint64_t times) {
  const IndexRegistry builtins = *IndexRegistry::Builtins();
  const IndexRegistry& r = c.registry ? *c.registry : builtins;
  const uint64_t per_op = WorstCaseWritePages(1, 0, r.PagesPerOp(c.variant, c.params));
  Options pool_view = o;
  pool_view.cache_bytes = r.BufferPoolBytes(c.variant, c.params, o.cache_bytes);
  return WriteRoomPages(pool_view) >= times * per_op;
}

void ExpectVerifyClean(Db* db, size_t entries, const std::string& what) {
  VerifyReport report;
  ASSERT_OK(db->Verify(&report));
  ASSERT_TRUE(report.problems.empty()) << what << ": " << report.problems[0];
  ASSERT_EQ(report.entries_checked, entries) << what;
}

Model ReadAll(Db* db) {
  Model m;
  auto it = db->NewIterator(ScanOptions());
  EXPECT_TRUE(it.ok());
  if (!it.ok()) return m;
  for (; (*it)->Valid(); (*it)->Next()) m[std::string((*it)->key())] = std::string((*it)->value());
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
  return m;
}

void ExpectMatches(Db* db, const Model& model, const std::string& what) {
  auto it = db->NewIterator(ScanOptions());
  ASSERT_TRUE(it.ok());
  auto m = model.begin();
  for (; (*it)->Valid(); (*it)->Next(), ++m) {
    ASSERT_TRUE(m != model.end()) << what << ": scan returned an extra key";
    ASSERT_EQ((*it)->key(), m->first) << what;
    ASSERT_EQ((*it)->value(), m->second) << what;
  }
  ASSERT_OK((*it)->status());
  ASSERT_TRUE(m == model.end()) << what << ": scan ended early";
  ScanOptions rev;
  rev.reverse = true;
  auto r = db->NewIterator(rev);
  ASSERT_TRUE(r.ok());
  auto rm = model.rbegin();
  for (; (*r)->Valid(); (*r)->Next(), ++rm) {
    ASSERT_TRUE(rm != model.rend()) << what << ": reverse scan returned an extra key";
    ASSERT_EQ((*r)->key(), rm->first) << what;
  }
  ASSERT_OK((*r)->status());
  ASSERT_TRUE(rm == model.rend()) << what << ": reverse scan ended early";
  std::string v;
  for (const auto& [k, val] : model) {
    auto found = db->Get(k, &v);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_TRUE(*found) << what << ": a key of the scan is not found by Get";
    ASSERT_EQ(v, val) << what;
  }
}

}  // namespace grove::testing
