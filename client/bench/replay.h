#pragma once

// Replay: a workload trace that groved captured (docs/formats/trace.md) turned into grove-bench
// operations, so that the same traced workload can run against any target (an embedded variant,
// RocksDB, a groved). `--workloads trace:FILE` runs it (Runner::RunReplay).
//
// Which calls are replayed: every call that reached the engine, i.e. that ended OK, or a
// conditional write that ended FAILED_PRECONDITION (replayed as the read of its keys it made,
// without the write). Calls that failed otherwise (bad arguments, deadlines, refusals) are
// skipped and counted.
//
// Keys, two ways:
//   exact   the traced keys as they are: the replay database must hold the traced data (a
//           restored backup, or the traced groved itself).
//   scaled  the trace's keys are ranked, and rank r of D distinct keys goes to the loaded key
//           of index floor(r * N / D) of the N keys grove-bench loaded, in key order. The map is
//           monotone, so order, ranges, hot ranges and scans stay contiguous; a key the trace
//           repeats stays one key, so the skew is kept; with N < D neighbouring keys merge (the
//           key space scaled down). A key whose first traced use is a read that found nothing
//           goes to a key just after its loaded key, which the load did not write: it stays a
//           miss until the trace writes it, and that write is an insert. Any other key is taken
//           to exist (a write the trace saw first replays as an overwrite). What the mapping
//           cannot keep is the traced database's density between the keys the sample saw: a
//           scan replays with its traced limit, over the mapped range.
//   projected each key goes to the loaded key nearest its place in the trace's key space (its
//           8-byte projection, TraceShape), for data loaded from that same space (key set
//           trace:PATH). Where the trace carries its database's key sketch, that data has the
//           traced database's shape, cold ranges included, so a hot range keeps its share of
//           the keys instead of being stretched over all of them. A key whose first traced use
//           is a read that found nothing replays as its own projection plus a zero byte: absent
//           from the load, in its place, distinct from its neighbours. Scan and range-delete
//           bounds replay as their projections.
// Values are written with the traced sizes (random bytes).
//
// Timing: closed (each worker takes the next record when its last one returned, the records
// shared out in trace order), or the trace's own (each record starts at its traced time divided
// by the speed; latency counts from that time, as in an open-loop run).

#include <cstdint>
#include <string>
#include <vector>

#include "grove/status.h"

#include "bench/workload.h"
#include "trace/trace_file.h"

namespace grove::bench {

struct ReplayOptions {
  enum class Keys { kExact, kScaled, kProjected };
  enum class Timing { kClosed, kTrace };
  Keys keys = Keys::kScaled;
  Timing timing = Timing::kClosed;
  double speed = 1;    // kTrace: traced times are divided by this
  uint32_t loops = 1;  // the trace runs this many times back to back
  // Stop issuing calls once this long has passed (0: run every loop), e.g. a warm-up that ends
  // after a second or one pass, whichever comes first.
  double max_seconds = 0;
};

// One replayed call.
struct ReplayOp {
  uint64_t micros = 0;  // since the trace's start
  OpType type = OpType::kRead;
  // A precondition was given: the replay reads the keys first (what groved does to check it),
  // and writes only when the traced call applied.
  bool conditional = false;
  bool apply = true;
  std::vector<std::string> keys;  // point keys; for scans and range deletes, the start
  std::vector<int64_t> values;    // writes: per key its value size, or -1 for a delete
  std::string end;                // scans and range deletes (empty: to the last key)
  uint64_t limit = 0;             // scans and range deletes
  bool reverse = false;           // scans
};

struct ReplayPlan {
  std::string path;
  trace::Header header;
  ReplayOptions options;
  std::vector<ReplayOp> ops;
  uint64_t traced_records = 0;  // records in the file
  uint64_t skipped = 0;         // records of calls that failed: not replayed
  bool truncated = false;       // the file ends in a block cut short
  uint64_t distinct_keys = 0;   // keys of the trace (scan bounds included)
  uint64_t absent_keys = 0;     // keys whose first traced use was a read that found nothing
  uint32_t max_value_bytes = 0;
};

// Reads the trace at `path`. kScaled and kProjected need `sorted_loaded`: the keys grove-bench
// loaded, in ascending order (KeySpace::sorted_loaded); kExact ignores it. InvalidArgument names
// the file for a trace that cannot be replayed (no file, not a trace, nothing to replay); DataLoss
// for damage.
[[nodiscard]] StatusOr<ReplayPlan> LoadReplay(const std::string& path, const ReplayOptions& options,
                                              const std::vector<uint64_t>& sorted_loaded);

// The key space of a trace in 8-byte projections (trace::KeyProjection: the bytes after the
// prefix every key of the trace and of its sketch shares), for key sets built from it (key_set.h,
// trace:PATH) and projected replays.
struct TraceShape {
  size_t prefix = 0;
  // The trace's keys (scan bounds included), sorted and unique. Calls that failed count too:
  // their keys were asked for.
  std::vector<uint64_t> points;
  // The traced database's key sketch, projected: cells + 1 bounds and a count per cell; empty
  // when the trace has none or the database was empty.
  std::vector<uint64_t> cell_bounds;
  std::vector<uint64_t> cell_counts;
  uint64_t sketch_keys = 0;  // the keys the sketch counted
};
[[nodiscard]] StatusOr<TraceShape> ReadTraceShape(const std::string& path);

}  // namespace grove::bench
