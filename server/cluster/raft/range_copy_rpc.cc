#include "cluster/raft/range_copy_rpc.h"

#include <fmt/format.h>

#include "util/coding.h"
#include "util/crc32c.h"

namespace grove::raft {

namespace {

grpc::StatusCode GrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kFailedPrecondition:
      return grpc::StatusCode::ABORTED;  // a copy is running: try again
    case StatusCode::kAborted:
      return grpc::StatusCode::CANCELLED;  // the receiver went away
    case StatusCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kDataLoss:
      return grpc::StatusCode::DATA_LOSS;
    default:
      return grpc::StatusCode::INTERNAL;
  }
}

// A failed copy RPC as seen by the installing replica: the source's refusals and the network's
// failures may pass, so they are UNAVAILABLE (the install is retried); damage stays DATA_LOSS.
Status FromGrpc(const grpc::Status& s, const std::string& address) {
  const std::string m = fmt::format("range copy from {}: {}", address, s.error_message());
  if (s.error_code() == grpc::StatusCode::DATA_LOSS) return Status::DataLoss(m);
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return Status::InvalidArgument(m);
  return Status::Unavailable(m);
}

}  // namespace

uint32_t ChunkChecksum(const grove::v1::CopyRangeChunk& chunk) {
  std::string buf;
  PutFixed64(&buf, chunk.sequence());
  uint32_t crc = crc32c::Value(buf.data(), buf.size());
  for (const grove::v1::CopiedEntry& e : chunk.entries()) {
    buf.clear();
    PutFixed32(&buf, static_cast<uint32_t>(e.key().size()));
    crc = crc32c::Extend(crc, buf.data(), buf.size());
    crc = crc32c::Extend(crc, e.key().data(), e.key().size());
    buf.clear();
    PutFixed32(&buf, static_cast<uint32_t>(e.value().size()));
    crc = crc32c::Extend(crc, buf.data(), buf.size());
    crc = crc32c::Extend(crc, e.value().data(), e.value().size());
    buf.clear();
    PutFixed64(&buf, e.expires_ms());
    PutFixed64(&buf, e.version());
    crc = crc32c::Extend(crc, buf.data(), buf.size());
  }
  buf.assign(1, chunk.done() ? '\1' : '\0');
  PutFixed64(&buf, chunk.cut_index());
  PutFixed64(&buf, chunk.total_entries());
  crc = crc32c::Extend(crc, buf.data(), buf.size());
  return crc32c::Mask(crc);
}

// --- the source's side ---

void ReplicationService::Add(const std::string& name, ReplicatedRange* range) {
  MutexLock lock(&mu_);
  ranges_[name].range = range;
}

void ReplicationService::Remove(const std::string& name) {
  MutexLock lock(&mu_);
  auto it = ranges_.find(name);
  if (it == ranges_.end()) return;
  it->second.range = nullptr;  // no new copy
  while (it->second.copies > 0) idle_.Wait();
  ranges_.erase(it);
}

