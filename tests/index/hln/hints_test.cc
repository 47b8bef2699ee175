// Algorithms 2 and 3 of the HLN-tree paper: CalcHint and guessSubNode, with the paper's Table 1
// (subnode key ranges after a rebalance, n = 16) as the test vector.

#include "index/hln/hints.h"

#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace grove::hln {
namespace {

// Table 1: the fraction of the leaf's key range each of the 16 subnodes covers.
const std::vector<double> kTable1 = {0.0688, 0.0560, 0.0692, 0.0649, 0.0632, 0.0674,
                                     0.0556, 0.0635, 0.0663, 0.0664, 0.0570, 0.0600,
                                     0.0610, 0.0586, 0.0616, 0.0605};

std::vector<double> RightBoundaries() {
  std::vector<double> rb(kTable1.size());
  std::partial_sum(kTable1.begin(), kTable1.end(), rb.begin());
  return rb;
}

HintParams Params(int bits) {
  HintParams p;
  p.parts = 16;
  p.bits = bits;
  p.hint_range = 0.2;  // hint_max = 0.0125 for n = 16, as in the paper's example
  return p;
}

TEST(HlnHints, StepSizeMatchesThePapersExample) {
  const HintParams p = Params(4);
  EXPECT_DOUBLE_EQ(p.hint_max(), 0.0125);
  EXPECT_EQ(p.steps_max(), 7);
  EXPECT_NEAR(p.step_size(), 0.0125 / 7, 1e-15);
  EXPECT_EQ(Params(2).steps_max(), 1);
  EXPECT_EQ(Params(8).steps_max(), 127);
}

// Expected values computed independently (a direct transcription of Algorithm 2 in Python).
TEST(HlnHints, Table1Vector) {
  const std::vector<double> rb = RightBoundaries();
  EXPECT_EQ(CalcHints(rb, Params(2)),
            (std::vector<int>{1, -1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0}));
  EXPECT_EQ(CalcHints(rb, Params(4)),
            (std::vector<int>{4, -4, 4, 1, 0, 3, -4, 1, 2, 2, -3, -1, -1, -2, -1, -1}));
  EXPECT_EQ(CalcHints(rb, Params(8)), (std::vector<int>{64, -66, 68, 24, 8, 49, -70, 10, 39, 40,
                                                        -56, -26, -15, -40, -9, -20}));
  EXPECT_EQ(CalcHints(rb, Params(0)), std::vector<int>(16, 0));
}

// With enough range, every predicted boundary lands within half a step of the real one (the +δ
// overshoot makes Algorithm 2 round to the nearest step).
TEST(HlnHints, PredictedBoundariesWithinHalfAStep) {
  const std::vector<double> rb = RightBoundaries();
  for (int bits : {2, 4, 8}) {
    const HintParams p = Params(bits);
    const std::vector<double> b = PredictedBoundaries(CalcHints(rb, p), p);
    for (int i = 0; i < 15; ++i) {
      EXPECT_LE(std::fabs(b[i] - rb[i]), p.step_size() / 2 + 1e-12)
          << "bits " << bits << " i " << i;
    }
  }
}

// Keys in the middle of each subnode's range are guessed right; Equation 1 (no hints) misses
// where Table 1 deviates from 1/16 by more than the key's distance to the boundary.
TEST(HlnHints, GuessSubnodeFindsEverySubnodeOfTable1) {
  const std::vector<double> rb = RightBoundaries();
  for (int bits : {4, 8}) {
    const HintParams p = Params(bits);
    const std::vector<int> hints = CalcHints(rb, p);
    double lo = 0;
    for (int i = 0; i < 16; ++i) {
      const double mid = (lo + rb[i]) / 2;
      EXPECT_EQ(GuessSubnode(mid, hints, p), i) << "bits " << bits;
      lo = rb[i];
    }
  }
  // Without hints: subnode 0 ends at 0.0688 > 1/16, so a key at 0.064 is guessed into subnode 1.
  const HintParams p0 = Params(0);
  const std::vector<int> none(16, 0);
  EXPECT_EQ(GuessSubnode(0.064, none, p0), 1);
  EXPECT_EQ(GuessSubnode(0.064, CalcHints(rb, Params(4)), Params(4)), 0);
}

TEST(HlnHints, EquationOneWithoutHints) {
  const HintParams p = Params(0);
  const std::vector<int> none(16, 0);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(GuessSubnode((j + 0.5) / 16, none, p), j);
    EXPECT_EQ(GuessSubnode(j / 16.0, none, p), j);
  }
  EXPECT_EQ(GuessSubnode(0.9999999, none, p), 15);
  EXPECT_EQ(GuessSubnode(0.0, none, p), 0);
}

// Hints saturate at +-(2^(l-1) - 1); the error left over is carried to the next subnode.
TEST(HlnHints, HintsSaturateAndCarry) {
  std::vector<double> rb(16);
  for (int i = 0; i < 16; ++i) rb[i] = (i + 1) / 16.0;
  rb[0] = 0.5 / 16;  // subnode 0 is half as wide as expected
  const HintParams p = Params(2);
  const std::vector<int> h = CalcHints(rb, p);
  EXPECT_EQ(h[0], -1);  // clamped: 0.03125 off, one step is 0.0125
  EXPECT_EQ(h[1], 1);   // subnode 1 starts from the predicted (too far right) boundary
}

TEST(HlnHints, EncodingRoundTrips) {
  for (int bits : {2, 4, 8}) {
    const int m = (1 << (bits - 1)) - 1;
    std::vector<int> hints;
    for (int i = 0; i < 64; ++i) hints.push_back((i * 7) % (2 * m + 1) - m);
    const std::string enc = EncodeHints(hints, bits, HintBytes(64, bits));
    EXPECT_EQ(enc.size(), static_cast<size_t>(64 * bits / 8));
    EXPECT_EQ(DecodeHints(enc, 64, bits), hints) << "bits " << bits;
  }
  EXPECT_EQ(HintBytes(256, 8), 256u);
  EXPECT_EQ(HintBytes(16, 4), 8u);
  EXPECT_EQ(HintBytes(4, 2), 1u);
  EXPECT_TRUE(EncodeHints({}, 0, 0).empty());
  EXPECT_EQ(DecodeHints("", 16, 0), std::vector<int>(16, 0));
}

}  // namespace
}  // namespace grove::hln
