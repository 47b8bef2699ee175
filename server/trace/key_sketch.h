#pragma once

// KeySketch: the shape of a database's key space, written at the head of a trace
// (docs/formats/trace.md, "Key sketch"). A trace shows only the keys its calls named; a replay on
// a smaller database (grovectl advise) also needs to know where the traced database kept the
// keys nobody asked for, or a hot range that was 5% of the data becomes all of it.
//
// Cells, in key order, each with the keys counted in it:
//
//   bounds[0] = first key   bounds[1]   ...   bounds[cells-1]   bounds[cells] = last key
//   |------ cell 0 -------|---- cell 1 ---- ... ---- cell cells-1 ----|
//   counts[i] = the keys in [bounds[i], bounds[i+1]); the last cell holds the last key too
//
// First the range [first key, last key] is cut into `cells` cells of equal width in the keys'
// 8-byte projection (the 8 bytes after the prefix the first and last keys share, big-endian).
// Each count comes from one seek and at most `steps` steps: fewer keys than that before the next
// bound are counted exactly; otherwise the count is extrapolated from the width those steps
// covered, in the projection local to the cell (after the prefix its bounds share). Then cells
// are cut again, up to `max_cells`: first those whose first keys project alike (keys under one
// long prefix, such as a table's, which a cell of the whole range cannot resolve), then those
// counted largest, each between its own first and last keys in the projection after the prefix
// those share. A cell that cannot be resolved within the budget keeps a lower bound (steps + 1).
// So a sketch costs at most about max_cells seeks and max_cells * steps steps, whatever the
// database's size; it is exact where cells hold few keys and an estimate of local density
// elsewhere.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/iterator.h"
#include "grove/options.h"
#include "grove/slice.h"
#include "grove/status.h"

namespace grove::trace {

struct KeySketch {
  std::vector<std::string> bounds;  // cells + 1 keys, ascending; none: the database was empty
  std::vector<uint64_t> counts;     // per cell
  uint64_t Entries() const;         // the keys the sketch counts
  bool operator==(const KeySketch&) const = default;
};

inline constexpr uint32_t kDefaultSketchCells = 256;
inline constexpr uint32_t kDefaultSketchSteps = 32;
inline constexpr uint32_t kDefaultSketchMaxCells = 1024;
inline constexpr uint32_t kMaxSketchCells = 1 << 16;  // a reader refuses more
// A cell's extrapolated count is capped here (keys whose projections hardly differ).
inline constexpr uint64_t kMaxSketchCellCount = 1ull << 48;

// Opens an iterator over the database being sketched (Db::NewIterator).
using CursorFactory = std::function<StatusOr<std::unique_ptr<Iterator>>(const ScanOptions&)>;

// The sketch of the keys `open` iterates. Reads keys only. Aborted when the database lost its
// keys while being sketched (iterators are not snapshots).
[[nodiscard]] StatusOr<KeySketch> SketchKeys(const CursorFactory& open,
                                             uint32_t cells = kDefaultSketchCells,
                                             uint32_t steps = kDefaultSketchSteps,
                                             uint32_t max_cells = kDefaultSketchMaxCells);

// The sketch as a trace stores it:
//   sketch := cells varint32 | (key_bytes varint32 | key) * (cells + 1) | count varint64 * cells
// with cells = 0 (and nothing after it) for an empty database.
void EncodeKeySketch(const KeySketch& sketch, std::string* out);
// DataLoss for bytes that are not a sketch (cut short, more than kMaxSketchCells cells, a count
// over kMaxSketchCellCount, bounds out of order, bytes left over).
[[nodiscard]] Status DecodeKeySketch(Slice in, KeySketch* out);

// The 8 bytes of `key` after its first `prefix` bytes, big-endian, zero-padded: the projection
// sketches and replays place keys by. Order-preserving (not strictly: keys that differ only
// after those 8 bytes project alike).
uint64_t KeyProjection(std::string_view key, size_t prefix);
// How many leading bytes `a` and `b` share.
size_t SharedPrefix(std::string_view a, std::string_view b);

}  // namespace grove::trace
