#include "reliability/tagged_value.h"

#include <algorithm>
#include <cstring>

#include "util/coding.h"
#include "util/crc32c.h"

namespace grove::testing {
namespace {

constexpr char kMagic[4] = {'G', 'T', 'V', '1'};
constexpr size_t kFixed = 4 + 2 + 4 + 8 + 4;  // magic, key length, writer, seq, crc

}  // namespace

size_t MinTaggedValueSize(std::string_view key) { return kFixed + key.size(); }

std::string MakeTaggedValue(std::string_view key, uint32_t writer, uint64_t seq, size_t len) {
  len = std::max(len, MinTaggedValueSize(key));
  std::string v;
  v.reserve(len);
  v.append(kMagic, 4);
  PutFixed16(&v, static_cast<uint16_t>(key.size()));
  v.append(key);
  PutFixed32(&v, writer);
  PutFixed64(&v, seq);
  // Padding that differs per operation: a stale value never equals a newer one byte for byte.
  uint64_t x = seq * 0x9e3779b97f4a7c15ull + writer;
  while (v.size() < len - 4) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    v.push_back(static_cast<char>('a' + (x >> 40) % 26));
  }
  PutFixed32(&v, crc32c::Mask(crc32c::Value(v.data(), v.size())));
  return v;
}

TagCheck CheckTaggedValue(std::string_view key, std::string_view value, ValueTag* tag) {
  if (value.size() < kFixed || std::memcmp(value.data(), kMagic, 4) != 0) {
    return TagCheck::kCorrupt;
  }
  const size_t body = value.size() - 4;
  const uint32_t crc = DecodeFixed32(value.data() + body);
  if (crc32c::Unmask(crc) != crc32c::Value(value.data(), body)) return TagCheck::kCorrupt;
  const size_t key_len = DecodeFixed16(value.data() + 4);
  if (kFixed + key_len > value.size()) return TagCheck::kCorrupt;
  tag->writer = DecodeFixed32(value.data() + 6 + key_len);
  tag->seq = DecodeFixed64(value.data() + 10 + key_len);
  if (value.substr(6, key_len) != key) return TagCheck::kWrongKey;
  return TagCheck::kOk;
}

const char* TagCheckName(TagCheck c) {
  switch (c) {
    case TagCheck::kOk:
      return "ok";
    case TagCheck::kCorrupt:
      return "corrupt";
    case TagCheck::kWrongKey:
      return "wrong key";
  }
  return "?";
}

}  // namespace grove::testing
