#include "trace/key_sketch.h"

#include <algorithm>

#include "util/coding.h"

namespace grove::trace {
namespace {

// The key prefix + `projection` as 8 big-endian bytes: the seek point of a cell's bound.
std::string BoundKey(std::string_view prefix, uint64_t projection) {
  std::string k(prefix);
  for (int shift = 56; shift >= 0; shift -= 8) {
    k.push_back(static_cast<char>((projection >> shift) & 0xff));
  }
  return k;
}

// The first key of [lower, upper) in one direction (no upper bound when `upper` is null); empty
// when there is none.
StatusOr<std::string> EdgeKey(const CursorFactory& open, const std::string& lower,
                              const std::string* upper, bool reverse) {
  ScanOptions o;
  o.lower = lower;
  if (upper != nullptr) {
    o.upper = *upper;
    o.has_upper = true;
  }
  o.reverse = reverse;
  o.keys_only = true;
  o.expected_entries = 1;
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, open(o));
  if (!it->Valid()) {
    GROVE_RETURN_IF_ERROR(it->status());
    return std::string();
  }
  return std::string(it->key());
}

}  // namespace

uint64_t KeySketch::Entries() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

size_t SharedPrefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

uint64_t KeyProjection(std::string_view key, size_t prefix) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) {
    v = (v << 8) | (prefix + i < key.size() ? static_cast<uint8_t>(key[prefix + i]) : 0u);
  }
  return v;
}

namespace {

// A cell while the sketch is built: its lower bound (its upper one is the next cell's, or the last
// key, inclusive, for the last cell) and what counting it found.
struct Cell {
  std::string lo;
  uint64_t count = 0;
  bool exact = false;       // counted key by key
  bool degenerate = false;  // its first keys project alike: no density known, a lower bound
  bool final = false;       // split as far as projections go
  std::string first;        // its first key, when it holds one
};

// Counts the keys of [lo, hi) ([lo, hi] for the last cell), with the density of its first
// `steps` keys measured in the projection local to the cell (after the prefix lo and hi share,
// which every key between them shares).
Status CountCell(const CursorFactory& open, const std::string& hi, bool last, uint32_t steps,
                 Cell* c) {
  ScanOptions o;
  o.lower = c->lo;
  if (!last) {
    o.upper = hi;
    o.has_upper = true;
  }
  o.keys_only = true;
  o.expected_entries = steps + 1;
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, open(o));
  const size_t prefix = SharedPrefix(c->lo, hi);
  uint64_t seen = 0;
  uint64_t start = 0;
  while (it->Valid() && seen < steps) {
    if (seen == 0) {
      c->first = std::string(it->key());
      start = KeyProjection(it->key(), prefix);
    }
    ++seen;
    it->Next();
  }
  GROVE_RETURN_IF_ERROR(it->status());
  c->count = seen;
  c->exact = !it->Valid();
  c->degenerate = false;
  if (c->exact) return Status::Ok();
  // `seen` keys spanned [start, here); the cell goes on to its end at that density.
  const uint64_t here = KeyProjection(it->key(), prefix);
  const uint64_t hi_projection = KeyProjection(hi, prefix);
  const uint64_t end = last && hi_projection < UINT64_MAX ? hi_projection + 1 : hi_projection;
  if (here <= start || end <= start) {
    c->degenerate = true;  // those keys differ only past the projection
    c->count = seen + 1;
    return Status::Ok();
  }
  const long double estimate = static_cast<long double>(seen) *
                               static_cast<long double>(end - start) /
                               static_cast<long double>(here - start);
  c->count = std::max<uint64_t>(seen + 1, estimate >= static_cast<long double>(kMaxSketchCellCount)
                                              ? kMaxSketchCellCount
                                              : static_cast<uint64_t>(estimate));
  return Status::Ok();
}

}  // namespace

