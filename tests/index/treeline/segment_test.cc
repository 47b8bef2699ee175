// Segments: the model's page placement, LowOf's page bounds, KeyAtProjection, and BuildSegments'
// promises (every record once, on its model's page, within a page's bytes).

#include "index/treeline/segment.h"

#include <random>

#include <gtest/gtest.h>

#include "grove/index.h"

#include "index/treeline/page.h"
#include "util/coding.h"

namespace grove::treeline {
namespace {

std::string Key64(uint64_t v) {
  std::string k(8, '\0');
  EncodeBigEndian64(k.data(), v);
  return k;
}

BuildOptions Options(bool grouping = true) {
  BuildOptions o;
  o.grouping = grouping;
  o.epsilon_fill = -1;  // (1 - goal) / 2, the parameter's "auto"
  o.page_capacity = kPageCapacity;
  return o;
}

// Checks BuildSegments' promises and returns the number of pages built.
size_t CheckBuilt(const std::vector<Record>& input, const std::vector<BuiltSegment>& built) {
  size_t next = 0, pages = 0;
  for (const BuiltSegment& b : built) {
    const int n = b.segment.pages;
    EXPECT_TRUE(n == 1 || n == 2 || n == 4 || n == 8 || n == 16) << n;
    EXPECT_EQ(static_cast<int>(b.pages.size()), n);
    EXPECT_EQ(b.first_key, input[next].key);
    pages += n;
    for (int i = 0; i < n; ++i) {
      size_t bytes = 0;
      for (const Record& r : b.pages[i]) {
        EXPECT_LT(next, input.size());
        if (next >= input.size()) return pages;
        EXPECT_EQ(r.key, input[next].key) << "records out of order or lost";
        EXPECT_EQ(r.cell, input[next].cell);
        EXPECT_EQ(b.segment.PageFor(r.key), i) << "a record off its model's page";
        bytes += r.bytes();
        ++next;
      }
      EXPECT_LE(bytes, kPageCapacity) << "page " << i << " overfull";
    }
  }
  EXPECT_EQ(next, input.size()) << "records lost";
  return pages;
}

TEST(SegmentTest, EncodeDecodeRoundTrip) {
  Segment s;
  s.first = 123456789;
  s.pages = 16;
  s.flags = 3;
  s.base = 0xfedcba9876543210ull;
  s.slope = 1.25e-12;
  s.intercept = -0.375;
  const std::string e = s.Encode();
  ASSERT_EQ(e.size(), Segment::kEncodedBytes);
  const Segment d = Segment::Decode(e);
  EXPECT_EQ(d.first, s.first);
  EXPECT_EQ(d.pages, s.pages);
  EXPECT_EQ(d.flags, s.flags);
  EXPECT_EQ(d.base, s.base);
  EXPECT_EQ(d.slope, s.slope);
  EXPECT_EQ(d.intercept, s.intercept);
}

TEST(SegmentTest, LowOfIsTheFirstProjectionOfEachPage) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 200; ++t) {
    Segment s;
    s.pages = static_cast<uint8_t>(1 << (rng() % 5));
    s.base = rng() >> (rng() % 64);
    s.slope = std::ldexp(static_cast<double>(rng() % 1000 + 1), -static_cast<int>(rng() % 60));
    s.intercept = static_cast<double>(static_cast<int>(rng() % 200) - 100) / 50.0;
    EXPECT_EQ(s.LowOf(0), 0u);
    for (int i = 1; i < s.pages; ++i) {
      const uint64_t low = s.LowOf(i);
      if (low == UINT64_MAX && s.PageForProjection(UINT64_MAX) < i) continue;  // page unused
      EXPECT_GE(s.PageForProjection(low), i);
      if (low > 0) {
        EXPECT_LT(s.PageForProjection(low - 1), i);
      }
      EXPECT_LE(s.LowOf(i - 1), low) << "page bounds not ascending";
    }
  }
}

TEST(SegmentTest, KeyAtProjectionSplitsKeysByProjection) {
  for (uint64_t p : {uint64_t{1}, uint64_t{0x0100}, uint64_t{0x6b6b000000000000},
                     uint64_t{0x1234567800000000}, uint64_t{0xffffffffffffffff}}) {
    const std::string k = KeyAtProjection(p);
    EXPECT_GE(Project(k), p);
    EXPECT_EQ(Project(k), p);
    EXPECT_GE(Project(k + "tail"), p);
    // The largest key below k projects below p.
    const std::string below = Key64(p - 1) + std::string(20, '\xff');
    EXPECT_LT(below, k);
    EXPECT_LT(Project(below), p);
  }
}

TEST(SegmentTest, DenseKeysFormPageGroupsAtTheGoal) {
  std::vector<Record> records;
  for (uint64_t i = 0; i < 20000; ++i)
    records.push_back({Key64(1000 + 3 * i), std::string(40, 'v')});
  const std::vector<Record> input = records;
  const std::vector<BuiltSegment> built = BuildSegments(std::move(records), Options());
  const size_t pages = CheckBuilt(input, built);
  // Evenly spaced keys fit one line: mostly 16-page segments, pages near the goal fill.
  EXPECT_LT(built.size() * 8, pages) << built.size() << " segments over " << pages << " pages";
  const GoalEpsilon ge = GoalFor(static_cast<double>(input[0].bytes()), Options());
  EXPECT_GE(static_cast<double>(input.size()) / static_cast<double>(pages),
            0.8 * static_cast<double>(ge.goal));
}

TEST(SegmentTest, WithoutGroupingEverySegmentIsOnePage) {
  std::vector<Record> records;
  for (uint64_t i = 0; i < 3000; ++i) records.push_back({Key64(i * 7), std::string(40, 'v')});
  const std::vector<Record> input = records;
  const std::vector<BuiltSegment> built = BuildSegments(std::move(records), Options(false));
  CheckBuilt(input, built);
  for (const BuiltSegment& b : built) EXPECT_EQ(b.segment.pages, 1);
}

TEST(SegmentTest, AnyKeySetAndRecordSizesArePlacedCorrectly) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    std::map<std::string, std::string> m;
    while (m.size() < 4000) {
      std::string k;
      switch (rng() % 4) {
        case 0:
          k = Key64(rng() % 100000);
          break;  // dense-ish
        case 1:
          k = std::string(30, 'p') + std::to_string(rng());
          break;  // shared prefix
        case 2:
          k = Key64(rng()) + "x";
          break;  // sparse, longer
        default:
          k = std::string(1, static_cast<char>(rng() % 3));
          break;  // tiny
      }
      const size_t v = rng() % 10 == 0 ? 1500 + rng() % 2000 : rng() % 120;
      m[k] = std::string(v, 'c');
    }
    std::vector<Record> records;
    for (auto& [k, v] : m) records.push_back({k, v});
    const std::vector<Record> input = records;
    CheckBuilt(input, BuildSegments(std::move(records), Options(round % 2 == 0)));
  }
}

TEST(SegmentTest, ForecastScaleLeavesRoomInEveryPage) {
  std::vector<Record> records;
  for (uint64_t i = 0; i < 5000; ++i) records.push_back({Key64(i * 5), std::string(40, 'v')});
  const std::vector<Record> input = records;
  BuildOptions o = Options();
  o.goal_scale = 0.5;
  const size_t half = CheckBuilt(input, BuildSegments(records, o));
  const size_t full = CheckBuilt(input, BuildSegments(std::move(records), Options()));
  EXPECT_GT(half, full * 3 / 2) << "a lower goal leaves more room, over more pages";
}

}  // namespace
}  // namespace grove::treeline
