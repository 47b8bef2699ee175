#include "learned/pla.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace grove::learned {
namespace {

std::vector<uint64_t> SortedUnique(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Whether some line y = a x + b passes within eps of every (keys[i], i) for i in [b, e): a vertex
// of the feasible (a, b) polygon lies on two tight constraints, so trying every line through two
// of the error-bound endpoints decides it (small inputs only).
bool Feasible(const std::vector<uint64_t>& keys, size_t begin, size_t end, double eps) {
  if (end - begin <= 1) return true;
  std::vector<std::pair<long double, long double>> pts;
  for (size_t i = begin; i < end; ++i) {
    pts.push_back({static_cast<long double>(keys[i]), static_cast<long double>(i) + eps});
    pts.push_back({static_cast<long double>(keys[i]), static_cast<long double>(i) - eps});
  }
  for (size_t p = 0; p < pts.size(); ++p) {
    for (size_t q = p + 1; q < pts.size(); ++q) {
      if (pts[p].first == pts[q].first) continue;
      const long double a = (pts[q].second - pts[p].second) / (pts[q].first - pts[p].first);
      const long double b = pts[p].second - a * pts[p].first;
      bool ok = true;
      for (size_t i = begin; i < end && ok; ++i) {
        const long double y = a * static_cast<long double>(keys[i]) + b;
        ok = std::fabs(static_cast<double>(y - static_cast<long double>(i))) <= eps + 1e-6;
      }
      if (ok) return true;
    }
  }
  return false;
}

TEST(PlaTest, PhaseOneLinesStayWithinEpsilon) {
  std::mt19937_64 rng(3);
  for (uint64_t eps : {1, 2, 4, 8}) {
    std::vector<uint64_t> keys;
    for (int i = 0; i < 20000; ++i) keys.push_back(rng() >> (rng() % 20));
    keys = SortedUnique(keys);
    const auto segs = FitSegmentsPhase1(keys, eps);
    for (const LinearSegment& s : segs) {
      for (uint64_t i = s.first_rank; i <= s.last_rank; ++i) {
        const double y =
            s.slope * (static_cast<double>(keys[i]) - static_cast<double>(s.first_key)) +
            s.intercept - 0.5;
        ASSERT_LE(std::fabs(y - static_cast<double>(i)), eps + 1e-3) << "eps " << eps << " i " << i;
      }
    }
  }
}

// Greedy maximal segments are optimal; check the count against a brute-force greedy.
TEST(PlaTest, SegmentCountMatchesBruteForceGreedy) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<uint64_t> keys;
    const int n = 40 + static_cast<int>(rng() % 30);
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) {
      x += 1 + (rng() % 4 == 0 ? rng() % 1000 : rng() % 10);
      keys.push_back(x);
    }
    const uint64_t eps = 1 + rng() % 2;
    size_t brute = 0;
    for (size_t b = 0; b < keys.size();) {
      size_t e = b + 1;
      while (e < keys.size() && Feasible(keys, b, e + 1, static_cast<double>(eps))) ++e;
      ++brute;
      b = e;
    }
    EXPECT_EQ(FitSegmentsPhase1(keys, eps).size(), brute) << "trial " << trial;
  }
}

TEST(PlaTest, LinearKeysNeedOneSegmentAndPredictExactly) {
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 10000; ++i) keys.push_back(1000 + i * 4096);
  const auto segs = FitSegments(keys, 1);
  ASSERT_EQ(segs.size(), 1u);
  for (uint64_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(segs[0].Predict(keys[i]), i);
    ASSERT_EQ(segs[0].Predict(keys[i] + 4095), i);  // any key inside node i's range
  }
}

// Two-phase fitting hits at least as often as phase 1 alone on keys inside each node's range.
TEST(PlaTest, TwoPhaseAccuracyAtLeastPhaseOne) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(0, 2);
  std::vector<uint64_t> keys;
  for (int i = 0; i < 50000; ++i) keys.push_back(static_cast<uint64_t>(dist(rng) * 1e12));
  keys = SortedUnique(keys);
  auto accuracy = [&](const std::vector<LinearSegment>& segs) {
    size_t hits = 0, total = 0;
    for (size_t i = 0; i + 1 < keys.size(); i += 3) {
      const uint64_t q = keys[i] + (keys[i + 1] - keys[i]) * (rng() % 1000) / 1000;
      hits += segs[FindSegment(segs, q)].Predict(q) == i;
      ++total;
    }
    return static_cast<double>(hits) / total;
  };
  const double p1 = accuracy(FitSegmentsPhase1(keys, 1));
  const double p2 = accuracy(FitSegments(keys, 1));
  EXPECT_GE(p2 + 0.02, p1) << "phase 1 " << p1 << ", two-phase " << p2;
  EXPECT_GT(p2, 0.3);
}

TEST(PlaTest, PredictionsAreClampedToTheSegment) {
  std::vector<uint64_t> keys = {0, 10, 20, 1000000, 1000010};
  const auto segs = FitSegments(keys, 1);
  for (uint64_t q : {uint64_t{0}, uint64_t{5}, uint64_t{999999}, uint64_t{UINT64_MAX}}) {
    const LinearSegment& s = segs[FindSegment(segs, q)];
    const uint64_t r = s.Predict(q);
    EXPECT_GE(r, s.first_rank);
    EXPECT_LE(r, s.last_rank);
  }
}

}  // namespace
}  // namespace grove::learned
