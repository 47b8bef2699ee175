// Conformance: scans with readahead (Options::scan_readahead_pages, core/readahead.h) return what
// scans without it return, in both directions, with and without bounds and limits, over a cache
// far smaller than the data and while writers split, merge and rewrite the pages being read ahead.
// For the variants that read ahead (VariantCase::scan_readahead): a scan's leaves come mostly
// from the readahead, and pages read ahead that the scan never reaches do not enter the cache.

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

class ConformanceScanReadaheadTest : public ::testing::TestWithParam<VariantCase> {
 protected:
  // Keys Key(5 i) for i < kKeys with 100-byte values, bulk loaded; the cache holds a fraction.
  static constexpr uint64_t kKeys = 60000;

  Options MakeOptions(const std::string& dir, uint32_t readahead) {
    Options o = ConformanceOptions(GetParam(), dir);
    o.scan_readahead_pages = readahead;
    return o;
  }

  static void Load(const Options& o, uint64_t keys = kKeys) {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    uint64_t i = 0;
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (i == keys) return false;
      *k = Key(i * 5);
      *v = Value(i, 0, 100);
      ++i;
      return true;
    }));
    ASSERT_OK((*db)->Close());
  }

  // Up to `limit` entries of a scan (0: all), as key -> value, in the order returned.
  static std::vector<std::pair<std::string, std::string>> Scan(Db* db, const ScanOptions& s,
                                                               uint64_t limit) {
    std::vector<std::pair<std::string, std::string>> out;
    auto it = db->NewIterator(s);
    EXPECT_TRUE(it.ok()) << it.status().ToString();
    if (!it.ok()) return out;
    for (; (*it)->Valid() && (limit == 0 || out.size() < limit); (*it)->Next()) {
      out.emplace_back(std::string((*it)->key()), std::string((*it)->value()));
    }
    EXPECT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
    return out;
  }

  // The scans every test runs: both directions, open and bounded, limits below, at and above
  // the expected count, and expected counts the caller does not honour.
  static std::vector<std::pair<ScanOptions, uint64_t>> Scans() {
    std::vector<std::pair<ScanOptions, uint64_t>> out;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 60; ++i) {
      ScanOptions s;
      s.reverse = i % 2 == 1;
      const uint64_t a = rng() % (kKeys * 5);
      if (i % 3 != 0) s.lower = Key(a);
      if (i % 4 != 0) {
        s.has_upper = true;
        s.upper = Key(a + 1 + rng() % 20000);
      }
      const uint64_t limits[] = {0, 1, 10, 100, 1000};
      const uint64_t limit = limits[rng() % 5];
      const uint64_t expected[] = {0, limit, limit * 3, 7};
      s.expected_entries = expected[rng() % 4];
      out.emplace_back(s, limit == 0 && !s.has_upper ? 3000 : limit);
    }
    return out;
  }
};

TEST_P(ConformanceScanReadaheadTest, ScansMatchScansWithoutReadahead) {
  TempDir dir;
  Options on = MakeOptions(dir.path(), 32);
  Load(on);
  std::vector<std::vector<std::pair<std::string, std::string>>> with, without;
  for (uint32_t readahead : {32u, 0u}) {
    auto db = Db::Open(MakeOptions(dir.path(), readahead));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (const auto& [s, limit] : Scans()) {
      (readahead ? with : without).push_back(Scan(db->get(), s, limit));
    }
    ASSERT_OK((*db)->Close());
  }
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) EXPECT_EQ(with[i], without[i]) << "scan " << i;
}

