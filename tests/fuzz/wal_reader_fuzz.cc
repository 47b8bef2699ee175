// libFuzzer target: the WAL reader and the batch decoder behind it (docs/reliability.md,
// "Fuzzing"). The input is a whole segment file, read through an in-memory File.
//
// Checks, beyond "no crash, no UB": the reader terminates; every record it returns lies inside
// the file, after the previous one; every record it returns passed its checksums, so it carries
// an 8-byte LSN and a payload, and WriteBatch::Decode() either accepts the payload or says
// DATA_LOSS; the end of the file is reported at the file size.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "grove/io_backend.h"
#include "grove/write_batch.h"

#include "wal/log_format.h"
#include "wal/log_reader.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

class MemoryFile final : public grove::File {
 public:
  explicit MemoryFile(std::string bytes) : bytes_(std::move(bytes)) {}
  const std::string& path() const override { return path_; }
  grove::Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override {
    *bytes_read = 0;
    if (offset >= bytes_.size()) return grove::Status::Ok();
    *bytes_read = std::min<size_t>(n, bytes_.size() - offset);
    std::memcpy(buf, bytes_.data() + offset, *bytes_read);
    return grove::Status::Ok();
  }
  grove::Status Write(uint64_t, grove::Slice) override { return Unsupported(); }
  grove::Status Sync() override { return Unsupported(); }
  grove::Status Truncate(uint64_t) override { return Unsupported(); }
  grove::Status Allocate(uint64_t, uint64_t) override { return Unsupported(); }
  grove::StatusOr<uint64_t> Size() override { return uint64_t{bytes_.size()}; }
  int fd() const override { return -1; }

 private:
  static grove::Status Unsupported() { return grove::Status::Internal("read-only"); }
  const std::string path_ = "fuzz-segment";
  std::string bytes_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using grove::wal::LogReader;
  MemoryFile file(std::string(reinterpret_cast<const char*>(data), size));
  LogReader reader(&file);
  uint64_t last_end = 0;
  // Each call consumes at least one header or skips to the next block: bounded by the size.
  const size_t bound = size / grove::wal::kHeaderSize + size / grove::wal::kBlockSize + 8;
  for (size_t i = 0; i < bound; ++i) {
    LogReader::Result r;
    Check(reader.Next(&r).ok());
    if (r.kind == LogReader::Kind::kEof) {
      Check(r.offset == size);
      return 0;
    }
    if (r.kind != LogReader::Kind::kRecord) continue;
    Check(r.offset >= last_end && r.end > r.offset && r.end <= size);
    last_end = r.end;
    if (r.record.size() < grove::wal::kLsnSize) continue;
    const grove::Slice payload(r.record.data() + grove::wal::kLsnSize,
                               r.record.size() - grove::wal::kLsnSize);
    auto batch = grove::WriteBatch::Decode(payload);
    Check(batch.ok() || batch.status().code() == grove::StatusCode::kDataLoss);
    if (batch.ok()) {
      uint32_t n = 0;
      batch
          ->ForEach([&](grove::WriteBatch::OpType, grove::Slice, grove::Slice) {
            ++n;
            return grove::Status::Ok();
          })
          .IgnoreError();
      Check(n == batch->Count());
    }
  }
  __builtin_trap();  // the reader did not reach the end of the file
}
