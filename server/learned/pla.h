#pragma once

// Piecewise linear approximation (PLA) of a monotone key -> rank mapping: the model fitting shared
// by the learned components (SHORTCUT's per-level path models today; AULID's models later).
//
// Two phases, as SHORTCUT describes (§4.2):
//   1. PlaSegmenter: split the points into the fewest segments such that each segment has a line
//      within +-epsilon of every point in it (the optimal streaming algorithm: the feasible lines
//      are tracked through the convex hulls of the points' upper and lower error bounds, as in
//      O'Rourke's algorithm and the PGM-index). Greedy maximal extension gives the minimum count.
//   2. FitSegments: refit each segment by least squares, then shift its intercept to maximise the
//      number of exact hits (the objective is "predict exactly the right rank", not "be close"),
//      judged on the training keys and on the midpoints between consecutive keys.
//
// Keys are 64-bit (Project()ed keys); ranks are the points' positions. Exact integer arithmetic
// (128-bit cross products) decides segment boundaries, so they do not depend on rounding.
//
// Thread safety: FitSegments is a pure function; a PlaSegmenter is used by one thread.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace grove::learned {

// Phase 1, streaming: Add() returns false when the point does not fit the current segment (the
// caller then starts a new segment with Reset() and adds the point again).
class PlaSegmenter {
 public:
  explicit PlaSegmenter(uint64_t epsilon) : eps_(static_cast<__int128>(epsilon)) {}

  // REQUIRES: x strictly greater than the previous point's x within a segment.
  bool Add(uint64_t x, uint64_t y);
  void Reset() { n_ = 0; }
  uint64_t size() const { return n_; }

  // A line within epsilon of every point added since Reset(): y = slope * (x - x0) + intercept.
  void Line(uint64_t x0, double* slope, double* intercept) const;

 private:
  struct Point {
    __int128 x, y;
  };
  // Sign of the cross product (b - a) x (c - a): > 0 for a left turn.
  static __int128 Cross(const Point& a, const Point& b, const Point& c);
  // slope(a->b) < slope(c->d), for a.x < b.x and c.x < d.x.
  static bool SlopeLess(const Point& a, const Point& b, const Point& c, const Point& d);

  const __int128 eps_;
  uint64_t n_ = 0;
  // The extreme feasible lines: min slope through rect_[0] and rect_[2], max slope through
  // rect_[1] and rect_[3].
  Point rect_[4];
  std::vector<Point> upper_, lower_;  // hulls of the y + eps and y - eps points
  size_t upper_start_ = 0, lower_start_ = 0;
};

struct LinearSegment {
  uint64_t first_key = 0;  // keys >= first_key (and below the next segment's) belong here
  double slope = 0;
  double intercept = 0;  // prediction: floor(slope * (key - first_key) + intercept)
  uint64_t first_rank = 0;
  uint64_t last_rank = 0;  // predictions are clamped to [first_rank, last_rank]

  uint64_t Predict(uint64_t key) const;
};

// Fits both phases over points (keys[i], i). REQUIRES: keys strictly ascending. Returns one
// segment per phase-1 segment, ascending by first_key.
std::vector<LinearSegment> FitSegments(const std::vector<uint64_t>& keys, uint64_t epsilon);

// Phase 1 only, for comparison: the segments with the phase-1 lines (no refit).
std::vector<LinearSegment> FitSegmentsPhase1(const std::vector<uint64_t>& keys, uint64_t epsilon);

// The segment of `key`: the last one whose first_key <= key (the first one for smaller keys).
size_t FindSegment(const std::vector<LinearSegment>& segments, uint64_t key);

}  // namespace grove::learned
