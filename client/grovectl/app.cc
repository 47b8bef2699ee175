#include "grovectl/app.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "grove/client/client.h"

#include "grovectl/advise.h"
#include "grovectl/commands.h"
#include <CLI/CLI.hpp>

namespace grove::grovectl {
namespace {

const std::vector<std::string> kFormats = {"text", "hex", "base64", "u64"};

constexpr const char* kFooter = R"(
Keys and values are written as --key-format / --value-format: text (as is), hex, base64, or u64
(a decimal integer stored as 8 bytes big-endian, so numeric order is key order).
Exit status: 0 ok, 1 the call failed, 2 bad usage, 3 get found no such key, 4 cas did not hold.
The token can also come from --token-file or the GROVE_TOKEN environment variable (safer than
the command line, which other users can see); the address from GROVE_ADDR.)";

struct Globals {
  client::ClientOptions client;
  std::string token_file;
  double timeout_seconds = 10;
  std::string key_format = "text";
  std::string value_format = "text";
  std::string output = "text";
};

void AddGlobalOptions(CLI::App& app, Globals& g) {
  app.add_option("--addr", g.client.address,
                 "groved address host:port, or etcd://HOST:PORT[,...]/CLUSTER to route by key")
      ->envname("GROVE_ADDR")
      ->capture_default_str();
  app.add_option("--token", g.client.token, "Bearer token")->envname("GROVE_TOKEN");
  app.add_option("--token-file", g.token_file, "Read the bearer token from this file");
  app.add_flag("--tls", g.client.tls, "Connect with TLS");
  app.add_option("--ca", g.client.ca_file, "CA certificate (PEM) that signed the server's")
      ->check(CLI::ExistingFile);
  app.add_option("--cert", g.client.cert_file, "Client certificate (PEM), for mutual TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--key", g.client.key_file, "Client private key (PEM), for mutual TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--server-name", g.client.server_name,
                 "Name expected in the server certificate (default: the host of --addr)");
  // For cluster commands and etcd:// addresses.
  app.add_option("--etcd-ca", g.client.etcd_ca_file, "CA certificate of etcd (TLS to etcd)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-cert", g.client.etcd_cert_file, "Client certificate for etcd")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-key", g.client.etcd_key_file, "Client key for etcd")
      ->check(CLI::ExistingFile);
  app.add_option("--timeout", g.timeout_seconds, "Deadline of each attempt, in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--retries", g.client.max_attempts,
                 "Attempts when the server is unavailable (starting, draining, unreachable)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--key-format", g.key_format, "How keys are written")
      ->capture_default_str()
      ->check(CLI::IsMember(kFormats));
  app.add_option("--value-format", g.value_format, "How values are written")
      ->capture_default_str()
      ->check(CLI::IsMember(kFormats));
  app.add_option("-o,--output", g.output, "Output: text, or json (one object per line)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
}

}  // namespace

int RunGrovectl(int argc, const char* const* argv, std::istream& in, std::ostream& out,
                std::ostream& err) {
  CLI::App app{"grovectl: command-line client for groved (grove.v1.KV)", "grovectl"};
  app.footer(kFooter);
  // Global options may also follow the subcommand ("grovectl get k --addr ...").
  app.fallthrough();
  app.require_subcommand(1);
  Globals g;
  AddGlobalOptions(app, g);

  std::string key, value, value_file;
  CLI::App* get = app.add_subcommand("get", "Print the value of KEY (exit 3 when absent)");
  get->add_option("KEY", key, "The key")->required();

  CLI::App* put = app.add_subcommand("put", "Set KEY to VALUE");
  put->add_option("KEY", key, "The key")->required();
  CLI::Option* value_opt = put->add_option("VALUE", value, "The value");
  CLI::Option* file_opt =
      put->add_option("--value-file", value_file, "Read the value's bytes from a file (- = stdin)");
  value_opt->excludes(file_opt);
  std::string ttl_text;
  put->add_option("--ttl", ttl_text,
                  "Time to live: the key reads as absent this long after the put (500ms, 30s, "
                  "10m, 2h, 7d; a bare number is seconds)");

  CasArgs cas_args;
  CLI::App* cas = app.add_subcommand(
      "cas",
      "Compare-and-swap: set KEY to NEW only if it holds --expect, is at --expect-version, "
      "or (--expect-absent) does not exist; exit 4 when it did not hold");
  cas->add_option("KEY", cas_args.key, "The key")->required();
  cas->add_option("NEW", cas_args.new_value, "The new value")->required();
  CLI::Option* expect =
      cas->add_option("--expect", cas_args.expect_value, "The value KEY must hold");
  CLI::Option* expect_version =
      cas->add_option("--expect-version", cas_args.expect_version,
                      "The version KEY must be at (get -o json shows it)");
  CLI::Option* expect_absent =
      cas->add_flag("--expect-absent", cas_args.expect_absent, "KEY must not exist");
  expect->excludes(expect_version)->excludes(expect_absent);
  expect_version->excludes(expect_absent);

  CLI::App* del = app.add_subcommand("delete", "Delete KEY (succeeds when it is absent)");
  del->add_option("KEY", key, "The key")->required();

  DeleteRangeArgs range_args;
  bool all_keys = false;
  CLI::App* delete_range = app.add_subcommand(
      "delete-range",
      "Delete the keys of [--start, --end), in atomic calls of at most --limit keys each, until "
      "none is left (or after one call with --once)");
  delete_range->add_option("--start", range_args.start, "First key (inclusive)");
  delete_range->add_option("--end", range_args.end, "End key (exclusive)");
  delete_range->add_flag("--all-keys", all_keys,
                         "Without --start or --end: delete every key of the database");
  delete_range
      ->add_option("-n,--limit", range_args.limit,
                   "Keys per call (0: the server's limits.max_batch_entries)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  delete_range->add_flag("--once", range_args.once, "Make one call and print where to continue");

  ScanArgs scan_args;
  CLI::App* scan = app.add_subcommand("scan", "Print the entries of a key range, in key order");
  scan->add_option("--start", scan_args.start, "First key (inclusive); default: the smallest");
  scan->add_option("--end", scan_args.end, "End key (exclusive); default: past the largest");
  scan->add_option("-n,--limit", scan_args.limit, "At most this many entries (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  scan->add_flag("-r,--reverse", scan_args.reverse, "From the largest key down");
  scan->add_flag("--keys-only", scan_args.keys_only, "Print keys without values");
  scan->add_option("--page-size", scan_args.page_size,
                   "Entries per request (at most the server's limits.max_scan_limit)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000000u));

  LoadArgs load_args;
  CLI::App* load =
      app.add_subcommand("load", "Load key/value records from a CSV, TSV or JSONL file");
  load->add_option("FILE", load_args.file, "The file; - reads standard input")->required();
  load->add_option("--format", load_args.format,
                   "csv, tsv or jsonl (default: from the file name's extension)")
      ->check(CLI::IsMember({"csv", "tsv", "jsonl", "ndjson"}));
  load->add_flag("--header", load_args.header, "Skip the first record (a header line)");
  load->add_option("--batch-entries", load_args.batch_entries, "Records per BatchInsert")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  load->add_option("--batch-bytes", load_args.batch_bytes,
                   "Key and value bytes per BatchInsert (keep under limits.max_batch_bytes)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bool progress_on = false, progress_off = false;
  CLI::Option* on = load->add_flag("--progress", progress_on, "Show a progress bar");
  load->add_flag("--no-progress", progress_off, "Never show a progress bar")->excludes(on);

  BackupArgs backup_args;
  std::string backup_rate, backup_wait = "1h";
  CLI::App* backup = app.add_subcommand(
      "backup",
      "Back the database up while the server serves: a new directory NAME under the server's "
      "backup.dir (needs the admin role)");
  backup->add_option("NAME", backup_args.name,
                     "Directory name under backup.dir (default: backup-<UTC time>)");
  backup->add_option("--max-rate", backup_rate,
                     "Copy at most this many bytes per second, e.g. 50MiB (default: unlimited)");
  backup->add_option("--wait", backup_wait, "How long to wait for the copy (default 1h)");

  VerifyArgs verify_server_args;
  std::string verify_server_cache, verify_server_wait = "1h";
  CLI::App* verify = app.add_subcommand(
      "verify",
      "Check the database's structure on the server while it serves: a snapshot of its newest "
      "checkpoint, or the live state with --pause-writers (needs the admin role); exits 1 when "
      "it finds problems");
  verify->add_flag("--pause-writers", verify_server_args.pause_writers,
                   "Check the live state, holding every write until done");
  verify->add_option("--cache", verify_server_cache,
                     "The snapshot's cache on the server, on top of its cache_bytes (default: a "
                     "sixteenth of cache_bytes)");
  verify->add_option("--wait", verify_server_wait, "How long to wait for it (default 1h)");

  TraceArgs trace_args;
  std::string trace_duration = "0s";
  CLI::App* trace = app.add_subcommand(
      "trace",
      "Record a sample of the calls the server serves into a trace file under its trace.dir "
      "(needs the admin role)");
  trace->require_subcommand(1);
  CLI::App* trace_start = trace->add_subcommand("start", "Start a trace (one at a time)");
  trace_start->add_option("--sample", trace_args.sample,
                          "Fraction of calls recorded, in [0.000001, 1] (default 0.01)");
  trace_start->add_option("--duration", trace_duration,
                          "End the trace after this long, e.g. 10m (default: when stopped)");
  trace_start->add_option("--out", trace_args.name,
                          "File name under trace.dir, without .trace (default: trace-<UTC time>)");
  trace_start->add_flag("--hash-keys", trace_args.hash_keys,
                        "Write keys hashed: unreadable, their order and equality kept");
  CLI::App* trace_stop = trace->add_subcommand("stop", "End the running trace");
  trace->add_subcommand("status", "The running trace, or the last one");

  RestoreArgs restore_args;
  std::string restore_cache = "256MiB";
  CLI::App* restore = app.add_subcommand(
      "restore",
      "Restore BACKUP into a new data directory DATA_DIR, on this machine (no server involved): "
      "check its checksums, copy it, replay its log, verify it");
  restore->add_option("BACKUP", restore_args.backup_dir, "The backup directory")->required();
  restore->add_option("DATA_DIR", restore_args.data_dir, "The new data directory")->required();
  restore->add_option("--cache", restore_cache, "Cache for opening it (default 256MiB)");
  restore->add_flag("!--no-direct-io", restore_args.direct_io,
                    "Read without O_DIRECT (filesystems without it, e.g. tmpfs)");

  RestoreArgs verify_args;
  std::string verify_cache = "256MiB";
  CLI::App* verify_backup = app.add_subcommand(
      "verify-backup",
      "Check BACKUP on this machine: its files' checksums, then restore it into a scratch "
      "directory, open and verify it, and remove the scratch copy");
  verify_backup->add_option("BACKUP", verify_args.backup_dir, "The backup directory")->required();
  verify_backup->add_flag("--checksums-only", verify_args.checksums_only,
                          "Only check every file against its checksum (fast; no restore)");
  verify_backup->add_option("--scratch", verify_args.data_dir,
                            "A new directory for the scratch copy (default: under $TMPDIR)");
  verify_backup->add_option("--cache", verify_cache, "Cache for opening it (default 256MiB)");
  verify_backup->add_flag("!--no-direct-io", verify_args.direct_io,
                          "Read without O_DIRECT (filesystems without it, e.g. tmpfs)");

  CLI::App* stats = app.add_subcommand("stats", "Print engine, index and cache figures");

  bench::AdvisorOptions advise_opts;
  std::string advise_memory, advise_records = "1M", advise_scratch, advise_candidates;
  bool advise_progress = false, advise_no_progress = false;
  CLI::App* advise = app.add_subcommand(
      "advise",
      "Which index variant fits a traced workload: load the same data into every candidate at "
      "the same memory budget, replay the trace on each, rank them (on this machine; no server)");
  advise->add_option("--trace", advise_opts.trace, "A trace file (grovectl trace start)")
      ->required()
      ->check(CLI::ExistingFile);
  advise->add_option("--memory", advise_memory, "Memory budget of every candidate, e.g. 1GiB")
      ->required();
  advise
      ->add_option("--data", advise_opts.backup,
                   "Load the records of this backup (exact keys) instead of synthesising them")
      ->check(CLI::ExistingDirectory);
  advise->add_option("--records", advise_records,
                     "Records synthesised from the trace's key distribution (default 1M)");
  advise->add_option("--value-size", advise_opts.value_bytes,
                     "Bytes per synthesised value (default: the trace's mean put size)");
  advise->add_option("--threads", advise_opts.threads, "Replay threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  advise
      ->add_option("--loops", advise_opts.loops,
                   "Measured replays of the trace per candidate, at least")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  advise
      ->add_option("--warmup-seconds", advise_opts.warmup_seconds,
                   "An unmeasured replay first, this long or one pass (0: none), so that caches "
                   "and write buffers are in use")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  advise
      ->add_option("--min-seconds", advise_opts.min_seconds,
                   "Measured replays repeat, whole, until they have run about this long (needs "
                   "the warm-up's rate)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  advise
      ->add_option("--slices", advise_opts.slices,
                   "Measured replays in this many slices taken in turns with every candidate "
                   "open, so that a drifting device slows all alike (1: one after another)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  advise->add_option("--candidates", advise_candidates,
                     "Comma-separated embedded:<variant>[?param=value&...] targets (default: "
                     "btree, btree with SHORTCUT, hln, treeline, aulid, aha)");
  advise->add_option("--scratch", advise_scratch,
                     "Directory for the candidates' databases, on the disk the database will use "
                     "(default: grovectl-advise-<pid> under $TMPDIR)");
  advise->add_option("--wal-sync", advise_opts.wal_sync, "always, batch or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"always", "batch", "none"}));
  advise->add_flag("!--no-direct-io", advise_opts.direct_io,
                   "Read without O_DIRECT (filesystems without it, e.g. tmpfs)");
  CLI::Option* advise_on = advise->add_flag("--progress", advise_progress, "Show progress bars");
  advise->add_flag("--no-progress", advise_no_progress, "Never show progress bars")
      ->excludes(advise_on);

  ClusterArgs cluster_args;
  std::string etcd_list;
  CLI::App* cluster = app.add_subcommand(
      "cluster", "Cluster metadata in etcd (docs/cluster.md); talks to etcd, not to a groved");
  cluster->require_subcommand(1);
  cluster->add_option("--etcd", etcd_list, "etcd endpoints host:port, comma separated")
      ->envname("GROVE_ETCD")
      ->required();
  cluster->add_option("--cluster", cluster_args.cluster, "Cluster name")->capture_default_str();
  cluster->add_subcommand("status",
                          "The cluster's nodes (address, version, up or down) and its shard map");
  std::string init_owner;
  CLI::App* cluster_init = cluster->add_subcommand(
      "init", "Create the shard map: one range over every key, owned by one node");
  cluster_init->add_option("--owner", init_owner, "The node that owns every key")->required();
  std::vector<std::string> init_splits;
  cluster_init->add_option("--split", init_splits,
                           "KEY=NODE: a range from KEY to the next split owned by NODE "
                           "(repeatable; KEY in --key-format)");
  std::vector<std::string> init_nodes;
  uint32_t init_factor = 3;
  cluster_init
      ->add_option("--replicas", init_nodes,
                   "NODE,NODE,...: replicate every range by Raft over these nodes: each range on "
                   "its owner and the next nodes of the list (docs/cluster.md, \"Replicated "
                   "ranges\")")
      ->delimiter(',');
  cluster_init
      ->add_option("--replication-factor", init_factor, "Replicas per range with --replicas")
      ->capture_default_str();
  std::string split_key;
  uint64_t split_expect = 0;
  CLI::App* cluster_split = cluster->add_subcommand(
      "split", "Split the range holding KEY at KEY (no data moves; both halves keep the owner)");
  cluster_split->add_option("KEY", split_key, "First key of the new right-hand range")->required();
  cluster_split->add_option("--expect-version", split_expect,
                            "Refuse unless the map is at this version (default: any)");

  MoveArgs move_args;
  std::string move_start;
  CLI::App* cluster_move = cluster->add_subcommand(
      "move", "Move the range starting at RANGE to NODE while both serve (docs/cluster.md)");
  cluster_move
      ->add_option("RANGE", move_start,
                   "The range's first key (\"\" for the first range), in --key-format")
      ->required();
  cluster_move->add_option("NODE", move_args.node, "The node to move it to");
  cluster_move->add_flag("--abort", move_args.abort,
                         "End the range's move under way; its owner keeps it");
  cluster_move->add_option("--max-keys-per-second", move_args.max_keys_per_second,
                           "Pace of the copy (default: as fast as it goes)");
  cluster_move
      ->add_option("--batch", move_args.batch_keys, "Keys per write to the target (1..10000)")
      ->capture_default_str();
  cluster_move->add_option("--from", move_args.from,
                           "A replicated range: the node whose replica moves (default: the owner)");
  cluster_move
      ->add_option("--catch-up-timeout", move_args.catch_up_seconds,
                   "A replicated range: seconds the new replica may take to catch up")
      ->capture_default_str();

  // add-replica, remove-replica, transfer-leader: RANGE NODE each.
  ReplicaArgs replica_args;
  std::string replica_start;
  std::vector<CLI::App*> replica_commands;
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"add-replica",
            "Add a replica of the replicated range starting at RANGE on NODE: it catches up, then "
            "votes (docs/cluster.md)"},
           {"remove-replica",
            "Take NODE's replica out of the range's Raft group; NODE drops its copy"},
           {"transfer-leader", "Make NODE's replica the range's leader (and its owner)"}}) {
    CLI::App* c = cluster->add_subcommand(name, help);
    c->add_option("RANGE", replica_start,
                  "The range's first key (\"\" for the first range), in --key-format")
        ->required();
    c->add_option("NODE", replica_args.node, "The node")->required();
    if (name == "add-replica") {
      c->add_option("--catch-up-timeout", replica_args.catch_up_seconds,
                    "Seconds the new replica may take to catch up (a snapshot install included)")
          ->capture_default_str();
    }
    replica_commands.push_back(c);
  }

  std::string service;
  CLI::App* health =
      app.add_subcommand("health", "Print the server's health (exit 0 only when SERVING)");
  health->add_option("--service", service, "Service to check (default: the whole server)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (!g.token_file.empty()) {
    std::ifstream f(g.token_file);
    if (!f || !std::getline(f, g.client.token) || g.client.token.empty()) {
      err << "grovectl: --token-file: cannot read a token from '" << g.token_file << "'\n";
      return kExitUsage;
    }
    while (!g.client.token.empty() &&
           std::isspace(static_cast<unsigned char>(g.client.token.back()))) {
      g.client.token.pop_back();
    }
  }
  if (*cluster) {
    for (size_t start = 0; start <= etcd_list.size();) {
      const size_t comma = std::min(etcd_list.find(',', start), etcd_list.size());
      if (comma > start)
        cluster_args.etcd_endpoints.push_back(etcd_list.substr(start, comma - start));
      start = comma + 1;
    }
    cluster_args.timeout_seconds = g.timeout_seconds;
    cluster_args.etcd_ca_file = g.client.etcd_ca_file;
    cluster_args.etcd_cert_file = g.client.etcd_cert_file;
    cluster_args.etcd_key_file = g.client.etcd_key_file;
    const std::optional<client::Format> key_format = client::ParseFormat(g.key_format);
    if (!key_format) {
      err << "grovectl: --key-format: unknown format '" << g.key_format << "'\n";
      return kExitUsage;
    }
    if (*cluster_init) {
      std::vector<std::pair<std::string, std::string>> splits;
      for (const std::string& spec : init_splits) {
        const size_t eq = spec.rfind('=');
        std::string key, error;
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
          err << "grovectl: cluster init: --split: '" << spec << "' is not KEY=NODE\n";
          return kExitUsage;
        }
        if (!client::Decode(*key_format, spec.substr(0, eq), &key, &error)) {
          err << "grovectl: cluster init: --split: " << error << "\n";
          return kExitUsage;
        }
        splits.emplace_back(std::move(key), spec.substr(eq + 1));
      }
      if (init_nodes.empty() && cluster_init->count("--replication-factor") > 0) {
        err << "grovectl: cluster init: --replication-factor needs --replicas\n";
        return kExitUsage;
      }
      return RunClusterInit(cluster_args, init_owner, splits, init_nodes, init_factor, *key_format,
                            out, err);
    }
    if (*cluster_move) {
      if (!move_args.abort && move_args.node.empty()) {
        err << "grovectl: cluster move: NODE is required (or --abort)\n";
        return kExitUsage;
      }
      std::string error;
      if (!move_start.empty() &&
          !client::Decode(*key_format, move_start, &move_args.start, &error)) {
        err << "grovectl: cluster move: RANGE: " << error << "\n";
        return kExitUsage;
      }
      move_args.node_options = g.client;
      move_args.node_options.timeout =
          std::chrono::milliseconds(static_cast<int64_t>(g.timeout_seconds * 1000));
      return RunClusterMove(cluster_args, move_args, *key_format, out, err);
    }
    for (CLI::App* c : replica_commands) {
      if (!*c) continue;
      std::string error;
      if (!replica_start.empty() &&
          !client::Decode(*key_format, replica_start, &replica_args.start, &error)) {
        err << "grovectl: cluster " << c->get_name() << ": RANGE: " << error << "\n";
        return kExitUsage;
      }
      replica_args.command = c->get_name();
      return RunClusterReplicas(cluster_args, replica_args, *key_format, out, err);
    }
    if (*cluster_split) {
      std::string key, error;
      if (!client::Decode(*key_format, split_key, &key, &error)) {
        err << "grovectl: cluster split: KEY: " << error << "\n";
        return kExitUsage;
      }
      return RunClusterSplit(cluster_args, key, split_expect, *key_format, out, err);
    }
    return RunClusterStatus(cluster_args, g.output == "json" ? Output::kJson : Output::kText,
                            *key_format, out, err);
  }

  if (*advise) {
    std::string why;
    if (!ParseBytes(advise_memory, &advise_opts.memory_bytes, &why) ||
        advise_opts.memory_bytes < (1u << 20)) {
      err << "grovectl: advise: --memory: " << (why.empty() ? "at least 1MiB" : why) << "\n";
      return kExitUsage;
    }
    if (!ParseBytes(advise_records, &advise_opts.records, &why) || advise_opts.records == 0) {
      err << "grovectl: advise: --records: " << (why.empty() ? "at least 1" : why) << "\n";
      return kExitUsage;
    }
    if (advise_opts.value_bytes > (1u << 20)) {
      err << "grovectl: advise: --value-size: at most 1MiB\n";
      return kExitUsage;
    }
    for (size_t start = 0; start < advise_candidates.size();) {
      const size_t comma = std::min(advise_candidates.find(',', start), advise_candidates.size());
      if (comma > start) {
        advise_opts.candidates.push_back(advise_candidates.substr(start, comma - start));
      }
      start = comma + 1;
    }
    const char* tmp = std::getenv("TMPDIR");
    advise_opts.dir = !advise_scratch.empty() ? advise_scratch
                                              : std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                                                    "/grovectl-advise-" + std::to_string(getpid());
    advise_opts.progress =
        advise_progress || (!advise_no_progress && isatty(STDERR_FILENO) && &err == &std::cerr);
    return RunAdvise(advise_opts, g.output == "json" ? Output::kJson : Output::kText, out, err);
  }

  g.client.timeout = std::chrono::milliseconds(static_cast<int64_t>(g.timeout_seconds * 1000));
  std::unique_ptr<client::Client> client;
  if (grpc::Status s = client::Client::Create(g.client, &client); !s.ok()) {
    err << "grovectl: " << s.error_message() << "\n";
    return kExitUsage;
  }

  Context ctx;
  ctx.client = client.get();
  ctx.key_format = *client::ParseFormat(g.key_format);
  ctx.value_format = *client::ParseFormat(g.value_format);
  ctx.output = g.output == "json" ? Output::kJson : Output::kText;
  ctx.in = &in;
  ctx.out = &out;
  ctx.err = &err;

  if (*get) return RunGet(ctx, key);
  if (*put) {
    if (value_opt->count() == 0 && value_file.empty()) {
      err << "grovectl: put: give VALUE or --value-file\n";
      return kExitUsage;
    }
    std::chrono::milliseconds ttl{0};
    std::string why;
    if (!ttl_text.empty() && !ParseDuration(ttl_text, &ttl, &why)) {
      err << "grovectl: put: --ttl: " << why << "\n";
      return kExitUsage;
    }
    if (!ttl_text.empty() && ttl.count() == 0) {
      err << "grovectl: put: --ttl: must be at least 1ms\n";
      return kExitUsage;
    }
    return RunPut(ctx, key, value, value_file, ttl);
  }
  if (*delete_range) {
    if (range_args.start.empty() && range_args.end.empty() && !all_keys) {
      err << "grovectl: delete-range: give --start and/or --end (or --all-keys to delete "
             "everything)\n";
      return kExitUsage;
    }
    return RunDeleteRange(ctx, range_args);
  }
  if (*del) return RunDelete(ctx, key);
  if (*cas) {
    cas_args.has_expect_value = expect->count() > 0;
    cas_args.has_expect_version = expect_version->count() > 0;
    if (!cas_args.has_expect_value && !cas_args.has_expect_version && !cas_args.expect_absent) {
      err << "grovectl: cas: give --expect VALUE, --expect-version N or --expect-absent\n";
      return kExitUsage;
    }
    return RunCas(ctx, cas_args);
  }
  if (*scan) return RunScan(ctx, scan_args);
  if (*load) {
    load_args.progress = progress_on ? 1 : progress_off ? 0 : -1;
    return RunLoad(ctx, load_args);
  }
  if (*trace) {
    if (*trace_start) {
      trace_args.action = TraceArgs::Action::kStart;
      std::chrono::milliseconds d{0};
      std::string why;
      if (!ParseDuration(trace_duration, &d, &why)) {
        err << "grovectl: trace start: --duration: " << why << "\n";
        return kExitUsage;
      }
      if (!(trace_args.sample >= 1e-6 && trace_args.sample <= 1)) {
        err << "grovectl: trace start: --sample: must be in [0.000001, 1]\n";
        return kExitUsage;
      }
      trace_args.duration_seconds = d.count() / 1000.0;
    } else if (*trace_stop) {
      trace_args.action = TraceArgs::Action::kStop;
    }
    return RunTrace(ctx, trace_args);
  }
  if (*backup) {
    std::string why;
    if (!backup_rate.empty() && !ParseBytes(backup_rate, &backup_args.max_bytes_per_second, &why)) {
      err << "grovectl: backup: --max-rate: " << why << "\n";
      return kExitUsage;
    }
    std::chrono::milliseconds wait{0};
    if (!ParseDuration(backup_wait, &wait, &why) || wait.count() < 1000) {
      err << "grovectl: backup: --wait: " << (why.empty() ? "at least 1s" : why) << "\n";
      return kExitUsage;
    }
    backup_args.wait = std::chrono::duration_cast<std::chrono::seconds>(wait);
    return RunBackup(ctx, backup_args);
  }
  if (*verify) {
    std::string why;
    if (!verify_server_cache.empty() &&
        (!ParseBytes(verify_server_cache, &verify_server_args.cache_bytes, &why) ||
         verify_server_args.cache_bytes < (1u << 20))) {
      err << "grovectl: verify: --cache: " << (why.empty() ? "at least 1MiB" : why) << "\n";
      return kExitUsage;
    }
    std::chrono::milliseconds wait{0};
    if (!ParseDuration(verify_server_wait, &wait, &why) || wait.count() < 1000) {
      err << "grovectl: verify: --wait: " << (why.empty() ? "at least 1s" : why) << "\n";
      return kExitUsage;
    }
    verify_server_args.wait = std::chrono::duration_cast<std::chrono::seconds>(wait);
    return RunVerify(ctx, verify_server_args);
  }
  if (*restore || *verify_backup) {
    RestoreArgs& a = *restore ? restore_args : verify_args;
    std::string why;
    if (!ParseBytes(*restore ? restore_cache : verify_cache, &a.cache_bytes, &why) ||
        a.cache_bytes < (1u << 20)) {
      err << "grovectl: --cache: " << (why.empty() ? "at least 1MiB" : why) << "\n";
      return kExitUsage;
    }
    return *restore ? RunRestore(ctx, a) : RunVerifyBackup(ctx, a);
  }
  if (*stats) return RunStats(ctx);
  if (*health) return RunHealth(ctx, service);
  return kExitUsage;
}

}  // namespace grove::grovectl
