#pragma once

// Trace files: the operations a groved served, sampled, for replay and for choosing an index
// variant (docs/formats/trace.md). A file is a header and then blocks of records, each block
// checksummed on its own, so that a reader finds damage and a file cut short by a crash still
// yields every whole block before the cut.
//
//   file    := header [sketch block] block*
//   header  := magic "GRVTRACE" (8) | version u16 (1) | flags u16 | sample_ppm u32
//              | start_unix_micros u64 | reserved u32 (0) | masked crc32c of bytes 0..27 u32
//   block   := payload_bytes u32 | records u32 | masked crc32c of the payload u32 | payload
//   sketch block := a block with records 0 whose payload is a key sketch (key_sketch.h)
//   record  := delta_micros varint64 (from the previous record; the first from the start)
//              | op u8 | code u8 | flags u8 | entries varint32
//              | entry* | arg varint64 | result varint64
//   entry   := key_bytes varint32 | key | value varint32 (0: no value; else value size + 1)
//
// Integers are little-endian. `flags` of the header: bit 0 the keys are hashed (key_hash.h);
// bit 1 a sketch block follows the header; other bits 0. `flags` of a record: bit 0 a precondition
// was given (kept as such: its kind in bits 1-2, 1 absent, 2 value equals, 3 version equals), bit 3
// a reverse scan; other bits 0. What entries, arg and result hold per op is in Op's comments.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grove/status.h"

#include "trace/key_sketch.h"

