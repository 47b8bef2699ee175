#pragma once

// A range copy over the network: the Replication service hands a replica's consistent copy of a
// range (ReplicatedRange::CopyTo) to whoever asks, streamed in checksummed chunks; GrpcRangeSource
// is the RangeSource of a replica that installs a range from another node that way.
//
//   installing replica                          source replica (any that applied at_least)
//   GrpcRangeSource::CopyRange  --CopyRange(range, at_least)-->  ReplicationService
//     check sequence, checksum,  <--chunk 0, 1, ... (<= 1 MiB)--   CopyTo: cut, then the keys
//     key order; hand to sink    <--last chunk: done, cut index, count--
//
// A chunk is checked before any of its keys reaches the sink (docs/formats/range_copy.md): a
// damaged, missing, repeated or reordered chunk, keys out of order, or a stream that ends
// without its last chunk fail the copy (DATA_LOSS or UNAVAILABLE), and the installing replica
// starts its install over.
//
// Thread safety: ReplicationService's Add, Remove and the RPC from any threads (mu_ guards the
// ranges, a leaf lock); Remove waits for the copies of that range to end. GrpcRangeSource from
// any thread, one copy per call.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "grove/v1/replication.grpc.pb.h"

#include "cluster/raft/replicated_range.h"
#include "util/mutex.h"

namespace grove::raft {

// The masked CRC-32C a chunk carries: over its sequence, entries and closing fields.
uint32_t ChunkChecksum(const grove::v1::CopyRangeChunk& chunk);

class ReplicationService final : public grove::v1::Replication::Service {
 public:
  // Serves copies of `range` under `name` (the range's ReplicatedRangeOptions::name) until
  // Remove. `range` must outlive that.
  void Add(const std::string& name, ReplicatedRange* range) GROVE_EXCLUDES(mu_);
  // Stops serving `name`, after the copies of it under way end.
  void Remove(const std::string& name) GROVE_EXCLUDES(mu_);

  grpc::Status CopyRange(grpc::ServerContext* context, const grove::v1::CopyRangeRequest* request,
                         grpc::ServerWriter<grove::v1::CopyRangeChunk>* writer) override
      GROVE_EXCLUDES(mu_);

  static constexpr size_t kChunkBytes = 1 << 20;  // keys and values per chunk, about

 private:
  struct Served {
    ReplicatedRange* range = nullptr;
    int copies = 0;  // RPCs using it now
  };
  Mutex mu_;
  CondVar idle_{&mu_};
  std::map<std::string, Served> ranges_ GROVE_GUARDED_BY(mu_);
};

struct GrpcRangeSourceOptions {
  // The gRPC address (host:port) of the node to copy from; called at each copy, so that it may
  // name the leader of the moment. An error fails that copy.
  std::function<StatusOr<std::string>()> address;
  // Null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The longest one copy may take.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
};

class GrpcRangeSource final : public RangeSource {
 public:
  explicit GrpcRangeSource(GrpcRangeSourceOptions options) : options_(std::move(options)) {}
  StatusOr<uint64_t> CopyRange(const std::string& name, uint64_t at_least,
                               const RangeSink& sink) override;

 private:
  const GrpcRangeSourceOptions options_;
};

}  // namespace grove::raft
