#pragma once

// FMCD ("fastest minimum conflict degree", from LIPP, Wu et al., PVLDB 14(8), 2021): the model of
// a node whose slots each hold at most one key, so that a lookup computes a slot and reads it. The
// model is a monotone line slot(x) = clamp(floor(slope * (x - base) + intercept), 0, slots - 1);
// its conflict degree is the most keys any one slot receives. FMCD chooses the line from the keys'
// spread instead of by least squares. Take the smallest D such that every two keys D apart in
// rank are at least U = (k[n-1-D] - k[D]) / (L - 2) apart in value, and the line of slope 1/U
// that puts k[D] in slot 1 and k[n-1-D] in slot L - 1 (half a slot in from the boundaries, so
// that rounding does not decide): a slot is U wide, so no slot between them
// holds more than D keys (D + 1 keys in one slot would be D apart in rank and less than U apart),
// and the D keys below k[D] or above k[n-1-D] are clamped into the end slots (so the conflict
// degree is at most 2D, and at most D away from the ends). D only grows as the scan goes, so one
// pass over the keys finds it. When no D up to n / 3 works (a few keys far from the rest), the line
// through the midpoints of the thirds is taken instead.
//
// It is the model of AULID's mixed inner nodes (docs/variants.md, "How the published designs plug
// in"); the slot count follows LIPP's gap rule (SlotsFor). Keys are 64-bit (Project()ed keys).
// The line is relative to `base` (the smallest key), so that slope * (x - base) stays within the
// slot range and a double carries it precisely: a line on raw 64-bit keys would lose whole slots
// to rounding.
//
// Thread safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <span>

namespace grove::learned {

struct SlotModel {
  uint64_t base = 0;
  double slope = 0;
  double intercept = 0;
  uint64_t slots = 1;

  // The slot of `x`: monotone in x, in [0, slots).
  uint64_t Slot(uint64_t x) const;
  // The smallest key whose slot is >= s (0 for s == 0; UINT64_MAX + 1 is not representable, so
  // a slot no key reaches gives UINT64_MAX and the caller checks Slot() of it).
  uint64_t FirstKeyOf(uint64_t s) const;
};

// LIPP's gap rule: n keys get n x (gap + 1) slots, gap 5 below 100,000 keys, 2 below 1,000,000,
// else 1; at least 2 slots.
uint64_t SlotsFor(size_t n);

struct FmcdFit {
  SlotModel model;
  uint64_t conflict_degree = 0;  // most keys in one slot under `model`
  uint64_t d = 0;                // FMCD's D: at most D keys per slot between k[D] and k[n-1-D],
                                 // 2D in the end slots (0 for fewer than 3 keys or a fallback)
  bool fallback = false;         // the thirds line (no D up to n / 3 worked)
};

// Fits `keys` (ascending; equal keys always share a slot, so callers pass distinct ones) onto
// `slots` slots (>= 2). One key or none: slope 0, every key in slot 0 (or the middle slot for one
// key, so that neighbours inserted later spread both ways).
FmcdFit FitFmcd(std::span<const uint64_t> keys, uint64_t slots);

// The conflict degree of `model` over `keys` (ascending).
uint64_t ConflictDegree(std::span<const uint64_t> keys, const SlotModel& model);

}  // namespace grove::learned