namespace grove::trace {

// An open stdio file, closed when it goes.
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

inline constexpr char kMagic[8] = {'G', 'R', 'V', 'T', 'R', 'A', 'C', 'E'};
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kBlockHeaderBytes = 12;
// A block is written once its payload reaches this, and on Flush and Close.
inline constexpr size_t kDefaultBlockBytes = 64 << 10;
// A reader refuses blocks larger than this (damage, not data).
inline constexpr size_t kMaxBlockBytes = 64 << 20;

enum class Op : uint8_t {
  kGet = 1,          // entries: the key; result: 1 found, 0 not
  kBatchGet = 2,     // entries: the keys; result: how many were found
  kPut = 3,          // entries: the key with its value size
  kDelete = 4,       // entries: the key
  kBatchInsert = 5,  // entries: each mutation (a put with its value size, a delete without)
  kDeleteRange = 6,  // entries: start, end (empty: to the last key); arg: limit; result: deleted
  kScan = 7,         // entries: start, end (empty: to the last key); arg: limit; result: returned
};
inline constexpr uint8_t kMaxOp = 7;
const char* OpName(Op op);

namespace record_flags {
inline constexpr uint8_t kPrecondition = 1 << 0;
inline constexpr uint8_t kPreconditionKindShift = 1;  // 2 bits: 1 absent, 2 value, 3 version
inline constexpr uint8_t kReverse = 1 << 3;
inline constexpr uint8_t kKnown = 0x0f;
}  // namespace record_flags

struct Entry {
  std::string key;
  bool has_value = false;   // a put: value_size counts
  uint32_t value_size = 0;  // bytes
  bool operator==(const Entry&) const = default;
};

struct Record {
  uint64_t micros = 0;  // since the trace's start
  Op op = Op::kGet;
  uint8_t code = 0;  // the gRPC status code the call ended with
  uint8_t flags = 0;
  std::vector<Entry> entries;
  uint64_t arg = 0;
  uint64_t result = 0;
  bool operator==(const Record&) const = default;
};

namespace header_flags {
inline constexpr uint16_t kKeysHashed = 1 << 0;  // keys went through a KeyHasher
inline constexpr uint16_t kKeySketch = 1 << 1;   // the traced database's key sketch follows
inline constexpr uint16_t kKnown = kKeysHashed | kKeySketch;
}  // namespace header_flags

struct Header {
  uint16_t version = kVersion;
  uint16_t flags = 0;               // header_flags
  uint32_t sample_ppm = 1'000'000;  // the sampled fraction, in millionths
  uint64_t start_unix_micros = 0;
};

// Writes one trace file. Not thread-safe: one writer, its caller serializes Add.
class TraceWriter {
 public:
  // Creates `path` (it must not exist) and writes the header, and `sketch` after it when given
  // (the header's kKeySketch flag says so; the caller's flag bit is ignored). Records that would
  // take the file past `max_bytes` are dropped (counted), never written in part.
  [[nodiscard]] static StatusOr<std::unique_ptr<TraceWriter>> Create(
      const std::string& path, const Header& header, uint64_t max_bytes,
      size_t block_bytes = kDefaultBlockBytes, const KeySketch* sketch = nullptr);
  ~TraceWriter();  // writes what is pending without reporting; call Close to see errors
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends `r` (its micros must not go back in time: an earlier one is taken as the last
  // record's). ResourceExhausted when the size cap dropped it; the writer goes on.
  [[nodiscard]] Status Add(const Record& r);
  // Writes the records added so far as a block and hands it to the file system.
  [[nodiscard]] Status Flush();
  // Flushes, syncs and closes.
  [[nodiscard]] Status Close();

  // A write failed: the writer takes no more records (Add returns the error).
  bool failed() const { return !failed_.ok(); }
  // Records taken (in the file or in the block still pending), and records not taken (the size
  // cap, or a write failure: a block that fails to write moves its records from written to
  // dropped, and every record offered after it is dropped).
  uint64_t records_written() const { return written_; }
  uint64_t records_dropped() const { return dropped_; }
  // Records in blocks handed to the file system: only grows (metrics count these).
  uint64_t records_flushed() const { return flushed_; }
  uint64_t bytes() const {
    return file_bytes_ + (pending_.empty() ? 0 : kBlockHeaderBytes) + pending_.size();
  }

 private:
  TraceWriter(File f, std::string path, uint64_t max_bytes, size_t block_bytes);
  [[nodiscard]] Status WriteBlock();
  File file_;
  const std::string path_;
  const uint64_t max_bytes_;
  const size_t block_bytes_;
  std::string pending_;  // the payload of the block being filled
  uint32_t pending_records_ = 0;
  uint64_t last_micros_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t written_ = 0, dropped_ = 0, flushed_ = 0;
  Status failed_;  // the first write error; later calls return it
};

// Reads a trace file from the start.
class TraceReader {
 public:
  // InvalidArgument for a file that is not a trace (or of a version this build does not read),
  // DataLoss for a damaged header.
  [[nodiscard]] static StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path);
  ~TraceReader() = default;
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const Header& header() const { return header_; }
  // The traced database's key sketch, or null when the trace has none.
  const KeySketch* sketch() const {
    return header_.flags & header_flags::kKeySketch ? &sketch_ : nullptr;
  }
  // The next record into *r: true, or false at the end. DataLoss (naming the block's offset)
  // for a block whose checksum or contents are wrong. A last block cut short ends the trace
  // (truncated() then says so): a crash while writing leaves that.
  [[nodiscard]] StatusOr<bool> Next(Record* r);
  bool truncated() const { return truncated_; }

 private:
  TraceReader(File f, std::string path, Header header);
  // Reads the next block; `sketch`: the one block of no records that a sketch is.
  [[nodiscard]] StatusOr<bool> LoadBlock(bool sketch = false);
  File file_;
  const std::string path_;
  const Header header_;
  KeySketch sketch_;
  uint64_t file_bytes_ = 0;  // the file's size when opened
  std::string block_;
  bool ended_ = false;  // the end, or a cut, was reached
  Status error_;        // damage found: every later Next returns it
  size_t pos_ = 0;
  uint32_t left_ = 0;               // records of block_ not read yet
  uint64_t offset_ = kHeaderBytes;  // of the next block
  uint64_t block_offset_ = 0;       // of block_
  uint64_t last_micros_ = 0;
  bool truncated_ = false;
};

}  // namespace grove::trace
