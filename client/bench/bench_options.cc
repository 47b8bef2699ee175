#include "bench/bench_options.h"

#include <cmath>
#include <cstdio>

#include <unistd.h>

#include "bench/parse.h"
#include <CLI/CLI.hpp>

namespace grove::bench {
namespace {

constexpr const char* kDescription =
    R"(grove-bench: YCSB-style load generator for Grove, RocksDB and the raw device.

Workloads (--workloads, comma separated, run in order on the same data):
  load   insert --records keys (--load-method put | batch | bulk)
  a      50% read / 50% update                 (zipfian)
  b      95% read / 5% update                  (zipfian)
  c      100% read                             (zipfian)
  d      95% read latest / 5% insert           (latest)
  e      95% scan (uniform 1..100) / 5% insert (zipfian)
  f      50% read / 50% read-modify-write      (zipfian)
  FILE   a YAML workload with phases (config/workloads/*.yaml)
  trace:FILE  replay a trace groved captured (grovectl trace start; --replay-*)

Targets (--target):
  embedded:<variant>[?param=value&...]  the engine in-process
  rocksdb[?memtable_fraction=&bloom_bits=&block_size=&partitioned=]
  device[?file_bytes=SIZE|?file=PATH]   random 4 KiB reads: the physical ceiling (PATH: an
                                        existing file, read whole and never written)
  grpc://host:port                      groved through the client library
  grpc-noop://host:port                 health checks: the RPC stack's ceiling
  etcd://host:port[,...]/cluster        a Grove cluster, routed by its shard map in etcd

Each run prints one JSON line (--json) and a table row. Sizes accept 64MiB, 1GiB, 10M, 1e6.)";

}  // namespace

std::optional<BenchOptions> ParseCommandLine(int argc, char** argv, int* exit_code) {
  BenchOptions o;
  CLI::App app(kDescription, "grove-bench");
  std::string records = "100K";
  std::string value_size = "100";
  std::string ops;
  std::string warmup_ops;
  std::string cache_bytes;
  std::string insert_budget;
  std::string age;
  std::string device_bytes;
  std::string load_method = "put";
  std::string direct_io = "true";
  double theta = 0;
  double cache_fraction = 0;

  app.add_option("--target", o.target, "What to benchmark (see above)")->capture_default_str();
  app.add_option(
      "--dir", o.target_options.dir,
      "Data directory (default grove-bench-data/<target>); keep it on the disk under test");
  app.add_option("--workloads,-w", o.workloads, "Workloads to run, in order")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option(
         "--distribution", o.distributions,
         "Override the request distribution: uniform, zipfian, latest, hotspot; a list runs "
         "every workload once per entry (phases using 'latest' keep it)")
      ->delimiter(',');
  app.add_option("--zipf-theta", theta, "Zipfian/latest skew, in (0,1) (default 0.99)");
  app.add_option("--records,-n", records, "Records loaded by LOAD")->capture_default_str();
  app.add_option("--keys", o.keys,
                 "Key set: dense, sparse, lognormal, books, fb, osm, wiki (synthetic) or sosd:FILE")
      ->capture_default_str();
  app.add_option("--key-order", o.key_order, "Insertion order: random or sorted")
      ->check(CLI::IsMember({"random", "sorted"}))
      ->capture_default_str();
  app.add_option("--value-size", value_size, "Value bytes: N, or MIN-MAX for uniform sizes")
      ->capture_default_str();
  app.add_option("--insert-budget", insert_budget,
                 "Keys reserved for inserts after LOAD (default: estimated from the workloads "
                 "+ 10% of --records)");
  app.add_option("--threads,-t", o.threads, "Worker threads (= queue depth for device)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--load-threads", o.load_threads, "Threads for LOAD (default --threads)");
  app.add_option("--load-method", load_method, "put, batch (atomic batches) or bulk (Db::BulkLoad)")
      ->check(CLI::IsMember({"put", "batch", "bulk"}))
      ->capture_default_str();
  app.add_option("--age", age,
                 "After LOAD, N uniform updates of loaded records in batches of --batch-size "
                 "with --load-threads, then settle (reported as workload 'age'): the TreeLine "
                 "paper's aged starting database");
  app.add_option("--batch-size", o.batch_size, "Entries per batch for --load-method batch")
      ->capture_default_str();
  app.add_option("--ops", ops, "Operations per phase (phases that do not set their own length)");
  app.add_option("--duration", o.duration, "Seconds per phase (instead of --ops)");
  app.add_option("--warmup", o.warmup_seconds, "Seconds of unmeasured warm-up before each run");
  app.add_option("--warmup-ops", warmup_ops, "Operations of unmeasured warm-up before each run");
  app.add_option("--rate", o.rate,
                 "Open-loop target rate, ops/s over all threads (0: closed loop)");
  app.add_option("--cache-bytes", cache_bytes, "Memory budget (default 64MiB)");
  app.add_option("--cache-fraction", cache_fraction,
                 "Memory budget as a fraction of the data (records x (8 + value bytes))");
  app.add_option("--direct-io", direct_io, "O_DIRECT for data files: true or false")
      ->capture_default_str();
  app.add_option("--io-backend", o.target_options.io_backend, "auto, uring or psync")
      ->check(CLI::IsMember({"auto", "uring", "psync"}))
      ->capture_default_str();
  app.add_option("--queue-depth", o.target_options.queue_depth, "io_uring ring entries per queue")
      ->capture_default_str();
  app.add_option("--wal-sync", o.target_options.wal_sync,
                 "Durability, for Grove and RocksDB alike: always, batch or none")
      ->check(CLI::IsMember({"always", "batch", "none"}))
      ->capture_default_str();
  app.add_option("--wal-batch-us", o.target_options.wal_batch_us,
                 "Sync interval for --wal-sync batch")
      ->capture_default_str();
  app.add_option("--device-file-bytes", device_bytes,
                 "File size for the device target (default 1.5 x the data size)");
  app.add_option("--grpc-token", o.target_options.grpc_token, "Bearer token for grpc targets");
  app.add_option("--grpc-timeout-ms", o.target_options.grpc_timeout_ms, "Deadline per RPC attempt")
      ->capture_default_str();
  app.add_option("--grpc-transport", o.target_options.grpc_transport,
                 "grpc targets: stream (workers share one client; calls multiplexed onto Batch "
                 "streams) or unary (a client per worker, one RPC per call)")
      ->check(CLI::IsMember({"stream", "unary"}))
      ->capture_default_str();
  app.add_option("--grpc-streams", o.target_options.grpc_streams,
                 "grpc targets, stream transport: Batch streams of the shared client")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--grpc-stream-messages", o.target_options.grpc_stream_messages,
                 "grpc targets, stream transport: request messages in flight per stream")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--etcd-ca", o.target_options.etcd_ca_file,
                 "etcd:// targets: CA certificate of etcd (TLS to etcd)");
  app.add_option("--etcd-cert", o.target_options.etcd_cert_file,
                 "etcd:// targets: client certificate for etcd");
  app.add_option("--etcd-key", o.target_options.etcd_key_file,
                 "etcd:// targets: client key for etcd");
  app.add_option("--seed", o.seed, "Seed for keys, values and request streams")
      ->capture_default_str();
  app.add_option("--json", o.json_path, "Append one JSON line per run to this file ('-': stdout)");
  app.add_flag("!--no-table", o.table, "Do not print the table");
  app.add_option("--progress", o.progress, "Progress bar on stderr: auto (if a terminal), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--label", o.label, "Free text stored in every JSON line (e.g. a suite name)");
  app.add_option("--timeline-interval", o.timeline_interval,
                 "Seconds between timeline samples (throughput and latency percentiles)")
      ->capture_default_str();
  app.add_option("--timeline-counters", o.timeline_counters,
                 "Target counters whose per-interval deltas join every timeline sample "
                 "(names, or prefixes ending in '*', comma separated)")
      ->delimiter(',');
  std::string replay_keys = "scaled";
  std::string replay_timing = "closed";
  app.add_option("--replay-keys", replay_keys,
                 "trace:FILE workloads: 'scaled' (onto the loaded keys, in order), 'projected' "
                 "(each to the loaded key nearest its place in the trace's key space; for data "
                 "loaded with --key-set trace:FILE) or 'exact' (the traced keys; the target "
                 "holds the traced data)")
      ->capture_default_str();
  app.add_option("--replay-timing", replay_timing,
                 "trace:FILE workloads: 'closed' (as fast as the threads go) or 'trace' (each "
                 "call at its traced time / --replay-speed)")
      ->capture_default_str();
  app.add_option("--replay-speed", o.replay.speed,
                 "trace:FILE with --replay-timing trace: traced times are divided by this")
      ->capture_default_str();
  app.add_option("--replay-loops", o.replay.loops, "trace:FILE workloads: replay the trace N times")
      ->capture_default_str();
  app.add_flag("!--no-settle", o.settle_after_load,
               "Do not checkpoint / flush and wait for compactions after LOAD");
  app.add_option("--print-table", o.print_table, "Print the table of a JSON-lines file and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e);
    return std::nullopt;
  }
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += argv[i];
  }

  auto fail = [&](const Status& s) {
    std::fprintf(stderr, "grove-bench: %s\n", std::string(s.message()).c_str());
    *exit_code = 2;
    return std::nullopt;
  };
  auto size = [&](const std::string& text, const char* what, uint64_t* out) {
    StatusOr<uint64_t> v = ParseSize(text, what);
    if (v.ok()) *out = *v;
    return v.status();
  };

  if (Status s = size(records, "--records", &o.records); !s.ok()) return fail(s);
  if (!ops.empty()) {
    if (Status s = size(ops, "--ops", &o.ops); !s.ok()) return fail(s);
  }
  if (!warmup_ops.empty()) {
    if (Status s = size(warmup_ops, "--warmup-ops", &o.warmup_ops); !s.ok()) return fail(s);
  }
  if (!cache_bytes.empty()) {
    uint64_t v = 0;
    if (Status s = size(cache_bytes, "--cache-bytes", &v); !s.ok()) return fail(s);
    o.cache_bytes = v;
  }
  if (cache_fraction > 0) o.cache_fraction = cache_fraction;
  if (o.cache_bytes && o.cache_fraction) {
    return fail(Status::InvalidArgument("give --cache-bytes or --cache-fraction, not both"));
  }
  if (!insert_budget.empty()) {
    uint64_t v = 0;
    if (Status s = size(insert_budget, "--insert-budget", &v); !s.ok()) return fail(s);
    o.insert_budget = v;
  }
  if (!age.empty()) {
    if (Status s = size(age, "--age", &o.age_updates); !s.ok()) return fail(s);
  }
  if (!device_bytes.empty()) {
    if (Status s = size(device_bytes, "--device-file-bytes", &o.target_options.device_file_bytes);
        !s.ok()) {
      return fail(s);
    }
  }
  if (theta != 0) {
    if (!(theta > 0 && theta < 1))
      return fail(Status::InvalidArgument("--zipf-theta: must be in (0, 1)"));
    o.zipf_theta = theta;
  }
  {
    const size_t dash = value_size.find('-');
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (Status s = size(value_size.substr(0, dash), "--value-size", &lo); !s.ok()) return fail(s);
    hi = lo;
    if (dash != std::string::npos) {
      if (Status s = size(value_size.substr(dash + 1), "--value-size", &hi); !s.ok())
        return fail(s);
    }
    if (hi < lo || hi > (1u << 20)) {
      return fail(Status::InvalidArgument("--value-size: need MIN <= MAX <= 1MiB"));
    }
    o.value_min = static_cast<uint32_t>(lo);
    o.value_max = static_cast<uint32_t>(hi);
  }
  StatusOr<bool> direct = ParseBool(direct_io, "--direct-io");
  if (!direct.ok()) return fail(direct.status());
  o.target_options.direct_io = *direct;
  o.load_method = load_method == "bulk"    ? LoadMethod::kBulk
                  : load_method == "batch" ? LoadMethod::kBatch
                                           : LoadMethod::kPut;
  if (replay_keys == "scaled") {
    o.replay.keys = ReplayOptions::Keys::kScaled;
  } else if (replay_keys == "projected") {
    o.replay.keys = ReplayOptions::Keys::kProjected;
  } else if (replay_keys == "exact") {
    o.replay.keys = ReplayOptions::Keys::kExact;
  } else {
    return fail(Status::InvalidArgument("--replay-keys: '" + replay_keys +
                                        "' is not scaled, projected or exact"));
  }
  if (replay_timing == "closed" || replay_timing == "trace") {
    o.replay.timing =
        replay_timing == "trace" ? ReplayOptions::Timing::kTrace : ReplayOptions::Timing::kClosed;
  } else {
    return fail(
        Status::InvalidArgument("--replay-timing: '" + replay_timing + "' is not closed or trace"));
  }
  if (!(o.replay.speed > 0) || !std::isfinite(o.replay.speed)) {
    return fail(Status::InvalidArgument("--replay-speed: must be a number above 0"));
  }
  if (o.replay.loops == 0) return fail(Status::InvalidArgument("--replay-loops: must be >= 1"));
  if (o.ops > 0 && o.duration > 0)
    return fail(Status::InvalidArgument("give --ops or --duration, not both"));
  if (o.ops == 0 && o.duration == 0) o.ops = 100000;
  if (o.target_options.dir.empty()) {
    std::string slug = o.target.substr(0, o.target.find('?'));
    for (char& c : slug) {
      if (c == ':' || c == '/') c = '-';
    }
    while (slug.find("--") != std::string::npos) slug.erase(slug.find("--"), 1);
    o.target_options.dir = "grove-bench-data/" + slug;
  }
  o.target_options.cache_bytes = CacheBytes(o);
  if (o.target_options.device_file_bytes == 0) {
    o.target_options.device_file_bytes = std::max<uint64_t>(64ull << 20, DataBytes(o) * 3 / 2);
  }
  if (o.progress == "auto") o.progress = isatty(STDERR_FILENO) ? "on" : "off";
  return o;
}

uint64_t DataBytes(const BenchOptions& o) {
  return static_cast<uint64_t>(static_cast<double>(o.records) *
                               (8.0 + (o.value_min + o.value_max) / 2.0));
}

uint64_t CacheBytes(const BenchOptions& o) {
  uint64_t bytes = 64ull << 20;
  if (o.cache_bytes) bytes = *o.cache_bytes;
  if (o.cache_fraction)
    bytes = static_cast<uint64_t>(static_cast<double>(DataBytes(o)) * *o.cache_fraction);
  bytes = bytes / 4096 * 4096;
  return std::max<uint64_t>(bytes, 1ull << 20);
}

}  // namespace grove::bench