grpc::Status ReplicationService::CopyRange(grpc::ServerContext* context,
                                           const grove::v1::CopyRangeRequest* request,
                                           grpc::ServerWriter<grove::v1::CopyRangeChunk>* writer) {
  ReplicatedRange* range = nullptr;
  {
    MutexLock lock(&mu_);
    auto it = ranges_.find(request->range());
    if (it != ranges_.end() && it->second.range != nullptr) {
      range = it->second.range;
      ++it->second.copies;
    }
  }
  if (range == nullptr) {
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        fmt::format("range: no replica of '{}' runs on this node", request->range()));
  }
  grove::v1::CopyRangeChunk chunk;
  uint64_t sequence = 0, total = 0;
  size_t bytes = 0;
  auto send = [&]() -> Status {
    chunk.set_sequence(sequence++);
    chunk.set_crc32c(ChunkChecksum(chunk));
    if (!writer->Write(chunk)) return Status::Aborted("range copy: the receiver went away");
    chunk.Clear();
    bytes = 0;
    return Status::Ok();
  };
  StatusOr<uint64_t> cut = range->CopyTo(request->at_least(), [&](const CopiedKey& e) -> Status {
    if (context->IsCancelled()) return Status::Aborted("range copy: the receiver went away");
    grove::v1::CopiedEntry* out = chunk.add_entries();
    out->set_key(e.key.data(), e.key.size());
    out->set_value(e.value.data(), e.value.size());
    out->set_expires_ms(e.expires_ms);
    out->set_version(e.version);
    ++total;
    bytes += e.key.size() + e.value.size() + 32;
    return bytes >= kChunkBytes ? send() : Status::Ok();
  });
  Status s = cut.status();
  if (s.ok()) {
    chunk.set_done(true);
    chunk.set_cut_index(*cut);
    chunk.set_total_entries(total);
    s = send();
  }
  {
    MutexLock lock(&mu_);
    if (--ranges_[request->range()].copies == 0) idle_.SignalAll();
  }
  if (!s.ok()) return grpc::Status(GrpcCode(s.code()), std::string(s.message()));
  return grpc::Status::OK;
}

// --- the installing replica's side ---

StatusOr<uint64_t> GrpcRangeSource::CopyRange(const std::string& name, uint64_t at_least,
                                              const RangeSink& sink) {
  if (!options_.address) return Status::InvalidArgument("range copy: no source address");
  GROVE_ASSIGN_OR_RETURN(const std::string address, options_.address());
  auto channel = grpc::CreateChannel(
      address, options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials());
  auto stub = grove::v1::Replication::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
  grove::v1::CopyRangeRequest request;
  request.set_range(name);
  request.set_at_least(at_least);
  std::unique_ptr<grpc::ClientReader<grove::v1::CopyRangeChunk>> reader =
      stub->CopyRange(&context, request);
  grove::v1::CopyRangeChunk chunk;
  uint64_t expected = 0, total = 0, cut = 0;
  bool done = false;
  std::string last_key;
  Status failed;
  while (failed.ok() && reader->Read(&chunk)) {
    if (done) {
      failed = Status::DataLoss(fmt::format("range copy from {}: a chunk after the last", address));
    } else if (chunk.sequence() != expected) {
      failed = Status::DataLoss(fmt::format("range copy from {}: chunk {} where {} was due",
                                            address, chunk.sequence(), expected));
    } else if (ChunkChecksum(chunk) != chunk.crc32c()) {
      failed = Status::DataLoss(
          fmt::format("range copy from {}: chunk {} fails its checksum", address, expected));
    }
    if (!failed.ok()) break;
    ++expected;
    for (const grove::v1::CopiedEntry& e : chunk.entries()) {
      if (total > 0 && e.key() <= last_key) {
        failed = Status::DataLoss(fmt::format("range copy from {}: keys out of order in chunk {}",
                                              address, expected - 1));
        break;
      }
      last_key = e.key();
      ++total;
      failed = sink({e.key(), e.value(), e.expires_ms(), e.version()});
      if (!failed.ok()) break;
    }
    if (failed.ok() && chunk.done()) {
      done = true;
      cut = chunk.cut_index();
      if (chunk.total_entries() != total) {
        failed = Status::DataLoss(fmt::format("range copy from {}: {} keys arrived of {}", address,
                                              total, chunk.total_entries()));
      }
    }
  }
  if (!failed.ok()) {
    context.TryCancel();
    reader->Finish().ok();  // the stream is abandoned; its status says nothing more
    return failed;
  }
  const grpc::Status finished = reader->Finish();
  if (!finished.ok()) return FromGrpc(finished, address);
  if (!done) {
    return Status::Unavailable(
        fmt::format("range copy from {}: the stream ended before the copy was complete", address));
  }
  return cut;
}

}  // namespace grove::raft
