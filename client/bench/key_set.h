#pragma once

// Key sets: which uint64 keys exist, and in which order they are inserted.
//
// A key set is a universe of `capacity` unique uint64 values drawn from a shape. The first
// `records` of them (in insertion order) are loaded by LOAD; inserts during a run take the next
// ones in order. Insertion order is random by default (like YCSB's insertorder=hashed, inserts
// land all over the key space) or ascending (loads and inserts are appends).
//
// Shapes (the SOSD-like ones are SYNTHETIC stand-ins with the qualitative shape the papers
// describe, not the real data sets; docs/grove-bench.md shows how each is generated):
//   dense      1..capacity
//   sparse     uniform over the whole 64-bit range
//   lognormal  round(exp(N(0, 2)) * 1e9)                      (SOSD lognormal)
//   books      Pareto-distributed 2^20-wide buckets, uniform inside (SOSD "books": Pareto overall,
//              uniform within sub-ranges)
//   fb         uniform over 2^48 overall; 4096 segments with lognormal density, 5% empty and 1%
//              20x dense, so the CDF has local jumps and steps (SOSD "fb")
//   osm        two-level clusters: 1000 regions, 50 normal clusters each, empty space between
//              (SOSD "osm" cell ids: clustered, globally hard to fit)
//   wiki       Poisson-process timestamps at one-second resolution with a daily rate cycle;
//              duplicates dropped (SOSD "wiki" edit timestamps)
//   gapped     one key per equal stride of the 64-bit range at a pseudo-random offset, inserts in
//              the gaps; computed on demand, so any number of keys costs no memory (gapped_keys.h)
//   sosd:PATH  sorted uint64 keys from a file in SOSD's binary format: a little-endian u64 count,
//              then that many little-endian u64 keys. Duplicates are dropped.
//   trace:PATH keys of a workload trace's key space, as places (replay.h, TraceShape): where
//              the trace carries the traced database's key sketch, drawn cell by cell in
//              proportion to the keys the sketch counted (the database's shape, cold ranges
//              included); else from the empirical CDF of the keys the trace named, interpolated
//              linearly between them
//
// Keys reach the engines as 8-byte big-endian strings, so byte order is numeric order.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grove/status.h"

namespace grove::bench {

enum class KeyShape {
  kDense,
  kSparse,
  kLognormal,
  kBooks,
  kFb,
  kOsm,
  kWiki,
  kGapped,
  kSosdFile,
  kTrace
};

struct KeySetSpec {
  KeyShape shape = KeyShape::kDense;
  std::string file;           // kSosdFile, kTrace
  bool sorted_order = false;  // insertion order ascending instead of random
};

// "dense", "sparse", ..., "sosd:/path/to/file", "trace:/path/to/file".
StatusOr<KeySetSpec> ParseKeySetSpec(std::string_view text);
std::string KeySetName(const KeySetSpec& spec);

// `capacity` unique keys of the spec's shape in insertion order, deterministic for a seed. For a
// SOSD file, fewer keys when the file holds fewer unique keys. kGapped keys are the ones
// GappedKeys(capacity, capacity, ...) computes: all of them a load.
StatusOr<std::vector<uint64_t>> MakeKeySet(const KeySetSpec& spec, uint64_t capacity,
                                           uint64_t seed);

// The sorted, de-duplicated keys of a SOSD binary file.
StatusOr<std::vector<uint64_t>> ReadSosdFile(const std::string& path);
// Writes `keys` as a SOSD binary file (tests and users converting their own data).
Status WriteSosdFile(const std::string& path, const std::vector<uint64_t>& keys);

// 8-byte big-endian encoding: the same bytes as the engine's EncodeU64Key.
inline void EncodeKey(uint64_t v, char out[8]) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}
inline std::string EncodeKey(uint64_t v) {
  std::string s(8, '\0');
  EncodeKey(v, s.data());
  return s;
}
inline uint64_t DecodeKey(std::string_view s) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < s.size(); ++i) v = (v << 8) | static_cast<uint8_t>(s[i]);
  return v;
}

}  // namespace grove::bench
