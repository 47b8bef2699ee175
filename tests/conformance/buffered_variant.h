#pragma once

// "buffered": a test variant that exercises the engine services a write-back design needs
// (docs/variants.md, "Engine services"), the way TreeLine's record cache and AHA-tree's memtable
// use them. It is a btree (created through the registry) behind an in-memory write buffer:
//
//   * Blind writes. Put and Delete go to the buffer. When the key is already buffered the replaced
//     cell is known and handed back at once; otherwise the write is blind and old_cell stays
//     empty. A background thread flushes the buffer into the btree in maintenance units
//     (IndexServices::RunMaintenance) that reserve room for one entry and Extend it for each
//     further one; the btree hands back the cell it replaced and the unit releases it
//     (IndexServices::ReleaseCell). A refused Extend ends the unit early.
//   * The buffer lives only in memory: OldestUnpersistedLsn keeps its writes in the WAL, and
//     ListMemoryOnlyCells names its blob cells so that recovery frees them before replaying.
//   * A file of its own: every checkpoint writes "buffered-<epoch>" (the flush count, read back at
//     open and named by the metadata); OnCheckpointDurable deletes older ones and
//     OnCheckpointAbandoned the new one, so the file a durable manifest names always exists.
//   * Verify reports buffered entries as cells and the btree's cells of buffered keys as shadowed.
//
// Parameters: buffer_entries (flush when the buffer holds more; default 64), flush_interval_ms
// (default 2).
//
// Concurrency: mu_ guards the buffer. A flush holds it while it moves one entry into the btree, so
// that no write to that key can slip between the move and the release of the replaced cell. Lock
// order: mu_ -> btree page latches.

#include "index/variant.h"

namespace grove::testing {

VariantSpec BufferedVariantSpec();

}  // namespace grove::testing
