#include "learned/fmcd.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace grove::learned {

uint64_t SlotModel::Slot(uint64_t x) const {
  if (slots <= 1 || x < base) return 0;
  const long double v =
      static_cast<long double>(slope) * static_cast<long double>(x - base) + intercept;
  if (!(v > 0)) return 0;  // also NaN
  if (v >= static_cast<long double>(slots)) return slots - 1;
  return static_cast<uint64_t>(v);
}

uint64_t SlotModel::FirstKeyOf(uint64_t s) const {
  if (s == 0) return 0;
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (Slot(kMax) < s) return kMax;
  // Slot() is monotone: binary search for the first key that reaches s.
  uint64_t lo = 0, hi = kMax;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (Slot(mid) >= s) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

uint64_t SlotsFor(size_t n) {
  const uint64_t gap = n < 100000 ? 5 : n < 1000000 ? 2 : 1;
  return std::max<uint64_t>(2, static_cast<uint64_t>(n) * (gap + 1));
}

namespace {

// The line that puts `lo` at slot `lo_slot` and `hi` at slot `hi_slot` (lo < hi), relative to
// `base`.
SlotModel Through(uint64_t base, uint64_t slots, long double lo, long double lo_slot,
                  long double hi, long double hi_slot) {
  SlotModel m;
  m.base = base;
  m.slots = slots;
  const long double slope = (hi_slot - lo_slot) / (hi - lo);
  m.slope = static_cast<double>(slope);
  // With the slope rounded to a double, place lo exactly where asked.
  m.intercept = static_cast<double>(lo_slot - static_cast<long double>(m.slope) * lo);
  return m;
}

}  // namespace

FmcdFit FitFmcd(std::span<const uint64_t> keys, uint64_t slots) {
  FmcdFit fit;
  const size_t n = keys.size();
  fit.model.slots = std::max<uint64_t>(2, slots);
  const uint64_t L = fit.model.slots;
  if (n == 0) return fit;
  fit.model.base = keys[0];
  if (n == 1) {
    fit.model.intercept = static_cast<double>(L / 2);
    fit.conflict_degree = 1;
    return fit;
  }
  // Offsets from the base: exact as integers, and small enough for long double arithmetic.
  auto at = [&](size_t i) { return static_cast<long double>(keys[i] - keys[0]); };
  if (n == 2 || L < 3) {
    // Two keys: one at each end.
    fit.model = Through(keys[0], L, at(0), 0.5L, at(n - 1), static_cast<long double>(L) - 0.5L);
    fit.conflict_degree = ConflictDegree(keys, fit.model);
    return fit;
  }
  size_t d = 1;
  auto spacing = [&](size_t dd) {
    return (at(n - 1 - dd) - at(dd)) / static_cast<long double>(L - 2);
  };
  long double u = spacing(d);
  bool ok = 3 * d <= n && n - 1 - d > d;
  size_t i = 0;
  // Like LIPP, pairs that start in the last d + 1 ranks are not checked: they sit at the clamped
  // end of the line anyway.
  while (ok && i + d + 1 < n) {
    // Advance while keys d apart are at least u apart.
    while (i + d < n && at(i + d) - at(i) >= u) ++i;
    if (i + d >= n) break;  // every pair d apart passed
    ++d;                    // keys i and i + d - 1 were too close: allow one more per slot
    if (3 * d > n || n - 1 - d <= d) {
      ok = false;
      break;
    }
    u = spacing(d);
  }
  if (ok && u > 0) {
    fit.d = d;
    // Half a slot in from LIPP's line (k[D] at 1, k[n-1-D] at L - 1): the same slope, so the same
    // bound, without keys sitting on slot boundaries where rounding decides.
    fit.model = Through(keys[0], L, at(d), 1.5L, at(n - 1 - d), static_cast<long double>(L) - 0.5L);
  } else {
    // The thirds: the midpoint of the keys around rank n/3 goes to the slot a third of the way
    // along, that around 2n/3 two thirds along.
    fit.fallback = true;
    const size_t m1 = (n - 1) / 3, m2 = (n - 1) * 2 / 3;
    const long double k1 = (at(m1) + at(m1 + 1)) / 2, k2 = (at(m2) + at(m2 + 1)) / 2;
    const long double per_key = static_cast<long double>(L) / static_cast<long double>(n);
    if (k2 > k1) {
      fit.model = Through(keys[0], L, k1, (m1 + 1) * per_key, k2, (m2 + 1) * per_key);
    } else {
      // The middle third is one value: spread from the first to the last key instead.
      fit.model = Through(keys[0], L, at(0), 0.5L, at(n - 1), static_cast<long double>(L) - 0.5L);
    }
  }
  fit.conflict_degree = ConflictDegree(keys, fit.model);
  return fit;
}

uint64_t ConflictDegree(std::span<const uint64_t> keys, const SlotModel& model) {
  uint64_t best = 0, run = 0, prev = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t s = model.Slot(keys[i]);
    run = (i > 0 && s == prev) ? run + 1 : 1;
    prev = s;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace grove::learned
