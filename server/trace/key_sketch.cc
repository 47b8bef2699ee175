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

// The first key of the database in one direction.
StatusOr<std::string> EndKey(const CursorFactory& open, bool reverse) {
  ScanOptions o;
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

StatusOr<KeySketch> SketchKeys(const CursorFactory& open, uint32_t cells, uint32_t steps) {
  if (cells == 0 || steps == 0) {
    return Status::InvalidArgument("a key sketch needs at least one cell and one step");
  }
  KeySketch sketch;
  GROVE_ASSIGN_OR_RETURN(const std::string first, EndKey(open, /*reverse=*/false));
  GROVE_ASSIGN_OR_RETURN(const std::string last, EndKey(open, /*reverse=*/true));
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
  const size_t prefix = SharedPrefix(first, last);
  const uint64_t lo = KeyProjection(first, prefix);
  const uint64_t hi = KeyProjection(last, prefix);
  // Cells of at least one projection unit each, so that every bound is a distinct key.
  const uint64_t n = std::max<uint64_t>(1, std::min<uint64_t>(cells, hi - lo));
  sketch.bounds.push_back(first);
  for (uint64_t i = 1; i < n; ++i) {
    const auto offset = static_cast<uint64_t>(static_cast<unsigned __int128>(hi - lo) * i / n);
    sketch.bounds.push_back(BoundKey(std::string_view(first).substr(0, prefix), lo + offset));
  }
  sketch.bounds.push_back(last);

  for (uint64_t i = 0; i < n; ++i) {
    const bool last_cell = i + 1 == n;
    ScanOptions o;
    o.lower = sketch.bounds[i];
    if (!last_cell) {
      o.upper = sketch.bounds[i + 1];
      o.has_upper = true;
    }
    o.keys_only = true;
    o.expected_entries = steps + 1;
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, open(o));
    uint64_t seen = 0;
    uint64_t start = 0;
    while (it->Valid() && seen < steps) {
      if (seen == 0) start = KeyProjection(it->key(), prefix);
      ++seen;
      it->Next();
    }
    GROVE_RETURN_IF_ERROR(it->status());
    uint64_t count = seen;
    if (it->Valid()) {
      // `seen` keys spanned [start, here); the cell goes on to its end at that density.
      const uint64_t here = KeyProjection(it->key(), prefix);
      const uint64_t end =
          last_cell ? hi + (hi < UINT64_MAX ? 1 : 0) : KeyProjection(sketch.bounds[i + 1], prefix);
      const long double width = static_cast<long double>(end - start);
      const long double covered = static_cast<long double>(std::max<uint64_t>(1, here - start));
      const long double estimate = static_cast<long double>(seen) * width / covered;
      count = std::max<uint64_t>(seen + 1, estimate >= static_cast<long double>(kMaxSketchCellCount)
                                               ? kMaxSketchCellCount
                                               : static_cast<uint64_t>(estimate));
    }
    sketch.counts.push_back(count);
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
    }
  }
  if (!in.empty()) return Status::DataLoss("the key sketch has bytes after its end");
  return Status::Ok();
}

}  // namespace grove::trace
