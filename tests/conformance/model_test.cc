// Conformance: a randomized mix of puts, deletes, batches (some too large for the write room, so
// applied operation by operation), point reads, batch reads and scans in both directions, checked
// op by op against std::map, for every variant case and both IO backends. The database starts
// from a bulk load and is closed and reopened between phases, with Verify() after each. Keys are
// dense integers, variable-length text, keys behind a long common prefix (long separators), and
// the shortest and longest keys allowed; values are empty, small, around the inline threshold and
// out of line.
//
// GROVE_MODEL_OPS overrides the number of operations per case (default 24,000).

#include <algorithm>
#include <random>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

uint64_t OpsFromEnv(uint64_t fallback) {
  const char* s = std::getenv("GROVE_MODEL_OPS");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

struct ModelParam {
  VariantCase c;
  IoBackendKind backend;
};

void PrintTo(const ModelParam& p, std::ostream* os) {
  *os << p.c.name << (p.backend == IoBackendKind::kUring ? " uring" : " psync");
}

class ConformanceModelTest : public ::testing::TestWithParam<ModelParam> {};

// Keys and values drawn from every class the engine must handle.
class Generator {
 public:
  Generator(uint64_t seed, uint64_t space, const Options& o)
      : rng_(seed), space_(space), max_key_(o.max_key_bytes), inline_(o.inline_value_bytes) {}

  std::string Key() {
    const int r = static_cast<int>(rng_() % 100);
    if (r < 60) return grove::testing::Key(rng_() % space_);
    if (r < 80) return "t/" + std::to_string(rng_() % (space_ / 3)) + std::string(rng_() % 40, 'x');
    if (r < 94) return std::string(100, 'p') + grove::testing::Key(rng_() % (space_ / 2));
    if (r < 97) return std::string(1, static_cast<char>(rng_() % 256));        // the shortest keys
    return std::string(max_key_ - 8, 'z') + grove::testing::Key(rng_() % 64);  // the longest
  }

  std::string Value() {
    const int r = static_cast<int>(rng_() % 100);
    size_t len;
    if (r < 5) {
      len = 0;
    } else if (r < 70) {
      len = 1 + rng_() % 48;
    } else if (r < 85) {
      len = 200 + rng_() % 800;
    } else if (r < 94) {
      len = inline_ - 1 + rng_() % 3;  // at and around the inline threshold
    } else {
      len = inline_ + 1 + rng_() % 20000;
    }
    std::string v(len, '\0');
    for (auto& c : v) c = static_cast<char>(rng_());
    return v;
  }

  uint64_t Below(uint64_t n) { return rng_() % n; }

 private:
  std::mt19937_64 rng_;
  const uint64_t space_;
  const size_t max_key_;
  const size_t inline_;
};

TEST_P(ConformanceModelTest, RandomOpsMatchStdMap) {
  const VariantCase& c = GetParam().c;
  TempDir dir;
  Options o = ConformanceOptions(c, dir.path(), GetParam().backend);
  o.cache_bytes = std::max<uint64_t>(8 << 20, 2 * c.min_cache_bytes);
  o.checkpoint.dirty_fraction = 0.3;
  // Buffered IO: the page cache keeps the many rereads cheap. Direct IO is covered elsewhere.
  o.direct_io = false;
  const uint64_t fit = BatchEntriesThatFit(c, o);
  const uint64_t total = OpsFromEnv(24000);
  Generator gen(std::hash<std::string>()(c.name) + static_cast<int>(GetParam().backend), 30000, o);
  Model model;

  // Phase 0 starts from a bulk load of every key and value class.
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (int i = 0; i < 8000; ++i) model[gen.Key()] = gen.Value();
    auto it = model.begin();
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (it == model.end()) return false;
      *k = it->first;
      *v = it->second;
      ++it;
      return true;
    }));
    ExpectVerifyClean(db->get(), model.size(), "after the bulk load");
    ASSERT_OK((*db)->Close());
  }

  auto check_scan = [&](Db* db) {
    ScanOptions s;
    s.lower = gen.Below(8) == 0 ? "" : gen.Key();
    s.reverse = gen.Below(2) == 0;
    if (gen.Below(2)) {
      s.upper = gen.Key();
      s.has_upper = true;
      if (s.upper < s.lower) std::swap(s.upper, s.lower);
    }
    const size_t limit = 1 + gen.Below(400);
    // Half the scans say how far they mean to go, sometimes more, sometimes less than they do:
    // a hint changes how a variant reads, never what a scan returns.
    if (gen.Below(2)) s.expected_entries = 1 + gen.Below(2 * limit);
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
  auto apply = [&](const WriteBatch& b) {
    b.ForEach([&](WriteBatch::OpType t, Slice k, Slice v) {
       if (t == WriteBatch::OpType::kPut) {
         model[std::string(k)] = std::string(v);
       } else {
         model.erase(std::string(k));
       }
       return Status::Ok();
     }).IgnoreError();
  };

  const int phases = 4;
  for (int phase = 0; phase < phases; ++phase) {
    auto opened = Db::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Db* db = opened->get();
    // Phase 2 deletes more than it inserts, so that leaves empty and merge.
    const int put_share = phase == 2 ? 250 : 420;
    for (uint64_t i = 0; i < total / phases; ++i) {
      const int r = static_cast<int>(gen.Below(1000));
      if (r < put_share) {
        const std::string k = gen.Key(), v = gen.Value();
        ASSERT_OK(db->Put(k, v));
        model[k] = v;
      } else if (r < 580) {
        const std::string k = gen.Key();
        ASSERT_OK(db->Delete(k));
        model.erase(k);
      } else if (r < 620) {
        WriteBatch b;
        const uint64_t n = 1 + gen.Below(std::min<uint64_t>(30, fit));
        for (uint64_t j = 0; j < n; ++j) {
          if (gen.Below(3) == 0) {
            b.Delete(gen.Key());
          } else {
            b.Put(gen.Key(), gen.Value());
          }
        }
        ASSERT_OK(db->Write(b));
        apply(b);
      } else if (r < 622) {
        // Larger than the write room: applied operation by operation.
        WriteBatch b;
        const uint64_t n = std::min<uint64_t>(3 * fit + 50, o.max_batch_entries);
        for (uint64_t j = 0; j < n && b.PayloadBytes() < o.max_batch_bytes / 2; ++j) {
          if (gen.Below(4) == 0) {
            b.Delete(gen.Key());
          } else {
            std::string v = gen.Value();
            v.resize(std::min<size_t>(v.size(), 64));
            b.Put(gen.Key(), v);
          }
        }
        ASSERT_OK(db->Write(b));
        apply(b);
      } else if (r < 940) {
        const std::string k = gen.Key();
        std::string v;
        auto found = db->Get(k, &v);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        auto it = model.find(k);
        ASSERT_EQ(*found, it != model.end()) << "phase " << phase << " op " << i;
        if (*found) {
          ASSERT_EQ(v, it->second);
        }
      } else if (r < 970) {
        std::vector<std::string> keys(1 + gen.Below(20));
        for (auto& k : keys) k = gen.Key();
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
    ASSERT_OK(db->Close());
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectMatches(db->get(), model, "final");
}

// Bulk load with each record size on its own, so that a leaf full of the largest inline records
// (or of empty ones) is built too, then a write of each size and a reopen.
TEST_P(ConformanceModelTest, BulkLoadTakesEveryRecordSize) {
  const VariantCase& c = GetParam().c;
  const Options base = ConformanceOptions(c, "", GetParam().backend);
  for (const size_t len :
       {size_t{0}, size_t{1}, size_t{100}, size_t{1016}, size_t{base.inline_value_bytes - 1},
        size_t{base.inline_value_bytes}, size_t{base.inline_value_bytes + 1}, size_t{9000}}) {
    TempDir dir;
    Options o = ConformanceOptions(c, dir.path(), GetParam().backend);
    o.cache_bytes = std::max<uint64_t>(8 << 20, 2 * c.min_cache_bytes);
    const uint64_t n = len > base.inline_value_bytes ? 800 : 5000;
    Model model;
    for (uint64_t i = 0; i < n; ++i)
      model[Key(i * 3)] = std::string(len, static_cast<char>('a' + i % 26));
    const std::string what = "values of " + std::to_string(len) + " bytes";
    {
      auto db = Db::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      auto it = model.begin();
      ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
        if (it == model.end()) return false;
        *k = it->first;
        *v = it->second;
        ++it;
        return true;
      }));
      for (uint64_t i = 0; i < n; i += 7) {
        ASSERT_OK((*db)->Put(Key(i * 3 + 1), std::string(len, 'w')));
        model[Key(i * 3 + 1)] = std::string(len, 'w');
      }
      ExpectVerifyClean(db->get(), model.size(), what);
      ASSERT_OK((*db)->Close());
    }
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ExpectMatches(db->get(), model, what);
    if (HasFatalFailure()) return;
  }
}

std::vector<ModelParam> Params() {
  std::vector<ModelParam> out;
  for (const VariantCase& c : ConformanceCases()) {
    for (IoBackendKind b : {IoBackendKind::kPsync, IoBackendKind::kUring}) out.push_back({c, b});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceModelTest, ::testing::ValuesIn(Params()),
                         [](const ::testing::TestParamInfo<ModelParam>& info) {
                           return info.param.c.name + "_" +
                                  (info.param.backend == IoBackendKind::kUring ? "uring" : "psync");
                         });

}  // namespace
}  // namespace grove::testing
