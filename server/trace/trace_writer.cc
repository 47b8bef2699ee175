#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "trace/trace_file.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace grove::trace {

const char* OpName(Op op) {
  switch (op) {
    case Op::kGet:
      return "Get";
    case Op::kBatchGet:
      return "BatchGet";
    case Op::kPut:
      return "Put";
    case Op::kDelete:
      return "Delete";
    case Op::kBatchInsert:
      return "BatchInsert";
    case Op::kDeleteRange:
      return "DeleteRange";
    case Op::kScan:
      return "Scan";
  }
  return "unknown";
}

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                           const Header& header, uint64_t max_bytes,
                                                           size_t block_bytes,
                                                           const KeySketch* sketch) {
  if (max_bytes < kHeaderBytes) {
    return Status::InvalidArgument("trace size cap " + std::to_string(max_bytes) +
                                   " is smaller than the header (" + std::to_string(kHeaderBytes) +
                                   " bytes)");
  }
  if (block_bytes == 0 || block_bytes > kMaxBlockBytes) {
    return Status::InvalidArgument("trace block size must be 1.." + std::to_string(kMaxBlockBytes) +
                                   " bytes");
  }
  if (header.sample_ppm == 0 || header.sample_ppm > 1'000'000) {
    return Status::InvalidArgument("trace sample must be in (0, 1] (" +
                                   std::to_string(header.sample_ppm) + " ppm)");
  }
  // O_EXCL: a trace never overwrites another.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    return Status::AlreadyExists("trace file " + path + " exists (a trace is never overwritten)");
  }
  if (fd < 0) return Status::FromErrno(errno, "creating trace file " + path);
  File f(::fdopen(fd, "wb"));
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());  // the name stays free for another try
    return Status::FromErrno(err, "opening trace file " + path);
  }
  // Unbuffered: records are batched into blocks here, and each block goes out in one write, so a
  // write that fails is the block that failed (a stdio buffer would fail later blocks' bytes
  // along with a newer one).
  std::setvbuf(f.get(), nullptr, _IONBF, 0);
  char h[kHeaderBytes] = {};
  std::memcpy(h, kMagic, sizeof(kMagic));
  EncodeFixed16(h + 8, kVersion);
  const uint16_t flags = static_cast<uint16_t>((header.flags & ~header_flags::kKeySketch) |
                                               (sketch ? header_flags::kKeySketch : 0));
  EncodeFixed16(h + 10, flags);
  EncodeFixed32(h + 12, header.sample_ppm);
  EncodeFixed64(h + 16, header.start_unix_micros);
  EncodeFixed32(h + 24, 0);
  EncodeFixed32(h + 28, crc32c::Mask(crc32c::Value(h, 28)));
  if (std::fwrite(h, 1, kHeaderBytes, f.get()) != kHeaderBytes) {
    const int err = errno;
    f.reset();
    ::unlink(path.c_str());
    return Status::FromErrno(err, "writing trace file " + path);
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(std::move(f), path, max_bytes, block_bytes));
  w->file_bytes_ = kHeaderBytes;
  if (sketch != nullptr) {
    std::string payload;
    EncodeKeySketch(*sketch, &payload);
    if (payload.size() > kMaxBlockBytes ||
        kHeaderBytes + kBlockHeaderBytes + payload.size() > max_bytes) {
      w.reset();
      ::unlink(path.c_str());
      return Status::InvalidArgument("the key sketch (" + std::to_string(payload.size()) +
                                     " bytes) does not fit the trace's size cap");
    }
    w->pending_ = std::move(payload);
    w->pending_records_ = 0;
    Status s = w->WriteBlock();
    if (!s.ok()) {
      w.reset();
      ::unlink(path.c_str());
      return s;
    }
  }
  return w;
}

TraceWriter::TraceWriter(File f, std::string path, uint64_t max_bytes, size_t block_bytes)
    : file_(std::move(f)),
      path_(std::move(path)),
      max_bytes_(max_bytes),
      block_bytes_(block_bytes) {}

