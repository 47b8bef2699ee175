#include "index/treeline/segment.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "learned/pla.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::treeline {

namespace {

uint64_t DoubleBits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}
double BitsDouble(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

}  // namespace

std::string Segment::Encode() const {
  std::string s(kEncodedBytes, '\0');
  EncodeFixed64(s.data(), first);
  s[8] = static_cast<char>(pages);
  s[9] = static_cast<char>(flags);
  EncodeFixed64(s.data() + 16, base);
  EncodeFixed64(s.data() + 24, DoubleBits(slope));
  EncodeFixed64(s.data() + 32, DoubleBits(intercept));
  return s;
}

Segment Segment::Decode(Slice p) {
  Segment s;
  s.first = DecodeFixed64(p.data());
  s.pages = static_cast<uint8_t>(p[8]);
  s.flags = static_cast<uint8_t>(p[9]);
  s.base = DecodeFixed64(p.data() + 16);
  s.slope = BitsDouble(DecodeFixed64(p.data() + 24));
  s.intercept = BitsDouble(DecodeFixed64(p.data() + 32));
  return s;
}

int Segment::PageForProjection(uint64_t x) const {
  if (pages <= 1) return 0;
  const double d = x >= base ? static_cast<double>(x - base) : -static_cast<double>(base - x);
  const double v = slope * d + intercept;
  if (!(v > 0)) return 0;  // also NaN
  if (v >= static_cast<double>(pages)) return pages - 1;
  return static_cast<int>(v);
}

uint64_t Segment::LowOf(int i) const {
  if (i <= 0) return 0;
  if (i >= pages || PageForProjection(std::numeric_limits<uint64_t>::max()) < i) {
    return std::numeric_limits<uint64_t>::max();
  }
  // The model is monotone (slope >= 0): the first projection that reaches page i.
  uint64_t lo = 0, hi = std::numeric_limits<uint64_t>::max();
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (PageForProjection(mid) >= i) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

std::string KeyAtProjection(uint64_t p) {
  std::string k(8, '\0');
  EncodeBigEndian64(k.data(), p);
  while (!k.empty() && k.back() == '\0') k.pop_back();
  return k;
}

size_t Record::bytes() const { return SlottedPageView::CellBytes(key.size(), cell.size()); }

GoalEpsilon GoalFor(double mean_bytes, const BuildOptions& o) {
  const double fit =
      std::max(1.0, std::floor(static_cast<double>(o.page_capacity) / std::max(1.0, mean_bytes)));
  GoalEpsilon ge;
  ge.goal = static_cast<uint64_t>(std::max(1.0, std::floor(o.goal_fill * fit * o.goal_scale)));
  // epsilon: what the caller asked for, or the most the page leaves at both ends of the goal
  // (goal + 2 epsilon <= what fits); in quarter records.
  const double eps =
      o.epsilon_fill >= 0 ? o.epsilon_fill * fit : (fit - std::floor(o.goal_fill * fit)) / 2;
  ge.epsilon_q = static_cast<uint64_t>(std::max(1.0, std::floor(eps * 4)));
  return ge;
}

namespace {

// One page of up to `goal` records (and at most what fits by bytes), from records[*i].
BuiltSegment OnePage(std::vector<Record>& records, size_t* i, uint64_t goal, size_t capacity) {
  BuiltSegment b;
  b.segment.pages = 1;
  b.pages.resize(1);
  b.first_key = records[*i].key;
  size_t bytes = 0;
  while (*i < records.size() && b.pages[0].size() < goal &&
         (b.pages[0].empty() || bytes + records[*i].bytes() <= capacity)) {
    bytes += records[*i].bytes();
    b.pages[0].push_back(std::move(records[(*i)++]));
  }
  return b;
}

// The model's unclamped page value of projection x.
double Value(const Segment& s, uint64_t x) {
  const double d = x >= s.base ? static_cast<double>(x - s.base) : -static_cast<double>(s.base - x);
  return s.slope * d + s.intercept;
}

}  // namespace

std::vector<BuiltSegment> BuildSegments(std::vector<Record> records, const BuildOptions& o) {
  std::vector<BuiltSegment> out;
  if (records.empty()) return out;
  double total = 0;
  for (const Record& r : records) total += static_cast<double>(r.bytes());
  const GoalEpsilon ge = GoalFor(total / static_cast<double>(records.size()), o);
  const size_t cap = o.page_capacity;
  size_t i = 0;
  while (i < records.size()) {
    if (!o.grouping) {
      out.push_back(OnePage(records, &i, ge.goal, cap));
      continue;
    }
    // Phase II: the longest run the optimal PLA covers within epsilon, at most 16 x goal
    // records. Keys sharing a projection share the rank of the first of them.
    const uint64_t x0 = Project(records[i].key);
    learned::PlaSegmenter pla(ge.epsilon_q);
    const size_t limit = std::min(records.size(), i + kMaxSegmentPages * ge.goal);
    size_t j = i;
    uint64_t prev = 0;
    for (bool first = true; j < limit; ++j) {
      const uint64_t x = Project(records[j].key);
      if (!first && x == prev) continue;
      if (!pla.Add(x - x0, 4 * (j - i))) break;
      prev = x;
      first = false;
    }
    // Phase III: as many pages as the line predicts full ones, rounded down to a power of two.
    double slope_q = 0, intercept_q = 0;
    pla.Line(0, &slope_q, &intercept_q);
    const double last_rank = (slope_q * static_cast<double>(prev - x0) + intercept_q) / 4 + 1;
    int s = kMaxSegmentPages;
    while (s > 1 && static_cast<double>(s) * static_cast<double>(ge.goal) > last_rank) s /= 2;
    Segment m;
    m.base = x0;
    m.slope = std::max(0.0, slope_q / (4.0 * static_cast<double>(ge.goal)));
    m.intercept = intercept_q / (4.0 * static_cast<double>(ge.goal));
    for (; s > 1; s /= 2) {
      m.pages = static_cast<uint8_t>(s);
      // The records the model places on pages 0..s-1; the rest go to the next segment.
      size_t end = i;
      while (end < j && Value(m, Project(records[end].key)) < static_cast<double>(s)) ++end;
      if (end == i) continue;
      std::vector<size_t> bytes(s, 0);
      bool fits = true;
      for (size_t k = i; k < end && fits; ++k) {
        size_t& b = bytes[m.PageForProjection(Project(records[k].key))];
        b += records[k].bytes();
        fits = b <= cap;
      }
      if (!fits) continue;  // records larger than the mean crowd a page: fewer pages
      BuiltSegment b;
      b.segment = m;
      b.pages.resize(s);
      b.first_key = records[i].key;
      for (size_t k = i; k < end; ++k) {
        const int p = m.PageForProjection(Project(records[k].key));
        b.pages[p].push_back(std::move(records[k]));
      }
      i = end;
      out.push_back(std::move(b));
      break;
    }
    if (s == 1) out.push_back(OnePage(records, &i, ge.goal, cap));
  }
  return out;
}

}  // namespace grove::treeline
