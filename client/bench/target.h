#pragma once

// Target: what grove-bench drives. Every system under test is one implementation, so a run
// compares them on exactly the same operation stream.
//
//   embedded:<variant>[?param=value&...]   the engine in-process (grove::Db); params go to the
//                                          variant (IndexOptions::params)
//   rocksdb[?param=value&...]              RocksDB with the same memory budget (rocksdb_target.cc)
//   device[?file_bytes=SIZE]               one random 4 KiB read per operation on a file, through
//                                          the same IoBackend: the physical ceiling
//   grpc://host:port                       groved through the client library
//   grpc-noop://host:port                  a grpc.health.v1 Check per operation: the RPC stack's
//                                          ceiling (the KV service has no no-op call)
//
// Thread safety: a Target is shared by all worker threads; each thread makes its own Session.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grove/slice.h"
#include "grove/status.h"

namespace grove::bench {

// Settings shared by every target; each uses what applies to it.
struct TargetOptions {
  std::string dir;           // data directory (embedded, rocksdb, device)
  uint64_t cache_bytes = 0;  // memory budget
  bool direct_io = true;
  std::string io_backend = "auto";  // auto | uring | psync
  uint32_t queue_depth = 128;
  std::string wal_sync = "always";  // always | batch | none
  uint32_t wal_batch_us = 1000;
  uint64_t device_file_bytes = 0;  // device: file size when the URI does not say
  std::string grpc_token;
  uint32_t grpc_timeout_ms = 10000;
  // stream: every worker's calls share one client whose Batch streams carry them; unary: one
  // client (channel) per worker, one RPC per call.
  std::string grpc_transport = "stream";
  uint32_t grpc_streams = 1;
  uint32_t grpc_stream_messages = 2;                        // request messages in flight per stream
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;  // etcd:// targets: TLS to etcd
};

// Counters are cumulative (the report shows deltas over the measured interval); gauges are
// current values. Names shared by all targets so reports can compare them:
//   page_reads, page_writes          4 KiB pages (RocksDB: blocks read / bytes written by flush and
//                                    compaction / 4096; see rocksdb_target.cc)
//   cache_hits, cache_misses
//   device_read_bytes, device_write_bytes   bytes the process moved to/from the block layer
//                                    (/proc/self/io), the same meter for every in-process target
//   index_inner_bytes, index_model_bytes, index_height, ...   (gauges)
struct TargetStats {
  std::map<std::string, double> counters;
  std::map<std::string, double> gauges;
};

// A counter's change from `before` to `after` (NaN when `after` lacks it); a gauge's value (NaN
// when absent).
double CounterDelta(const TargetStats& before, const TargetStats& after, const std::string& name);
double GaugeValue(const TargetStats& s, const std::string& name);

// One thread's connection to the target.
class Session {
 public:
  virtual ~Session() = default;
  // Point lookup: *found says whether the key exists; *value receives it.
  virtual Status Read(Slice key, std::string* value, bool* found) = 0;
  // Insert or overwrite.
  virtual Status Write(Slice key, Slice value) = 0;
  // Up to `limit` entries from `start` (inclusive) in key order, stopping before `end` when `end`
  // is not empty. *entries is how many were visited.
  virtual Status Scan(Slice start, Slice end, uint32_t limit, uint64_t* entries) = 0;
  // Several writes at once (LOAD with --load-method batch): atomic where the target supports it.
  virtual Status WriteBatch(const std::vector<std::pair<std::string, std::string>>& entries);

  // The calls below serve trace replays (replay.h) and delete mixes; a target without one
  // answers Unimplemented.
  // Removes the key (OK when it is absent).
  virtual Status Delete(Slice key);
  // Looks every key up at once; *found counts the present ones.
  virtual Status BatchRead(const std::vector<std::string>& keys, uint64_t* found);
  struct Mutation {
    std::string key;
    std::string value;
    bool is_delete = false;
  };
  // Puts and deletes applied as one (atomic where the target supports it).
  virtual Status WriteMutations(const std::vector<Mutation>& mutations);
  // Removes up to `limit` keys (0: the target's most per call) of [start, end) (end empty: to
  // the last key); *deleted counts them.
  virtual Status DeleteRange(Slice start, Slice end, uint64_t limit, uint64_t* deleted);
  // Scan from the last key of [start, end) down (end empty: from the largest key).
  virtual Status ReverseScan(Slice start, Slice end, uint32_t limit, uint64_t* entries);
};

// Produces sorted, unique pairs for BulkLoad: returns false at the end.
using BulkSource = std::function<bool(std::string* key, std::string* value)>;

class Target {
 public:
  virtual ~Target() = default;
  // The canonical URI, e.g. "embedded:btree?fill_factor=0.9".
  virtual std::string Uri() const = 0;
  // The settings in effect, for the report (cache split, bloom bits, backend, ...).
  virtual std::map<std::string, std::string> Config() const = 0;
  // Empties the target before a LOAD (deletes its data; remote targets refuse when not empty).
  virtual Status Reset() = 0;
  virtual StatusOr<std::unique_ptr<Session>> NewSession() = 0;
  // Loads sorted pairs into an empty target the fastest way the target has.
  virtual Status BulkLoad(const BulkSource& source);
  // Makes everything written so far durable and settled (a checkpoint, a memtable flush and
  // compactions) so that a measurement after a load does not pay for the load's backlog.
  virtual Status Settle() { return Status::Ok(); }
  virtual StatusOr<TargetStats> Stats() = 0;
  virtual Status Close() = 0;
};

// Parses the URI and opens the target.
StatusOr<std::unique_ptr<Target>> OpenTarget(const std::string& uri, const TargetOptions& options);

// A URI split into scheme ("embedded", "rocksdb", "device", "grpc", "grpc-noop"), the part after
// ':' or '://' up to '?', and the parameters.
struct TargetUri {
  std::string scheme;
  std::string body;
  std::map<std::string, std::string> params;
};
StatusOr<TargetUri> ParseTargetUri(const std::string& uri);

// Target factories (one file each).
StatusOr<std::unique_ptr<Target>> OpenEmbeddedTarget(const TargetUri& uri, const TargetOptions& o);
StatusOr<std::unique_ptr<Target>> OpenRocksDbTarget(const TargetUri& uri, const TargetOptions& o);
StatusOr<std::unique_ptr<Target>> OpenDeviceTarget(const TargetUri& uri, const TargetOptions& o);
StatusOr<std::unique_ptr<Target>> OpenGrpcTarget(const TargetUri& uri, const TargetOptions& o,
                                                 bool noop);

}  // namespace grove::bench
