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
//   projected each key goes to the loaded key nearest its place in the trace's key space
//           (TraceShape::Place), for data loaded from that same space (key set trace:PATH).
//           Where the trace carries its database's key sketch, that data has the traced
//           database's shape, cold ranges included, so a hot range keeps its share of the keys
//           instead of being stretched over all of them. A key whose first traced use is a read
//           that found nothing replays as its place plus a zero byte: absent from the load, in
//           its place. Scan and range-delete bounds replay as their places.
// Values are written with the traced sizes (random bytes).
//
// Passes after the first (loops, and a warm-up pass, ReplayOptions::first_loop) vary the keys the
// trace named only once: each such key is replaced, per pass, by another loaded key from its
// neighbourhood (its sketch cell with projected keys, its share of the loaded keys with scaled
// ones; an absent-first key by a new absent key there). A key the trace named once stands for
// the many the traced workload touched about once, so a repeated pass must not find it cached;
// keys named more than once (hot keys, hot ranges' repeats) stay as they are. Scans with an end
// bound and exact replays do not vary.
//
// Timing: closed (each worker takes the next record when its last one returned, the records
// shared out in trace order), or the trace's own (each record starts at its traced time divided
// by the speed; latency counts from that time, as in an open-loop run).

#include <cstdint>
#include <string>
#include <string_view>
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
  // The pass number of the first pass (passes vary keys by their number; 0 is the trace's own
  // keys). A warm-up passes a number no measured pass uses.
  uint64_t first_loop = 0;
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
  // Per key: the loaded keys (indexes into ReplayPlan::loaded) a pass other than 0 draws its
  // replacement from, [vary_lo, vary_lo + vary_span); span 0 keeps the key. Empty: none varies.
  std::vector<uint64_t> vary_lo, vary_span;
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
  uint64_t varied_keys = 0;  // distinct keys passes other than 0 replace
  // The sorted loaded keys replacements come from (scaled and projected replays); owned by the
  // caller, who keeps it for as long as the plan runs.
  const std::vector<uint64_t>* loaded = nullptr;
};

// The keys of `op` in pass `loop` (op_index: its place in the trace), with the varied ones
// replaced (see above); `op.keys` itself when none varies or loop is 0.
const std::vector<std::string>& PassKeys(const ReplayPlan& plan, const ReplayOp& op,
                                         uint64_t op_index, uint64_t loop,
                                         std::vector<std::string>* scratch);

// Reads the trace at `path`. kScaled and kProjected need `sorted_loaded`: the keys grove-bench
// loaded, in ascending order (KeySpace::sorted_loaded); kExact ignores it. InvalidArgument names
// the file for a trace that cannot be replayed (no file, not a trace, nothing to replay); DataLoss
// for damage.
[[nodiscard]] StatusOr<ReplayPlan> LoadReplay(const std::string& path, const ReplayOptions& options,
                                              const std::vector<uint64_t>& sorted_loaded);

// The key space of a trace as 64-bit places, for key sets built from it (key_set.h, trace:PATH)
// and projected replays; order-preserving (not strictly: keys may share a place).
//
// With the traced database's key sketch (trace/key_sketch.h): cell i of the sketch's C cells owns
// the places [i * W, (i + 1) * W), W = 2^64 / 2^ceil(log2 C), and a key goes to its cell (by
// comparing it with the sketch's bounds, so exactly, whatever the keys look like) at the
// fraction of the cell its projection local to the cell gives (the 8 bytes after the prefix the
// cell's bounds share). Keys before the first bound or after the last go to the ends.
// Without a sketch: a key's place is its 8-byte projection after the prefix every key of the
// trace shares.
struct TraceShape {
  size_t prefix = 0;
  // The trace's keys (scan bounds included), placed, sorted and unique. Calls that failed count
  // too: their keys were asked for.
  std::vector<uint64_t> points;
  // The traced database's key sketch; none when the trace has none or the database was empty.
  std::vector<std::string> sketch_bounds;
  std::vector<uint64_t> sketch_counts;
  uint64_t sketch_keys = 0;  // the keys the sketch counted
  int cell_bits = 0;         // W = 2^(64 - cell_bits)

  bool has_sketch() const { return !sketch_counts.empty(); }
  uint64_t Place(std::string_view key) const;
};
[[nodiscard]] StatusOr<TraceShape> ReadTraceShape(const std::string& path);

}  // namespace grove::bench
