#include "learned/pla.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace grove::learned {

__int128 PlaSegmenter::Cross(const Point& a, const Point& b, const Point& c) {
  return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
}

bool PlaSegmenter::SlopeLess(const Point& a, const Point& b, const Point& c, const Point& d) {
  return (b.y - a.y) * (d.x - c.x) < (d.y - c.y) * (b.x - a.x);
}

bool PlaSegmenter::Add(uint64_t x, uint64_t y) {
  const Point u{static_cast<__int128>(x), static_cast<__int128>(y) + eps_};
  const Point l{static_cast<__int128>(x), static_cast<__int128>(y) - eps_};
  if (n_ == 0) {
    rect_[0] = u;
    rect_[1] = l;
    upper_.assign(1, u);
    lower_.assign(1, l);
    upper_start_ = lower_start_ = 0;
    n_ = 1;
    return true;
  }
  if (n_ == 1) {
    rect_[2] = l;
    rect_[3] = u;
    upper_.push_back(u);
    lower_.push_back(l);
    n_ = 2;
    return true;
  }
  // Outside the feasible wedge: the new upper bound lies below the min-slope line, or the new lower
  // bound above the max-slope line. No line can serve this point too.
  if (SlopeLess(rect_[2], u, rect_[0], rect_[2]) || SlopeLess(rect_[1], rect_[3], rect_[3], l)) {
    return false;
  }
  // The upper bound cuts the max-slope line: the new max-slope line goes through u and the point of
  // the lower hull that minimises the slope to u.
  if (SlopeLess(rect_[1], u, rect_[1], rect_[3])) {
    size_t best = lower_start_;
    for (size_t i = lower_start_ + 1; i < lower_.size(); ++i) {
      if (SlopeLess(lower_[i], u, lower_[best], u)) best = i;
    }
    rect_[1] = lower_[best];
    rect_[3] = u;
    lower_start_ = best;
    size_t end = upper_.size();
    while (end >= upper_start_ + 2 && Cross(upper_[end - 2], upper_[end - 1], u) <= 0) --end;
    upper_.resize(end);
    upper_.push_back(u);
  }
  // Symmetrically, the lower bound cuts the min-slope line.
  if (SlopeLess(rect_[0], rect_[2], rect_[0], l)) {
    size_t best = upper_start_;
    for (size_t i = upper_start_ + 1; i < upper_.size(); ++i) {
      if (SlopeLess(upper_[best], l, upper_[i], l)) best = i;
    }
    rect_[0] = upper_[best];
    rect_[2] = l;
    upper_start_ = best;
    size_t end = lower_.size();
    while (end >= lower_start_ + 2 && Cross(lower_[end - 2], lower_[end - 1], l) >= 0) --end;
    lower_.resize(end);
    lower_.push_back(l);
  }
  ++n_;
  return true;
}

void PlaSegmenter::Line(uint64_t x0, double* slope, double* intercept) const {
  using LD = long double;
  if (n_ <= 1) {
    *slope = 0;
    *intercept = n_ == 0 ? 0 : static_cast<double>(static_cast<LD>(rect_[0].y + rect_[1].y) / 2);
    return;
  }
  auto fx = [&](const Point& p) { return static_cast<LD>(p.x - static_cast<__int128>(x0)); };
  auto fy = [](const Point& p) { return static_cast<LD>(p.y); };
  const LD s1 = (fy(rect_[2]) - fy(rect_[0])) / (fx(rect_[2]) - fx(rect_[0]));
  const LD s2 = (fy(rect_[3]) - fy(rect_[1])) / (fx(rect_[3]) - fx(rect_[1]));
  const LD s = (s1 + s2) / 2;
  // Through the intersection of the two extreme lines (any line between them through it is
  // feasible); parallel lines: halfway between them.
  const LD b1 = fy(rect_[0]) - s1 * fx(rect_[0]);
  const LD b2 = fy(rect_[1]) - s2 * fx(rect_[1]);
  LD b;
  if (s1 == s2) {
    b = (b1 + b2) / 2;
  } else {
    const LD xi = (b2 - b1) / (s1 - s2);
    b = (s1 * xi + b1) - s * xi;
  }
  *slope = static_cast<double>(s);
  *intercept = static_cast<double>(b);
}

namespace {

// key - first_key as a double, from the exact integer difference (one rounding, not two).
double Offset(uint64_t key, uint64_t first_key) {
  return key >= first_key ? static_cast<double>(key - first_key)
                          : -static_cast<double>(first_key - key);
}

}  // namespace

uint64_t LinearSegment::Predict(uint64_t key) const {
  const double dx = Offset(key, first_key);
  const double v = std::floor(slope * dx + intercept);
  if (!(v > static_cast<double>(first_rank))) return first_rank;  // also NaN
  if (v >= static_cast<double>(last_rank)) return last_rank;
  return static_cast<uint64_t>(v);
}

