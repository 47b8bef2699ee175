#pragma once

// The variant conformance suite (docs/variants.md, "Conformance suite"): every index variant, with
// the parameters that change its structure, runs the same tests through grove::Db:
//
//   conformance_test   model test against std::map (point ops, batches including ones applied
//                      operation by operation, both scan directions, reopen, Verify after every
//                      phase), bulk load with every record size, concurrency with
//                      wal.sync always, replay onto a state that already holds part of a batch,
//                      damaged pages detected, and the IO bound the variant declares
//   crash_points_test  power loss at every protocol boundary (tests/reliability;
//                      GROVE_CRASH_POINTS=all runs every IO)
//
// A new variant joins by adding one line to ConformanceCases() in cases.cc.
// GROVE_CONFORMANCE=all adds the long list (every hln leaf size and hint width, ...): make
// conformance-all.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grove/db.h"

#include "index/registry.h"

namespace grove::testing {

struct VariantCase {
  std::string name = "";  // test name suffix: letters, digits and '_'
  std::string variant = "";
  ParamMap params = {};
  // The registry holding the variant; null: the built-in variants.
  std::shared_ptr<const IndexRegistry> registry = nullptr;
  // The smallest cache the variant opens with (hln: 16 leaves).
  uint64_t min_cache_bytes = 0;
  // IO accounting with every inner node cached and a cache much smaller than the leaves: the
  // most pages one Get of an inline value may read, and the most it may read on average.
  uint32_t max_reads_per_get = 1;
  double max_mean_reads_per_get = 1.0;
  // The structure workload of crash_points_test reaches the B+-tree's classes (leaf and inner
  // splits, merges, root growth and collapse) as part of writes.
  bool btree_structure = false;
  // The same workload issues the same IOs on every run (no background work changes pages).
  bool deterministic_io = true;
  // Scans read the leaves ahead of themselves (core::ScanReadahead).
  bool scan_readahead = false;
};

// The built-in variants and the test variants: "buffered" (buffered_variant.h) and "sorted" (the
// worked example of docs/variants.md, sorted_variant.h).
std::shared_ptr<const IndexRegistry> TestVariantRegistry();

// Every case of the suite (the long list with GROVE_CONFORMANCE=all).
std::vector<VariantCase> ConformanceCases();

// A small Db of `c` in `dir`: 4 MiB cache (or the case's minimum), no fsync, quiet.
Options ConformanceOptions(const VariantCase& c, const std::string& dir,
                           IoBackendKind backend = IoBackendKind::kPsync);

// The operations a batch may hold and still be applied at once (larger ones, whose worst case
// needs more than a quarter of the write room, are applied operation by operation).
uint64_t BatchEntriesThatFit(const VariantCase& c, const Options& o);
// Whether the write room under `o` holds `times` of the case's largest single operation (a
// test that shrinks the room, with a small checkpoint.dirty_fraction, must keep it above one).
bool RoomHoldsOperations(const VariantCase& c, const Options& o, uint64_t times);

// gtest prints parameters with this.
inline void PrintTo(const VariantCase& c, std::ostream* os) { *os << c.name; }

inline std::string CaseName(const ::testing::TestParamInfo<VariantCase>& info) {
  return info.param.name;
}

using Model = std::map<std::string, std::string>;

// Verify() finds no problem and exactly `entries` entries.
void ExpectVerifyClean(Db* db, size_t entries, const std::string& what);
// A full scan in both directions and a Get of every key agree with `model`.
void ExpectMatches(Db* db, const Model& model, const std::string& what);
// Everything a full scan returns.
Model ReadAll(Db* db);

}  // namespace grove::testing
