#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "trace/trace_file.h"
#include "util/coding.h"
#include "util/crc32c.h"

namespace grove::trace {

StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return Status::FromErrno(errno, "opening trace file " + path);
  char h[kHeaderBytes];
  const size_t got = std::fread(h, 1, kHeaderBytes, f.get());
  if (got < sizeof(kMagic) || std::memcmp(h, kMagic, sizeof(kMagic)) != 0) {
    return Status::InvalidArgument(path + " is not a Grove trace (no GRVTRACE magic)");
  }
  if (got < kHeaderBytes) return Status::DataLoss(path + ": the trace header is cut short");
  if (crc32c::Unmask(DecodeFixed32(h + 28)) != crc32c::Value(h, 28)) {
    return Status::DataLoss(path + ": the trace header's checksum does not match");
  }
  Header header;
  header.version = DecodeFixed16(h + 8);
  if (header.version != kVersion) {
    return Status::InvalidArgument(path + ": trace format version " +
                                   std::to_string(header.version) + "; this build reads version " +
                                   std::to_string(kVersion));
  }
  header.flags = DecodeFixed16(h + 10);
  if ((header.flags & ~header_flags::kKnown) != 0) {
    return Status::InvalidArgument(path + ": trace flags this build does not know");
  }
  header.sample_ppm = DecodeFixed32(h + 12);
  if (header.sample_ppm == 0 || header.sample_ppm > 1'000'000) {
    return Status::DataLoss(path + ": the trace header's sample is out of range");
  }
  header.start_unix_micros = DecodeFixed64(h + 16);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::Unavailable("reading the size of " + path + ": " + ec.message());
  std::unique_ptr<TraceReader> r(new TraceReader(std::move(f), path, header));
  r->file_bytes_ = size;
  if (header.flags & header_flags::kKeySketch) {
    GROVE_ASSIGN_OR_RETURN(bool read, r->LoadBlock(/*sketch=*/true));
    if (!read) return Status::DataLoss(path + ": the key sketch after the header is cut short");
    if (Status s = DecodeKeySketch(r->block_, &r->sketch_); !s.ok()) {
      return Status::DataLoss(path + ": " + std::string(s.message()));
    }
    r->pos_ = r->block_.size();  // no records in it
  }
  return r;
}

TraceReader::TraceReader(File f, std::string path, Header header)
    : file_(std::move(f)), path_(std::move(path)), header_(header) {}

StatusOr<bool> TraceReader::LoadBlock(bool sketch) {
  char h[kBlockHeaderBytes];
  const size_t got = std::fread(h, 1, sizeof(h), file_.get());
  if (got == 0 && std::feof(file_.get())) return false;
  if (got < sizeof(h)) {
    if (std::ferror(file_.get())) return Status::FromErrno(errno, "reading " + path_);
    truncated_ = true;
    return false;
  }
  const uint32_t bytes = DecodeFixed32(h);
  const uint32_t records = DecodeFixed32(h + 4);
  const std::string where = path_ + ": block at offset " + std::to_string(offset_);
  if (bytes == 0 || bytes > kMaxBlockBytes || (records == 0) != sketch || records > bytes) {
    return Status::DataLoss(where + " has an impossible size (" + std::to_string(bytes) +
                            " bytes, " + std::to_string(records) + " records)");
  }
  if (offset_ + sizeof(h) + bytes > file_bytes_) {
    truncated_ = true;  // the file ends inside the payload: nothing to allocate for
    return false;
  }
  block_.resize(bytes);
  if (std::fread(block_.data(), 1, bytes, file_.get()) < bytes) {
    if (std::ferror(file_.get())) return Status::FromErrno(errno, "reading " + path_);
    truncated_ = true;
    return false;
  }
  if (crc32c::Unmask(DecodeFixed32(h + 8)) != crc32c::Value(block_.data(), bytes)) {
    return Status::DataLoss(where + ": checksum mismatch");
  }
  block_offset_ = offset_;
  offset_ += sizeof(h) + bytes;
  pos_ = 0;
  left_ = records;
  return true;
}

StatusOr<bool> TraceReader::Next(Record* r) {
  if (!error_.ok()) return error_;
  if (ended_) return false;
  const auto bad = [&](const std::string& what) {
    error_ = Status::DataLoss(path_ + ": block at offset " + std::to_string(block_offset_) + ": " +
                              what);
    return error_;
  };
  if (left_ == 0) {
    if (pos_ != block_.size()) return bad("bytes past its last record");
    StatusOr<bool> more = LoadBlock();
    if (!more.ok()) {
      error_ = more.status();
      return error_;
    }
    if (!*more) {
      ended_ = true;
      return false;
    }
  }
  Slice in(block_.data() + pos_, block_.size() - pos_);
  uint64_t delta = 0;
  uint32_t entries = 0;
  if (!GetVarint64(&in, &delta) || in.size() < 3) return bad("a record is cut short");
  const uint8_t op = static_cast<uint8_t>(in.data()[0]);
  r->code = static_cast<uint8_t>(in.data()[1]);
  r->flags = static_cast<uint8_t>(in.data()[2]);
  in.remove_prefix(3);
  if (op == 0 || op > kMaxOp) return bad("a record has an unknown op");
  if ((r->flags & ~record_flags::kKnown) != 0) return bad("a record has unknown flags");
  r->op = static_cast<Op>(op);
  // An entry takes at least two bytes: a bound before anything is allocated for them.
  if (!GetVarint32(&in, &entries) || entries > in.size() / 2) {
    return bad("a record is cut short");
  }
  r->entries.resize(entries);
  for (Entry& e : r->entries) {
    Slice key;
    uint32_t value = 0;
    if (!GetLengthPrefixed(&in, &key) || !GetVarint32(&in, &value)) {
      return bad("a record is cut short");
    }
    e.key.assign(key.data(), key.size());
    e.has_value = value != 0;
    e.value_size = value == 0 ? 0 : value - 1;
  }
  if (!GetVarint64(&in, &r->arg) || !GetVarint64(&in, &r->result)) {
    return bad("a record is cut short");
  }
  last_micros_ += delta;
  r->micros = last_micros_;
  pos_ = block_.size() - in.size();
  --left_;
  return true;
}

}  // namespace grove::trace
