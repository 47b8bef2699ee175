// Randomized model test of the hln variant through grove::Db: puts, deletes, batches, point and
// batch reads, scans in both directions, checked op by op against std::map, with the database
// closed and reopened between phases and Verify() after each, for every leaf size and with
// hash: fnv and stash nodes. Values of every size class appear, including out-of-line ones.
//
// GROVE_HLN_MODEL_OPS overrides the number of operations per configuration (default 24,000).

#include <cstdlib>
#include <random>

#include "engine/hln_test_util.h"

namespace grove::testing {
namespace {

uint64_t OpsFromEnv(uint64_t fallback) {
  const char* s = std::getenv("GROVE_HLN_MODEL_OPS");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

class HlnModelTest : public ::testing::TestWithParam<HlnParams> {};

TEST_P(HlnModelTest, RandomOpsMatchStdMap) {
  TempDir dir;
  const Options o = HlnOptions(dir.path(), GetParam());
  // Batches stay within what the engine admits for this leaf size and cache.
  const size_t max_batch = static_cast<size_t>(MaxBatchEntries(o));
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(std::hash<std::string>()(ParamsName(GetParam())));
  const uint64_t total = OpsFromEnv(24000);
  const int phases = 3;
  // Keys: a dense integer range plus variable-length text keys. The leaf size decides how many
  // keys make a tree of several leaves: the bigger the leaves, the more keys.
  const uint64_t leaf_pages =
      std::stoull(GetParam().count("leaf_pages") ? GetParam().at("leaf_pages") : "16");
  const uint64_t space = 4000 + 300 * leaf_pages;
  // Keys: a dense integer range, variable-length text keys, and keys behind a long common prefix
  // (long separators: inner nodes fill and split; no projection to guess with).
  const std::string prefix = "p/" + std::string(100, 'x');
  auto random_key = [&]() -> std::string {
    const int r = static_cast<int>(rng() % 8);
    if (r < 2) return "t/" + std::to_string(rng() % (space / 3)) + std::string(rng() % 40, 'x');
    if (r < 3) return prefix + Key(rng() % (space / 2));
    return Key(rng() % space);
  };
  auto random_value = [&]() -> std::string {
    const int r = static_cast<int>(rng() % 100);
    const size_t len = r < 85 ? rng() % 48 : r < 97 ? 200 + rng() % 800 : 1025 + rng() % 5000;
    std::string v(len, '\0');
    for (auto& c : v) c = static_cast<char>(rng());
    return v;
  };
  auto check_scan = [&](Db* db) {
    ScanOptions s;
    s.lower = rng() % 8 == 0 ? "" : random_key();
    s.reverse = rng() % 2 == 0;
    if (rng() % 2) {
      s.upper = random_key();
      s.has_upper = true;
      if (s.upper < s.lower) std::swap(s.upper, s.lower);
    }
    const size_t limit = 1 + rng() % 400;
    auto it = db->NewIterator(s);
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    std::vector<std::pair<std::string, std::string>> want;
    if (!s.reverse) {
      for (auto m = model.lower_bound(s.lower); m != model.end() && want.size() < limit; ++m) {
        if (s.has_upper && m->first >= s.upper) break;
        want.push_back(*m);
      }
    } else {
      auto m = s.has_upper ? model.lower_bound(s.upper) : model.end();
      while (m != model.begin() && want.size() < limit) {
        --m;
        if (m->first < s.lower) break;
        want.push_back(*m);
      }
    }
    size_t n = 0;
    for (; (*it)->Valid() && n < limit; (*it)->Next(), ++n) {
      ASSERT_LT(n, want.size()) << "scan returned an extra key";
      ASSERT_EQ((*it)->key(), want[n].first) << (s.reverse ? "reverse" : "forward") << " #" << n;
      ASSERT_EQ((*it)->value(), want[n].second);
    }
    ASSERT_OK((*it)->status());
    ASSERT_EQ(n, want.size()) << "scan ended early";
  };

  std::map<std::string, double> activity;  // structure changes summed over the phases
  for (int phase = 0; phase < phases; ++phase) {
    auto opened = Db::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Db* db = opened->get();
    for (uint64_t i = 0; i < total / phases; ++i) {
      const int r = static_cast<int>(rng() % 1000);
      // Phase 1 deletes more than it inserts, so that leaves empty, tidy up and merge.
      const int put_share = phase == 1 ? 250 : 450;
      if (r < put_share) {
        const std::string k = random_key(), v = random_value();
        ASSERT_OK(db->Put(k, v));
        model[k] = v;
      } else if (r < 600) {
        const std::string k = random_key();
        ASSERT_OK(db->Delete(k));
        model.erase(k);
      } else if (r < 654 && phase == 1) {
        // Deletes a run of consecutive keys: leaves empty out and merge.
        WriteBatch b;
        std::vector<std::string> gone;
        for (auto m = model.lower_bound(random_key());
             m != model.end() && gone.size() < std::min<size_t>(150, max_batch); ++m) {
          gone.push_back(m->first);
          b.Delete(m->first);
        }
        ASSERT_OK(db->Write(b));
        for (const std::string& k : gone) model.erase(k);
      } else if (r < 650) {
        WriteBatch b;
        std::vector<std::pair<std::string, std::optional<std::string>>> ops;
        const int n = 1 + static_cast<int>(rng() % std::min<size_t>(30, max_batch));
        for (int j = 0; j < n; ++j) {
          const std::string k = random_key();
          if (rng() % 3 == 0) {
            b.Delete(k);
            ops.push_back({k, std::nullopt});
          } else {
            const std::string v = random_value();
            b.Put(k, v);
            ops.push_back({k, v});
          }
        }
        ASSERT_OK(db->Write(b));
        for (auto& [k, v] : ops) {
          if (v) {
            model[k] = *v;
          } else {
            model.erase(k);
          }
        }
      } else if (r < 940) {
        const std::string k = random_key();
        std::string v;
        auto found = db->Get(k, &v);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        auto it = model.find(k);
        ASSERT_EQ(*found, it != model.end());
        if (*found) {
          ASSERT_EQ(v, it->second);
        }
      } else if (r < 970) {
        std::vector<std::string> keys(1 + rng() % 20);
        for (auto& k : keys) k = random_key();
        std::vector<Slice> slices(keys.begin(), keys.end());
        std::vector<std::optional<std::string>> values;
        ASSERT_OK(db->BatchGet(slices, &values));
        for (size_t j = 0; j < keys.size(); ++j) {
          auto it = model.find(keys[j]);
          ASSERT_EQ(values[j].has_value(), it != model.end());
          if (values[j]) {
            ASSERT_EQ(*values[j], it->second);
          }
        }
      } else {
        check_scan(db);
      }
      if (HasFatalFailure()) return;
    }
    ExpectVerifyClean(db, model.size(), "phase " + std::to_string(phase));
    if (HasFatalFailure()) return;
    for (const char* name : {"rebalances_total", "splits_total", "merges_total",
                             "stash_conversions_total", "stash_rebuilds_total"}) {
      activity[name] += Extra(db, name);
    }
    ASSERT_OK(db->Close());
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectMatches(db->get(), model, "final");
  EXPECT_GT(Extra(db->get(), "leaves"), 1) << "the test never split a leaf";
  const IndexStats s = (*db)->GetStats().index;
  std::printf(
      "%s: %zu keys, height %u, %.0f leaves (%.0f stash), fill %.2f; rebalances %.0f, splits "
      "%.0f, merges %.0f, stash conversions %.0f, rebuilds %.0f\n",
      ParamsName(GetParam()).c_str(), model.size(), s.height, s.extra.at("leaves"),
      s.extra.at("stash_leaves"), s.extra.at("fill_grade"), activity["rebalances_total"],
      activity["splits_total"], activity["merges_total"], activity["stash_conversions_total"],
      activity["stash_rebuilds_total"]);
  EXPECT_GT(activity["rebalances_total"], 0);
  EXPECT_GT(activity["splits_total"], 0);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, HlnModelTest,
    ::testing::Values(
        HlnParams{{"leaf_pages", "4"}}, HlnParams{{"leaf_pages", "16"}},
        HlnParams{{"leaf_pages", "64"}}, HlnParams{{"leaf_pages", "256"}},
        HlnParams{{"leaf_pages", "16"}, {"hash", "fnv"}},
        HlnParams{{"leaf_pages", "4"}, {"stash", "true"}},
        HlnParams{{"leaf_pages", "16"}, {"hash", "fnv"}, {"stash", "true"}, {"hint_bits", "2"}},
        HlnParams{{"leaf_pages", "4"}, {"hint_bits", "0"}}),
    [](const ::testing::TestParamInfo<HlnParams>& info) {
      std::string s;
      for (const auto& [k, v] : info.param) s += (s.empty() ? "" : "_") + k + "_" + v;
      for (char& c : s) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return s;
    });

}  // namespace
}  // namespace grove::testing
