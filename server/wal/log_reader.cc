#include "wal/log_reader.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/coding.h"
#include "util/crc32c.h"
#include "wal/log_format.h"

namespace grove::wal {

LogReader::LogReader(File* file) : file_(file), block_(kBlockSize, '\0') {}

Status LogReader::LoadBlock(uint64_t offset) {
  size_t n = 0;
  GROVE_RETURN_IF_ERROR(file_->Read(offset, kBlockSize, block_.data(), &n));
  block_start_ = offset;
  block_len_ = n;
  pos_ = 0;
  loaded_ = true;
  for (size_t i = n; i > 0; --i) {
    if (block_[i - 1] != '\0') {
      data_end_ = std::max<uint64_t>(data_end_, offset + i);
      break;
    }
  }
  return Status::Ok();
}

void LogReader::SkipBlock() {
  pos_ = block_len_;
  assembling_ = false;
  record_.clear();
  resync_ = true;
}

void LogReader::Bad(uint64_t physical_offset, const std::string& what, Result* result) {
  result->kind = Kind::kBad;
  result->offset = assembling_ ? record_offset_ : physical_offset;
  result->reason = fmt::format("{} at offset {}", what, physical_offset);
  SkipBlock();
}

Status LogReader::Next(Result* result) {
  result->record = Slice();
  result->reason.clear();
  if (!loaded_) GROVE_RETURN_IF_ERROR(LoadBlock(0));

  while (true) {
    const size_t left = block_len_ - pos_;
    if (left < kHeaderSize) {
      if (block_len_ == kBlockSize) {
        // A full block: whatever is left is the zero-filled tail. Move on.
        GROVE_RETURN_IF_ERROR(LoadBlock(block_start_ + kBlockSize));
        continue;
      }
      // The file's last block. Bytes that cannot hold a header are harmless only if zero.
      const uint64_t here = block_start_ + pos_;
      bool zeros = true;
      for (size_t i = pos_; i < block_len_; ++i) zeros = zeros && block_[i] == '\0';
      if (!zeros || assembling_) {
        Bad(here,
            zeros ? "record cut off by the end of the file"
                  : "header cut off by the end of the file",
            result);
        return Status::Ok();
      }
      pos_ = block_len_;
      result->kind = Kind::kEof;
      result->offset = block_start_ + block_len_;
      return Status::Ok();
    }

    const char* header = block_.data() + pos_;
    const uint64_t phys = block_start_ + pos_;
    const uint32_t stored_crc = DecodeFixed32(header);
    const uint32_t length = DecodeFixed16(header + 4);
    const uint8_t type = static_cast<uint8_t>(header[6]);

    if (type == kZeroType && length == 0 && stored_crc == 0) {
      if (assembling_) {
        Bad(phys, "fragmented record interrupted by zeros", result);
        return Status::Ok();
      }
      result->kind = Kind::kZeros;
      result->offset = phys;
      SkipBlock();
      return Status::Ok();
    }
    if (type == kZeroType || type > kMaxRecordType) {
      Bad(phys, fmt::format("unknown record type {}", type), result);
      return Status::Ok();
    }
    if (kHeaderSize + length > left) {
      const bool cut = block_len_ < kBlockSize && pos_ + kHeaderSize + length <= kBlockSize;
      Bad(phys,
          cut ? std::string("record cut off by the end of the file")
              : fmt::format("length {} overruns its block", length),
          result);
      return Status::Ok();
    }
    const char* payload = header + kHeaderSize;
    const uint32_t crc = crc32c::Extend(crc32c::Value(header + 6, 1), payload, length);
    if (crc32c::Unmask(stored_crc) != crc) {
      Bad(phys, "checksum mismatch", result);
      return Status::Ok();
    }
    pos_ += kHeaderSize + length;
    const uint64_t end = phys + kHeaderSize + length;

    switch (type) {
      case kFullType:
        if (assembling_) {
          Bad(phys, "full record inside a fragmented record", result);
          return Status::Ok();
        }
        resync_ = false;
        result->kind = Kind::kRecord;
        result->record = Slice(payload, length);
        result->offset = phys;
        result->end = end;
        return Status::Ok();
      case kFirstType:
        if (assembling_) {
          Bad(phys, "first fragment inside a fragmented record", result);
          return Status::Ok();
        }
        resync_ = false;
        assembling_ = true;
        record_offset_ = phys;
        record_.assign(payload, length);
        break;
      case kMiddleType:
      case kLastType:
        if (!assembling_) {
          if (resync_) break;  // the tail of a record whose start was skipped
          Bad(phys, "fragment without a first fragment", result);
          return Status::Ok();
        }
        record_.append(payload, length);
        if (type == kLastType) {
          assembling_ = false;
          result->kind = Kind::kRecord;
          result->record = record_;
          result->offset = record_offset_;
          result->end = end;
          return Status::Ok();
        }
        break;
    }
  }
}

}  // namespace grove::wal
