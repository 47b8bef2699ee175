#pragma once

// Advisor: which index variant fits a traced workload (`grovectl advise`, docs/grovectl.md).
//
// Every candidate (a variant with its settings) gets the same data at the same memory budget, in
// a directory of its own under a scratch directory (removed after its run), and then the same
// replay of the trace (replay.h); the candidates are ranked by the replay's throughput, and the
// report says which resource separated the best from the next: device page reads, bytes written,
// or CPU per operation.
//
// The data, one of:
//   a backup  every record of it (restored once into the scratch directory, read in key order
//             and bulk loaded into each candidate); the trace replays with its exact keys;
//   records   N keys synthesised from the trace's key space (key_set.h, trace:PATH) with values
//             of the trace's mean put size, bulk loaded. With the traced database's key sketch
//             in the trace, the keys follow the database's shape and the trace replays with
//             projected keys (each to the nearest key in its place); a trace without one
//             replays with scaled keys (by rank) onto keys shaped like its own.
//
// Each candidate replays the trace unmeasured for `warmup_seconds` (or one pass), then measured,
// whole passes, as many as its warm-up rate says `min_seconds` take (at least `loops`).
//
// The measured passes are cut into `slices` slices taken in turns (A B C ... A B C ..., the order
// rotating each turn) with every candidate's database open at once, so that a device whose speed
// drifts while the advice runs slows every candidate alike instead of whichever ran at the wrong
// moment. Each candidate's slices are reported, and their spread says how far its figure can be
// trusted. When the candidates' budgets together exceed half this machine's memory, they run one
// after another instead, each measured in one piece (Advice::interleaved says which).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "grove/status.h"

#include "bench/replay.h"
#include "bench/runner.h"

namespace grove::bench {

struct AdvisorOptions {
  std::string trace;           // the trace file
  std::string backup;          // load this backup's records; empty: synthesise `records`
  uint64_t records = 1000000;  // synthesised records
  uint32_t value_bytes = 0;    // synthesised values; 0: the trace's mean put size (100 if none)
  uint64_t memory_bytes = 64ull << 20;  // every candidate's budget (the engine's cache_bytes)
  std::string dir;                      // scratch directory (created; candidates removed after)
  uint32_t threads = 4;                 // replay threads
  uint32_t loops = 1;                   // measured replays of the trace per candidate, at least
  // An unmeasured replay first, for this long or one pass, whichever ends first (0: none): a
  // replay from a fresh load would see cold caches and empty write buffers that the traced
  // server, running for a while, did not have.
  double warmup_seconds = 1;
  // Measured replays repeat until they have run this long (one pass of a short trace is over
  // in a fraction of a second, too short to measure).
  double min_seconds = 1.5;
  // The measured passes in this many slices taken in turns (at most one pass a slice; 1: each
  // candidate measured in one piece, one after another).
  uint32_t slices = 4;
  std::vector<std::string> candidates;  // embedded:<variant>?... targets; empty: the defaults
  std::string wal_sync = "always";
  bool direct_io = true;
  uint64_t seed = 1;
  bool progress = false;  // progress bars on stderr while loading and replaying
};

// The candidates `advise` compares by default: btree with and without SHORTCUT, hln, treeline,
// aulid and aha, each with its documented defaults.
std::vector<std::string> DefaultAdvisorCandidates();

struct CandidateResult {
  std::string target;   // embedded:<variant>[?params]
  std::string variant;  // the index variant
  std::map<std::string, std::string> params;
  Status status;  // not OK: the candidate failed (load or replay) and is ranked last
  double load_seconds = 0;
  double replay_seconds = 0;  // measured
  double warmup_seconds = 0;
  uint32_t loops = 0;  // measured replays of the trace
  uint64_t ops = 0;
  uint64_t errors = 0;
  double ops_per_sec = 0;
  double p50_us = 0, p99_us = 0;
  double page_reads_per_op = 0;           // device page reads (4 KiB) per replayed call
  double bytes_written_per_op = 0;        // bytes the process wrote to the device per call
  double cpu_us_per_op = 0;               // process CPU time per call during the replay
  double index_memory_bytes = 0;          // inner nodes + models + filters (what stays cached)
  std::vector<double> slice_ops_per_sec;  // each measured slice's throughput, in turn order

  // (fastest slice - slowest slice) / ops_per_sec; 0 with one slice.
  double SliceSpread() const;
};

struct Advice {
  std::vector<CandidateResult> ranked;  // best first; failed candidates last
  std::string why;                      // which resource decided, with the figures
  std::string config;                   // the recommended `index:` block (YAML)
  ReplayFacts replay;                   // what was replayed
  uint64_t records = 0;                 // records each candidate held
  // Measured in slices taken in turns with every candidate open (else one after another).
  bool interleaved = false;
  double seconds = 0;  // the whole advice
};

// Orders candidates best first: by throughput, failed ones last (stable among equals).
void RankCandidates(std::vector<CandidateResult>* candidates);
// How the measured passes divide: `passes` whole passes into at most `slices` slices (never an
// empty one), as evenly as they go, the larger slices first.
std::vector<uint32_t> SlicePasses(uint32_t passes, uint32_t slices);
// Which resource separates `best` from `next`: device page reads when the winner read a fifth
// fewer (of at least 0.05 per call), else bytes written (a fifth fewer, of at least 512 per call),
// else CPU per call; with both figures, and a tie named as such under 5%. When both were measured
// in slices and the winner's slowest slice was slower than the next one's fastest, it says so.
std::string ExplainChoice(const CandidateResult& best, const CandidateResult& next);
// The `index:` block of the server's configuration that selects `c`.
std::string IndexConfigBlock(const CandidateResult& c);

// Runs every candidate; `say` receives a line per step (may be empty). Fails only when nothing
// could run (a bad trace or backup, no scratch directory); a failing candidate is reported in
// its row.
[[nodiscard]] StatusOr<Advice> Advise(const AdvisorOptions& options,
                                      const std::function<void(const std::string&)>& say);

}  // namespace grove::bench