TEST_P(ConformanceScanReadaheadTest, ScansStayCorrectWhileWritersChangeThePages) {
  TempDir dir;
  Options o = MakeOptions(dir.path(), 32);
  Load(o);
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();
  // Writers insert and delete keys between the loaded ones (Key(5 i + 1..4)) and rewrite loaded
  // values in place: leaves split, merge and change under the scans' readahead. The loaded keys
  // stay, so every scan must return each of them in its range, in order, with a value of its own.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937_64 rng(11);
    for (int round = 0; !stop.load(); ++round) {
      WriteBatch b;
      for (int j = 0; j < 50; ++j) {
        const uint64_t base = rng() % kKeys * 5;
        if (rng() % 4 == 0) {
          b.Put(Key(base), Value(base / 5, round + 1, 100));
        } else if (rng() % 3 == 0) {
          b.Delete(Key(base + 1 + rng() % 4));
        } else {
          b.Put(Key(base + 1 + rng() % 4), std::string(200 + rng() % 300, 'w'));
        }
      }
      ASSERT_OK(db->Write(b));
    }
  });
  for (int pass = 0; pass < 3; ++pass) {
    for (const auto& [s, limit] : Scans()) {
      const auto got = Scan(db, s, limit);
      std::vector<uint64_t> loaded;  // indexes of the loaded keys returned
      for (size_t i = 0; i < got.size(); ++i) {
        if (i > 0) {
          ASSERT_TRUE(s.reverse ? got[i].first < got[i - 1].first : got[i - 1].first < got[i].first)
              << "out of order";
        }
        ASSERT_TRUE(s.lower.empty() || got[i].first >= s.lower);
        ASSERT_TRUE(!s.has_upper || got[i].first < s.upper);
        ASSERT_EQ(got[i].first.size(), 8u);
        const uint64_t k = DecodeBigEndian64(got[i].first.data());
        if (k % 5 == 0) {
          loaded.push_back(k / 5);
          ASSERT_EQ(got[i].second.rfind("v" + std::to_string(k / 5) + ".", 0), 0u)
              << "a loaded key with a value of another key";
        }
      }
      // No loaded key inside the span the scan covered is missing.
      for (size_t i = 1; i < loaded.size(); ++i) {
        ASSERT_EQ(s.reverse ? loaded[i - 1] - loaded[i] : loaded[i] - loaded[i - 1], 1u)
            << "a loaded key was skipped";
      }
    }
  }
  stop = true;
  writer.join();
  ExpectVerifyClean(db, ReadAll(db).size(), "after scans beside writers");
  ASSERT_OK(db->Close());
}

// Page reads of a scan: on demand and ahead of it.
struct ScanReads {
  uint64_t demand = 0, used = 0, wasted = 0, resident = 0;
};
ScanReads Reads(Db* db) {
  const BufferPoolStats s = db->GetStats().cache;
  return {s.page_reads[static_cast<int>(IoCause::kScan)], s.prefetch_used, s.prefetch_wasted,
          s.resident_pages};
}

TEST_P(ConformanceScanReadaheadTest, LeavesComeFromTheReadaheadAndUnusedOnesAreNotCached) {
  if (!GetParam().scan_readahead) GTEST_SKIP() << "the variant does not read ahead";
  TempDir dir;
  Options o = MakeOptions(dir.path(), 32);
  // Twice the cache in values at least (a case whose variant needs a large cache loads more).
  const uint64_t keys = std::max<uint64_t>(kKeys, 2 * o.cache_bytes / 100);
  Load(o, keys);
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_GT(keys * 100, o.cache_bytes) << "the data must not fit the cache";

  // Scans of 500 entries that say so, far apart: each leaf after the first of a scan should
  // have been read ahead.
  const ScanReads before = Reads(db->get());
  for (int i = 0; i < 8; ++i) {
    ScanOptions s;
    s.reverse = i % 2 == 1;
    s.lower = Key(i * 7000 * 5);
    if (s.reverse) {
      s.has_upper = true;
      s.upper = Key((i * 7000 + 600) * 5);
      s.lower.clear();
    }
    s.expected_entries = 500;
    ASSERT_EQ(Scan(db->get(), s, 500).size(), 500u);
  }
  const ScanReads after = Reads(db->get());
  const uint64_t demand = after.demand - before.demand;
  const uint64_t used = after.used - before.used;
  std::printf("%s: %llu leaf reads on demand, %llu read ahead and used, %llu wasted\n",
              GetParam().name.c_str(), static_cast<unsigned long long>(demand),
              static_cast<unsigned long long>(used),
              static_cast<unsigned long long>(after.wasted - before.wasted));
  EXPECT_GT(used, 2 * demand) << "most leaves of a long scan should come from the readahead";

  // A scan that expects 2000 entries but stops after 3: what it read ahead is dropped, not
  // cached. Pages in the cache grow by at most what the scan read on demand.
  ScanOptions s;
  s.lower = Key(59000 * 5 - 2000 * 5);
  s.expected_entries = 2000;
  const ScanReads b2 = Reads(db->get());
  {
    auto it = (*db)->NewIterator(s);
    ASSERT_TRUE(it.ok());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*it)->Valid());
      (*it)->Next();
    }
    // Reading ahead starts after the first leaf; this scan has read one or two.
  }
  const ScanReads a2 = Reads(db->get());
  EXPECT_GT(a2.wasted, b2.wasted) << "the scan should have read ahead and dropped the pages";
  EXPECT_LE(a2.resident, b2.resident + (a2.demand - b2.demand) + (a2.used - b2.used) + 8)
      << "pages read ahead but never reached entered the cache";
  ASSERT_OK((*db)->Close());
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceScanReadaheadTest,
                         ::testing::ValuesIn(ConformanceCases()), CaseName);

}  // namespace
}  // namespace grove::testing
