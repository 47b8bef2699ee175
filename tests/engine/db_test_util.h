#pragma once

// Helpers shared by the engine tests: options for a small database in a temp dir, on a chosen IO
// backend, and keys/values that check themselves.

#include <string>

#include <gtest/gtest.h>

#include "grove/db.h"

#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"
#include "util/coding.h"

namespace grove::testing {

// Small, fast defaults: 4 MiB cache, no fsync, quiet logs. Tests that check durability set
// wal.sync themselves.
inline Options SmallOptions(const std::string& dir, IoBackendKind backend = IoBackendKind::kPsync) {
  Options o;
  o.data_dir = dir;
  o.cache_bytes = 4 << 20;
  o.io.kind = backend;
  o.wal.sync = SyncMode::kNone;
  o.wal.segment_bytes = 8 << 20;
  o.wal.max_unsynced_bytes = 8 << 20;
  o.logger = NewNullLogger();
  return o;
}

// A plain psync backend (the clean one a crashed directory is reopened on, or the inner one a
// fault-injecting backend wraps).
inline std::shared_ptr<IoBackend> Psync() {
  auto io = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
  EXPECT_TRUE(io.ok()) << io.status().ToString();
  return io.ok() ? *io : nullptr;
}

inline std::string Key(uint64_t i) { return EncodeU64Key(i); }

// A value that encodes its key and a version, with a length that varies with both.
inline std::string Value(uint64_t key, uint64_t version, size_t base_len = 16) {
  std::string v = "v" + std::to_string(key) + "." + std::to_string(version) + ":";
  const size_t len = base_len + (key * 7 + version * 13) % base_len;
  while (v.size() < len) v.push_back(static_cast<char>('a' + (v.size() + key) % 26));
  return v;
}

// A figure of the index's `extra` statistics; a missing one fails the test (and reads as -1).
inline double Extra(Db* db, const std::string& name) {
  const IndexStats s = db->GetStats().index;
  auto it = s.extra.find(name);
  EXPECT_NE(it, s.extra.end()) << name;
  return it == s.extra.end() ? -1.0 : it->second;
}

inline std::string BackendName(const ::testing::TestParamInfo<IoBackendKind>& info) {
  return info.param == IoBackendKind::kUring ? "uring" : "psync";
}

}  // namespace grove::testing
