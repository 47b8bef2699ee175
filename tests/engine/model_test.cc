// Randomized model test: a long mix of puts, deletes, batches, point reads, batch reads and scans
// in both directions, checked op by op against std::map, with the database closed and reopened
// between phases and Verify() after each. The cache is small so that pages are evicted, reread
// and checkpointed throughout; values of every size class appear, including out-of-line ones.
//
// GROVE_MODEL_OPS overrides the number of operations per backend (default 1,000,000).

#include <cstdlib>
#include <map>
#include <random>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class ModelTest : public ::testing::TestWithParam<IoBackendKind> {};

uint64_t OpsFromEnv(uint64_t fallback) {
  const char* s = std::getenv("GROVE_MODEL_OPS");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

TEST_P(ModelTest, RandomOpsMatchStdMap) {
  TempDir dir;
  Options o = SmallOptions(dir.path(), GetParam());
  o.cache_bytes = 8 << 20;  // 2048 frames: about a third of the tree
  o.checkpoint.dirty_fraction = 0.4;
  // Buffered IO: the page cache makes the many rereads cheap enough for millions of operations.
  // Direct IO is covered by the other engine tests.
  o.direct_io = false;
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(GetParam() == IoBackendKind::kUring ? 11 : 12);

  const uint64_t total = OpsFromEnv(1000000);
  const int phases = 4;
  // Keys: a dense integer range (splits, merges when deleted) plus variable-length text keys.
  auto random_key = [&]() -> std::string {
    if (rng() % 4 == 0) return "t/" + std::to_string(rng() % 20000) + std::string(rng() % 40, 'x');
    return Key(rng() % 60000);
  };
  auto random_value = [&]() -> std::string {
    const int r = static_cast<int>(rng() % 100);
    const size_t len = r < 85 ? rng() % 48 : r < 97 ? 200 + rng() % 800 : 1025 + rng() % 20000;
    std::string v(len, '\0');
    for (auto& c : v) c = static_cast<char>(rng());
    return v;
  };
  auto check_get = [&](Db* db, const std::string& k) {
    std::string v;
    auto found = db->Get(k, &v);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    auto it = model.find(k);
    ASSERT_EQ(*found, it != model.end());
    if (*found) {
      ASSERT_EQ(v, it->second);
    }
  };
  auto check_scan = [&](Db* db) {
    ScanOptions s;
    s.lower = random_key();
    s.reverse = rng() % 2 == 0;
    if (rng() % 2) {
      s.upper = random_key();
      s.has_upper = true;
      if (s.upper < s.lower) std::swap(s.upper, s.lower);
    }
    const size_t limit = 1 + rng() % 300;
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
      ASSERT_EQ((*it)->key(), want[n].first);
      ASSERT_EQ((*it)->value(), want[n].second);
    }
    ASSERT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
    ASSERT_EQ(n, want.size()) << "scan ended early";
  };

  for (int phase = 0; phase < phases; ++phase) {
    auto opened = Db::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Db* db = opened->get();
    for (uint64_t i = 0; i < total / phases; ++i) {
      const int r = static_cast<int>(rng() % 1000);
      if (r < 380) {
        const std::string k = random_key(), v = random_value();
        ASSERT_OK(db->Put(k, v));
        model[k] = v;
      } else if (r < 520) {
        const std::string k = random_key();
        ASSERT_OK(db->Delete(k));
        model.erase(k);
      } else if (r < 560) {
        WriteBatch b;
        std::vector<std::pair<std::string, std::optional<std::string>>> ops;
        const int n = 1 + static_cast<int>(rng() % 30);
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
      } else if (r < 960) {
        check_get(db, random_key());
      } else if (r < 990) {
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
    VerifyReport report;
    ASSERT_OK(db->Verify(&report));
    ASSERT_TRUE(report.problems.empty()) << report.problems[0];
    ASSERT_EQ(report.entries_checked, model.size());
    ASSERT_OK(db->Close());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ModelTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         BackendName);

}  // namespace
}  // namespace grove::testing
