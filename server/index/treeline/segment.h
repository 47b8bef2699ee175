#pragma once

// TreeLine segments (page groups) and the models that place records in them.
//
// A segment covers a key range of the tree (its cell in a level-1 node of the B+-tree core: the
// range's lower bound is the separator, its upper bound the next one). Its descriptor is that
// cell's payload (40 bytes, docs/formats/treeline.md):
//
//   0               8       9       10         16             24             32             40
//   +---------------+-------+-------+----------+--------------+--------------+--------------+
//   | first page    | pages | flags | reserved | base u64     | slope f64    | intercept f64|
//   | u64           | u8    | u8    |          |              |              |              |
//   +---------------+-------+-------+----------+--------------+--------------+--------------+
//
//   page(key) = clamp(floor(slope * (Project(key) - base) + intercept), 0, pages - 1)
//
// The model works on the 8-byte projection of a key (docs/variants.md): keys that share it land on
// one page, and every key of the range lands on some page, so any key set is correct; the model
// only decides placement. A one-page segment has no model.
//
// SegmentBuilder turns sorted records into segments as TreeLine's reorganisation does (paper §4.5,
// phases II and III): the optimal error-bounded PLA (learned/pla.h) over (key - base, rank) with
// error epsilon; the page count rounded down to 1, 2, 4, 8 or 16 (s pages when the line predicts
// at least s x goal ranks); at most 16 x goal records per segment; records placed by the model.
// goal and epsilon are in records per page; with records of varying size they come from the mean
// record size of the set being built (goal = goal_fill x records that fit a page, epsilon =
// epsilon_fill x the same), and a segment whose pages would not fit their records by bytes is
// built smaller.
//
// Thread safety: Segment is a value; a SegmentBuilder is used by one thread.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/slice.h"

#include "page/page.h"

namespace grove::treeline {

inline constexpr int kMaxSegmentPages = 16;

struct Segment {
  PageId first = kInvalidPageId;
  uint8_t pages = 1;
  uint8_t flags = 0;
  uint64_t base = 0;
  double slope = 0;
  double intercept = 0;

  static constexpr size_t kEncodedBytes = 40;
  std::string Encode() const;
  // REQUIRES: payload of kEncodedBytes (the core checks payload sizes).
  static Segment Decode(Slice payload);

  // The page index of `key` in the segment.
  int PageFor(Slice key) const { return PageForProjection(Project(key)); }
  int PageForProjection(uint64_t x) const;
  // The smallest projection that lands on page `i` or later (0 for page 0): page i holds the
  // projections in [LowOf(i), LowOf(i + 1)).
  uint64_t LowOf(int i) const;
};

// The smallest key whose projection is >= p: p's 8 bytes big-endian without trailing zeros. Keys
// at or above it project to >= p; keys below it to < p.
std::string KeyAtProjection(uint64_t p);

struct Record {
  std::string key, cell;
  size_t bytes() const;  // in a slotted page: key, cell, cell header and slot
};

struct BuildOptions {
  bool grouping = true;          // false: every segment is one page (the paper's factor analysis)
  double goal_fill = 0.815;      // goal / records that fit a page (the paper's 44 of 54)
  double epsilon_fill = 0.0925;  // epsilon / records that fit a page (5 of 54)
  // A forecast of inserts into the range shrinks the goal so that pages keep room for them
  // (paper §4.6): goal' = goal x goal_scale, 0 < goal_scale <= 1.
  double goal_scale = 1.0;
  size_t page_capacity = 0;  // bytes of cells and slots a page offers
};

// A segment ready to be written: its model (first page still unset) and its records per page.
struct BuiltSegment {
  Segment segment;
  std::vector<std::vector<Record>> pages;  // pages[i]: page i's records, ascending
  std::string first_key;                   // its smallest record's key
};

// Builds segments from `records` (ascending, unique keys). Every record lands in exactly one
// segment; a segment's page i holds exactly the records its model places there, and each page's
// records fit page_capacity bytes.
std::vector<BuiltSegment> BuildSegments(std::vector<Record> records, const BuildOptions& options);

// The goal and epsilon BuildSegments uses for a set of records of `mean_bytes` each.
struct GoalEpsilon {
  uint64_t goal = 1;       // records per page
  uint64_t epsilon_q = 1;  // epsilon in quarter records (the PLA works on integers)
};
GoalEpsilon GoalFor(double mean_bytes, const BuildOptions& options);

}  // namespace grove::treeline