StatusOr<KeySketch> SketchKeys(const CursorFactory& open, uint32_t cells, uint32_t steps,
                               uint32_t max_cells) {
  if (cells == 0 || steps == 0 || max_cells < cells || max_cells > kMaxSketchCells) {
    return Status::InvalidArgument("a key sketch needs 1..max_cells cells, max_cells at most " +
                                   std::to_string(kMaxSketchCells) + ", and at least one step");
  }
  KeySketch sketch;
  GROVE_ASSIGN_OR_RETURN(const std::string first, EdgeKey(open, "", nullptr, /*reverse=*/false));
  GROVE_ASSIGN_OR_RETURN(const std::string last, EdgeKey(open, "", nullptr, /*reverse=*/true));
  if (first.empty() && last.empty()) {
    // Either empty, or the empty key is its only key: one cell, counted like any other.
    ScanOptions probe;
    probe.keys_only = true;
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, open(probe));
    if (!it->Valid()) {
      GROVE_RETURN_IF_ERROR(it->status());
      return sketch;
    }
  }
  if (last < first) {
    // Iterators are not snapshots: the database lost its keys between the two looks.
    return Status::Aborted("the database changed while its key sketch was taken");
  }

  // Cells of equal width in the projection of the whole range, at least one unit each so that
  // every bound is a distinct key.
  const size_t prefix = SharedPrefix(first, last);
  const uint64_t lo = KeyProjection(first, prefix);
  const uint64_t hi = KeyProjection(last, prefix);
  const uint64_t n = std::max<uint64_t>(1, std::min<uint64_t>(cells, hi - lo));
  std::vector<Cell> list(n);
  list[0].lo = first;
  for (uint64_t i = 1; i < n; ++i) {
    const auto offset = static_cast<uint64_t>(static_cast<unsigned __int128>(hi - lo) * i / n);
    list[i].lo = BoundKey(std::string_view(first).substr(0, prefix), lo + offset);
  }
  auto hi_of = [&](size_t i) -> const std::string& {
    return i + 1 < list.size() ? list[i + 1].lo : last;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    GROVE_RETURN_IF_ERROR(CountCell(open, hi_of(i), i + 1 == list.size(), steps, &list[i]));
  }

  // Refinement: a cell whose keys project alike (a table of keys under one prefix, say) or that
  // holds the most keys is cut again, between its own first and last keys, in the projection
  // after the prefix those share, until `max_cells`.
  constexpr uint64_t kSplit = 16;
  while (list.size() + kSplit - 1 <= max_cells) {
    size_t pick = list.size();
    for (size_t i = 0; i < list.size(); ++i) {
      const Cell& c = list[i];
      if (c.exact || c.final) continue;
      if (pick == list.size() || (c.degenerate && !list[pick].degenerate) ||
          (c.degenerate == list[pick].degenerate && c.count > list[pick].count)) {
        pick = i;
      }
    }
    if (pick == list.size()) break;
    const bool last_cell = pick + 1 == list.size();
    const std::string cell_hi = hi_of(pick);
    // The cell's last key (the database's last key for the last cell).
    GROVE_ASSIGN_OR_RETURN(const std::string e,
                           EdgeKey(open, list[pick].lo, last_cell ? nullptr : &cell_hi,
                                   /*reverse=*/true));
    const std::string& s = list[pick].first;
    const size_t p = SharedPrefix(s, e);
    const uint64_t ls = KeyProjection(s, p);
    const uint64_t le = KeyProjection(e, p);
    if (e.empty() || !(s < e) || (!last_cell && !(e < cell_hi)) || le <= ls) {
      list[pick].final = true;  // nothing the projection can cut further
      continue;
    }
    const uint64_t k = std::min<uint64_t>(kSplit, le - ls);
    std::vector<Cell> parts(k);
    parts[0].lo = list[pick].lo;
    for (uint64_t j = 1; j < k; ++j) {
      const auto offset = static_cast<uint64_t>(static_cast<unsigned __int128>(le - ls) * j / k);
      parts[j].lo = BoundKey(std::string_view(s).substr(0, p), ls + offset);
    }
    for (uint64_t j = 0; j < k; ++j) {
      const bool last_part = last_cell && j + 1 == k;
      const std::string& part_hi = j + 1 < k ? parts[j + 1].lo : cell_hi;
      GROVE_RETURN_IF_ERROR(CountCell(open, part_hi, last_part, steps, &parts[j]));
    }
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(pick));
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(pick), parts.begin(), parts.end());
  }

  for (const Cell& c : list) {
    sketch.bounds.push_back(c.lo);
    sketch.counts.push_back(c.count);
  }
  sketch.bounds.push_back(last);
  for (size_t i = 1; i + 1 < sketch.bounds.size(); ++i) {
    if (!(sketch.bounds[i - 1] < sketch.bounds[i])) {
      return Status::Internal("key sketch bounds out of order at cell " + std::to_string(i));
    }
  }
  return sketch;
}

void EncodeKeySketch(const KeySketch& sketch, std::string* out) {
  PutVarint32(out, static_cast<uint32_t>(sketch.counts.size()));
  if (sketch.counts.empty()) return;
  for (const std::string& b : sketch.bounds) PutLengthPrefixed(out, b);
  for (uint64_t c : sketch.counts) PutVarint64(out, c);
}

Status DecodeKeySketch(Slice in, KeySketch* out) {
  *out = KeySketch();
  uint32_t cells = 0;
  if (!GetVarint32(&in, &cells)) return Status::DataLoss("the key sketch is cut short");
  if (cells > kMaxSketchCells) {
    return Status::DataLoss("the key sketch has " + std::to_string(cells) + " cells, more than " +
                            std::to_string(kMaxSketchCells));
  }
  // A bound takes at least one byte and a count one: a bound before allocating.
  if (cells > in.size() / 2) return Status::DataLoss("the key sketch is cut short");
  if (cells > 0) {
    out->bounds.reserve(cells + 1);
    for (uint32_t i = 0; i <= cells; ++i) {
      Slice b;
      if (!GetLengthPrefixed(&in, &b)) return Status::DataLoss("the key sketch is cut short");
      std::string key(b.data(), b.size());
      if (!out->bounds.empty() && !(out->bounds.back() < key) && !(cells == 1 && i == 1)) {
        return Status::DataLoss("the key sketch's bounds are out of order");
      }
      out->bounds.push_back(std::move(key));
    }
    if (cells == 1 && out->bounds[1] < out->bounds[0]) {
      return Status::DataLoss("the key sketch's bounds are out of order");
    }
    out->counts.resize(cells);
    for (uint64_t& c : out->counts) {
      if (!GetVarint64(&in, &c)) return Status::DataLoss("the key sketch is cut short");
      if (c > kMaxSketchCellCount) {
        return Status::DataLoss("a key sketch cell counts " + std::to_string(c) + " keys");
      }
    }
  }
  if (!in.empty()) return Status::DataLoss("the key sketch has bytes after its end");
  return Status::Ok();
}

}  // namespace grove::trace