TraceWriter::~TraceWriter() {
  if (file_ != nullptr) (void)Flush();
}

Status TraceWriter::Add(const Record& r) {
  if (!failed_.ok()) {
    ++dropped_;
    return failed_;
  }
  if (static_cast<uint8_t>(r.op) == 0 || static_cast<uint8_t>(r.op) > kMaxOp ||
      (r.flags & ~record_flags::kKnown) != 0) {
    return Status::InvalidArgument("trace record with an unknown op or flags");
  }
  const uint64_t micros = std::max(r.micros, last_micros_);
  std::string rec;
  PutVarint64(&rec, micros - last_micros_);
  rec.push_back(static_cast<char>(r.op));
  rec.push_back(static_cast<char>(r.code));
  rec.push_back(static_cast<char>(r.flags));
  PutVarint32(&rec, static_cast<uint32_t>(r.entries.size()));
  for (const Entry& e : r.entries) {
    PutLengthPrefixed(&rec, e.key);
    PutVarint32(&rec, e.has_value ? e.value_size + 1 : 0);
  }
  PutVarint64(&rec, r.arg);
  PutVarint64(&rec, r.result);
  // A record opens a new block when none is pending or when it would take the pending one past
  // what a reader accepts; the cap counts that block's header.
  const bool new_block = pending_.empty() || pending_.size() + rec.size() > kMaxBlockBytes;
  const uint64_t after = bytes() + (new_block ? kBlockHeaderBytes : 0) + rec.size();
  if (after > max_bytes_ || rec.size() > kMaxBlockBytes) {
    ++dropped_;
    return Status::ResourceExhausted("trace file " + path_ + " reached its size cap of " +
                                     std::to_string(max_bytes_) + " bytes");
  }
  if (new_block) {
    if (Status s = WriteBlock(); !s.ok()) {
      ++dropped_;  // this record with the block before it
      return s;
    }
  }
  pending_ += rec;
  ++pending_records_;
  ++written_;
  last_micros_ = micros;
  if (pending_.size() >= block_bytes_) return WriteBlock();
  return Status::Ok();
}

Status TraceWriter::WriteBlock() {
  if (pending_.empty()) return Status::Ok();
  std::string block(kBlockHeaderBytes, '\0');
  EncodeFixed32(block.data(), static_cast<uint32_t>(pending_.size()));
  EncodeFixed32(block.data() + 4, pending_records_);
  EncodeFixed32(block.data() + 8, crc32c::Mask(crc32c::Value(pending_.data(), pending_.size())));
  block += pending_;
  if (std::fwrite(block.data(), 1, block.size(), file_.get()) != block.size()) {
    failed_ = Status::FromErrno(errno, "writing trace file " + path_);
    // Not in the file: the block's records are lost, not written.
    written_ -= pending_records_;
    dropped_ += pending_records_;
    pending_.clear();
    pending_records_ = 0;
    return failed_;
  }
  flushed_ += pending_records_;
  file_bytes_ += block.size();
  pending_.clear();
  pending_records_ = 0;
  return Status::Ok();
}

Status TraceWriter::Flush() {
  if (!failed_.ok()) return failed_;
  GROVE_RETURN_IF_ERROR(WriteBlock());
  if (std::fflush(file_.get()) != 0) {
    failed_ = Status::FromErrno(errno, "writing trace file " + path_);
  }
  return failed_;
}

Status TraceWriter::Close() {
  if (file_ == nullptr) return failed_;
  Status s = Flush();
  if (s.ok() && ::fsync(::fileno(file_.get())) != 0) {
    s = Status::FromErrno(errno, "syncing trace file " + path_);
  }
  if (std::fclose(file_.release()) != 0 && s.ok()) {
    s = Status::FromErrno(errno, "closing trace file " + path_);
  }
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

}  // namespace grove::trace
