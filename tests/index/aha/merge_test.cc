// MergingIterator against a model: random sources, some with long runs of keys no other source
// has (the single-source fast path) and some lazy (opened only when the merge reaches their
// bound), both directions; the newest version wins, equal LSNs go to the earlier source, and
// every other version is listed as shadowed.

#include "index/aha/merge.h"

#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "testutil/status_macros.h"

namespace grove::aha {
namespace {

std::string K(int i) { return fmt::format("k{:06d}", i); }

TEST(MergeTest, MatchesAModelWithStretchesAndLazySourcesBothWays) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 40; ++round) {
    const int n = 1 + static_cast<int>(rng() % 6);
    std::vector<std::map<std::string, Entry>> src(static_cast<size_t>(n));
    for (auto& s : src) {
      // A few stretches of consecutive keys, each somewhere in [0, 3000).
      const int stretches = static_cast<int>(rng() % 4);
      for (int t = 0; t < stretches; ++t) {
        const int lo = static_cast<int>(rng() % 3000);
        const int len = 1 + static_cast<int>(rng() % 200);
        const int step = 1 + static_cast<int>(rng() % 3);
        for (int i = lo; i < std::min(3000, lo + len * step); i += step) {
          const Lsn lsn = rng() % 4;  // few values: plenty of equal LSNs
          const bool tomb = rng() % 7 == 0;
          s[K(i)] = Entry{K(i), lsn, tomb, tomb ? "" : fmt::format("{}@{}", i, &s - &src[0])};
        }
      }
    }
    // The model: per key, the newest version, earlier sources winning ties; versions per key.
    std::map<std::string, std::pair<Entry, size_t>> model;
    for (const auto& s : src) {
      for (const auto& [k, e] : s) {
        auto [it, fresh] = model.try_emplace(k, e, 0);
        if (!fresh && e.lsn > it->second.first.lsn) it->second.first = e;
        ++it->second.second;
      }
    }
    for (bool reverse : {false, true}) {
      std::vector<std::unique_ptr<Source>> sources;
      for (size_t i = 0; i < src.size(); ++i) {
        std::vector<Entry> entries;
        for (const auto& [k, e] : src[i]) entries.push_back(e);
        if (reverse) std::reverse(entries.begin(), entries.end());
        if (i % 2 == 1 && !entries.empty()) {
          const std::string bound = entries.front().key;
          sources.push_back(NewLazySource(bound, [entries] { return NewVectorSource(entries); }));
        } else {
          sources.push_back(NewVectorSource(std::move(entries)));
        }
      }
      MergingIterator m(std::move(sources), reverse, /*keep_shadowed=*/true);
      auto expect = model.begin();
      auto rexpect = model.rbegin();
      size_t seen = 0;
      for (; m.Valid(); m.Next(), ++seen) {
        const auto& [want, versions] = reverse ? (rexpect++)->second : (expect++)->second;
        ASSERT_EQ(m.entry().key, want.key) << "round " << round << " reverse " << reverse;
        EXPECT_EQ(m.entry().lsn, want.lsn);
        EXPECT_EQ(m.entry().tombstone, want.tombstone);
        EXPECT_EQ(m.entry().cell, want.cell) << want.key;
        EXPECT_EQ(m.shadowed().size(), versions - 1) << want.key;
      }
      ASSERT_OK(m.status());
      EXPECT_EQ(seen, model.size()) << "round " << round << " reverse " << reverse;
    }
  }
}

}  // namespace
}  // namespace grove::aha
