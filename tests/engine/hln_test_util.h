#pragma once

// Helpers for the engine-level hln tests: options for a Db with variant `hln`, and checks of the
// state against a std::map model.

#include <map>
#include <string>

#include "engine/db_test_util.h"
#include "index/registry.h"

namespace grove::testing {

using HlnParams = std::map<std::string, std::string>;

// A small Db with index.variant = "hln"; the cache holds at least 32 leaves of the chosen size.
inline Options HlnOptions(const std::string& dir, const HlnParams& params) {
  Options o = SmallOptions(dir);
  o.index.variant = "hln";
  o.index.params = params;
  uint64_t leaf_pages = 16;
  if (auto it = params.find("leaf_pages"); it != params.end()) leaf_pages = std::stoull(it->second);
  o.cache_bytes = std::max<uint64_t>(o.cache_bytes, 32 * leaf_pages * 4096);
  o.direct_io = false;  // the page cache keeps the many rereads of these tests cheap
  return o;
}

// The most operations a batch may have with these options: the engine refuses batches whose worst
// case (two whole leaves per operation) cannot fit the cache's write room (WorstCaseWritePages).
inline uint64_t MaxBatchEntries(const Options& o) {
  const uint64_t per_op = (*IndexRegistry::Builtins()).PagesPerOp(o.index.variant, o.index.params);
  const uint64_t room = WriteRoomPages(o);
  return room > 8 + per_op ? (room - 8) / per_op : 1;
}

inline std::string ParamsName(const HlnParams& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

inline double Extra(Db* db, const std::string& name) {
  const IndexStats s = db->GetStats().index;
  auto it = s.extra.find(name);
  return it == s.extra.end() ? -1.0 : it->second;
}

// Verify() finds no problem and reports exactly `entries` entries.
inline void ExpectVerifyClean(Db* db, size_t entries, const std::string& what) {
  VerifyReport report;
  ASSERT_OK(db->Verify(&report));
  ASSERT_TRUE(report.problems.empty()) << what << ": " << report.problems[0];
  ASSERT_EQ(report.entries_checked, entries) << what;
}

// A full scan in both directions and a point lookup of every key agree with `model`.
inline void ExpectMatches(Db* db, const std::map<std::string, std::string>& model,
                          const std::string& what) {
  auto it = db->NewIterator(ScanOptions());
  ASSERT_TRUE(it.ok());
  auto m = model.begin();
  for (; (*it)->Valid(); (*it)->Next(), ++m) {
    ASSERT_TRUE(m != model.end()) << what << ": scan returned an extra key";
    ASSERT_EQ((*it)->key(), m->first) << what;
    ASSERT_EQ((*it)->value(), m->second) << what;
  }
  ASSERT_OK((*it)->status());
  ASSERT_TRUE(m == model.end()) << what << ": scan ended early";
  ScanOptions rev;
  rev.reverse = true;
  auto r = db->NewIterator(rev);
  ASSERT_TRUE(r.ok());
  auto rm = model.rbegin();
  for (; (*r)->Valid(); (*r)->Next(), ++rm) {
    ASSERT_TRUE(rm != model.rend()) << what << ": reverse scan returned an extra key";
    ASSERT_EQ((*r)->key(), rm->first) << what;
  }
  ASSERT_OK((*r)->status());
  ASSERT_TRUE(rm == model.rend()) << what << ": reverse scan ended early";
  std::string v;
  for (const auto& [k, val] : model) {
    auto found = db->Get(k, &v);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_TRUE(*found) << what << ": a key of the scan is not found by Get";
    ASSERT_EQ(v, val) << what;
  }
}

}  // namespace grove::testing
