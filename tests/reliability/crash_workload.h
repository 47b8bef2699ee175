#pragma once

// The deterministic workload and the IO classification behind crash_points_test.cc.
//
// The workload grows a tree from empty to three levels (long keys keep the inner fan-out small),
// churns it (puts with and without an expiry, deletes), then deletes most of it again (batches of
// deletes and range deletes), so that leaf and inner splits, a root split, merges
// and a root collapse all happen, each followed by explicit checkpoints. Every checkpoint in it is
// explicit (the options turn the timer and the dirty and WAL triggers off), so the sequence of
// mutating IOs is the same on every run and a crash point found in one run is the same boundary in
// the next.
//
// Each mutating IO is classified as "<context>/<boundary>":
//   boundary  which file and which step of the protocol: wal.write, wal.sync, wal.create,
//             wal.allocate, doublewrite.write, doublewrite.sync, manifest.write, manifest.sync,
//             data.reserve, inplace.write, inplace.sync, superblock.write, superblock.sync,
//             dir.sync, ... (docs/architecture.md, "Durability protocol")
//   context   the operation that issued it: "write" or "checkpoint", qualified by the structure
//             change it made or persists, read from the index's node counts and height
//             (DbStats::index) before and after: ":split", ":inner-split", ":root-split",
//             ":merge", ":inner-merge", ":root-collapse"; a checkpoint names the changes made since
//             the previous checkpoint, e.g. "checkpoint:root-split+merge".

#include <map>
#include <set>
#include <string>
#include <vector>

#include "grove/db.h"
#include "grove/stats.h"

#include "io/fault_backend.h"

namespace grove::testing {

using Model = std::map<std::string, std::string>;

struct CrashStep {
  bool checkpoint = false;
  WriteBatch batch;  // when !checkpoint and !range_delete
  // Db::DeleteRange of [start, end) (one log record for many keys).
  bool range_delete = false;
  std::string start, end;
};

std::vector<CrashStep> StructureWorkload(uint64_t seed);

void ApplyStep(const CrashStep& step, Model* model);
Status RunStep(Db* db, const CrashStep& step);

// The structure changes between two snapshots of the index's shape.
std::set<std::string> StructureChanges(const IndexStats& before, const IndexStats& after);

// Context labels for every step, from the shape after each step (shapes[i] is after step i;
// `initial` before step 0).
std::vector<std::string> StepContexts(const std::vector<CrashStep>& steps,
                                      const IndexStats& initial,
                                      const std::vector<IndexStats>& shapes);

// Names the protocol boundary of each mutating IO. Stateful: a sync of grove.data right after a
// superblock write is the superblock's sync.
class IoClassifier {
 public:
  std::string Classify(const FaultInjectionBackend::OpInfo& info);

 private:
  bool last_data_write_was_superblock_ = false;
};

}  // namespace grove::testing