size_t FindSegment(const std::vector<LinearSegment>& segments, uint64_t key) {
  auto it = std::upper_bound(segments.begin(), segments.end(), key,
                             [](uint64_t k, const LinearSegment& s) { return k < s.first_key; });
  return it == segments.begin() ? 0 : static_cast<size_t>(it - segments.begin()) - 1;
}

namespace {

// Phase-1 segment boundaries: [begin, end) index ranges, with the phase-1 line of each.
struct Span {
  size_t begin, end;
  double slope, intercept;
};

std::vector<Span> Segment(const std::vector<uint64_t>& keys, uint64_t epsilon) {
  std::vector<Span> spans;
  PlaSegmenter seg(epsilon);
  size_t begin = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (seg.Add(keys[i], i)) continue;
    Span s{begin, i, 0, 0};
    seg.Line(keys[begin], &s.slope, &s.intercept);
    spans.push_back(s);
    seg.Reset();
    seg.Add(keys[i], i);
    begin = i;
  }
  if (!keys.empty()) {
    Span s{begin, keys.size(), 0, 0};
    seg.Line(keys[begin], &s.slope, &s.intercept);
    spans.push_back(s);
  }
  return spans;
}

// The intercept shift that makes the most nodes of [begin, end) predicted exactly over their whole
// key range. Node j owns keys [keys[j], keys[j+1]); with the line monotone, it is hit everywhere
// iff both ends are, i.e. iff the shift t lies in [j - v(lo), j + 1 - v(hi)). A sweep over those
// intervals finds the most covered point; the middle of that stretch leaves a margin both ways.
double BestShift(const LinearSegment& seg, const std::vector<uint64_t>& keys, size_t begin,
                 size_t end) {
  std::vector<std::pair<double, int>> events;
  events.reserve(2 * (end - begin));
  auto value = [&](uint64_t key) { return seg.slope * Offset(key, seg.first_key) + seg.intercept; };
  for (size_t j = begin; j < end; ++j) {
    const double lo = value(keys[j]);
    double hi = lo;
    if (j + 1 < keys.size()) {
      // The node's last key, or as close to it as a double can tell apart from the next node's
      // first key (offsets beyond 2^53 are rounded).
      const uint64_t next_off = keys[j + 1] - seg.first_key;
      const uint64_t ulp =
          next_off >> 53 ? uint64_t{1} << (std::bit_width(next_off) - 53) : uint64_t{1};
      const uint64_t gap = keys[j + 1] - keys[j];
      hi = value(ulp < gap ? keys[j + 1] - ulp : keys[j]);
    }
    const double a = static_cast<double>(j) - lo, b = static_cast<double>(j) + 1 - hi;
    if (a < b) {
      events.push_back({a, +1});
      events.push_back({b, -1});
    }
  }
  if (events.empty()) return 0.5;
  std::sort(events.begin(), events.end());  // at equal positions, ends (-1) before starts
  int cover = 0, best = -1;
  double best_lo = 0.5, best_hi = 0.5;
  for (size_t i = 0; i < events.size(); ++i) {
    cover += events[i].second;
    const double next = i + 1 < events.size() ? events[i + 1].first : events[i].first;
    if (cover > best && next > events[i].first) {
      best = cover;
      best_lo = events[i].first;
      best_hi = next;
    }
  }
  return (best_lo + best_hi) / 2;
}

}  // namespace

std::vector<LinearSegment> FitSegmentsPhase1(const std::vector<uint64_t>& keys, uint64_t epsilon) {
  std::vector<LinearSegment> out;
  for (const Span& s : Segment(keys, epsilon)) {
    out.push_back({keys[s.begin], s.slope, s.intercept + 0.5, s.begin, s.end - 1});
  }
  return out;
}

std::vector<LinearSegment> FitSegments(const std::vector<uint64_t>& keys, uint64_t epsilon) {
  std::vector<LinearSegment> out;
  for (const Span& s : Segment(keys, epsilon)) {
    LinearSegment seg{keys[s.begin], 0, static_cast<double>(s.begin), s.begin, s.end - 1};
    const size_t n = s.end - s.begin;
    if (n > 1) {
      // Least squares over (key - first_key, rank), in long double for 64-bit key spans.
      long double mx = 0, my = 0;
      for (size_t j = s.begin; j < s.end; ++j) {
        mx += static_cast<long double>(keys[j] - keys[s.begin]);
        my += static_cast<long double>(j);
      }
      mx /= n;
      my /= n;
      long double sxx = 0, sxy = 0;
      for (size_t j = s.begin; j < s.end; ++j) {
        const long double dx = static_cast<long double>(keys[j] - keys[s.begin]) - mx;
        sxx += dx * dx;
        sxy += dx * (static_cast<long double>(j) - my);
      }
      const long double slope = sxx > 0 ? sxy / sxx : 0;
      seg.slope = static_cast<double>(slope);
      seg.intercept = static_cast<double>(my - slope * mx);
    }
    // Shift the intercept to maximise exact hits (the floor readout): Eq. 2's objective.
    seg.intercept += BestShift(seg, keys, s.begin, s.end);
    out.push_back(seg);
  }
  return out;
}

}  // namespace grove::learned
