#include "wal/log_writer.h"

#include <algorithm>
#include <cassert>

#include "util/coding.h"
#include "util/crc32c.h"

namespace grove::wal {

void LogWriter::AddRecord(std::span<const Slice> parts, std::string* dst) {
  size_t left = 0;
  for (Slice p : parts) left += p.size();

  // Cursor over the concatenated parts.
  size_t part = 0;
  size_t part_pos = 0;

  bool first = true;
  // A zero-length record still gets one (Full) physical record, hence do/while.
  do {
    size_t space = kBlockSize - block_offset_;
    if (space < kHeaderSize) {
      // Too small for a header: zero-fill the tail so that a reader skips it.
      dst->append(space, '\0');
      block_offset_ = 0;
      space = kBlockSize;
    }
    const size_t fragment = std::min(left, space - kHeaderSize);
    const bool last = fragment == left;
    const RecordType type = first && last ? kFullType
                            : first       ? kFirstType
                            : last        ? kLastType
                                          : kMiddleType;

    const size_t header_pos = dst->size();
    dst->append(kHeaderSize, '\0');
    const size_t payload_pos = dst->size();
    for (size_t need = fragment; need > 0;) {
      while (part_pos == parts[part].size()) {
        ++part;
        part_pos = 0;
      }
      const size_t n = std::min(need, parts[part].size() - part_pos);
      dst->append(parts[part].data() + part_pos, n);
      part_pos += n;
      need -= n;
    }

    char* header = dst->data() + header_pos;
    header[6] = static_cast<char>(type);
    uint32_t crc = crc32c::Value(header + 6, 1);
    crc = crc32c::Extend(crc, dst->data() + payload_pos, fragment);
    EncodeFixed32(header, crc32c::Mask(crc));
    EncodeFixed16(header + 4, static_cast<uint16_t>(fragment));

    block_offset_ += kHeaderSize + fragment;
    left -= fragment;
    first = false;
  } while (left > 0);
  assert(block_offset_ <= kBlockSize);
  if (block_offset_ == kBlockSize) block_offset_ = 0;
}

}  // namespace grove::wal
