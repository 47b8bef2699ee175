#pragma once

// Little-endian fixed-width and LEB128 varint encoding for on-disk formats, plus big-endian helpers
// for keys. Decoders never read past the end of their input.

#include <cstdint>
#include <cstring>
#include <string>

#include "grove/slice.h"

namespace grove {

inline void EncodeFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, 2); }
inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint16_t DecodeFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "on-disk formats assume little-endian");

inline void PutFixed16(std::string* dst, uint16_t v) {
  dst->append(reinterpret_cast<char*>(&v), 2);
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  dst->append(reinterpret_cast<char*>(&v), 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  dst->append(reinterpret_cast<char*>(&v), 8);
}

void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
// varint32 length followed by the bytes.
void PutLengthPrefixed(std::string* dst, Slice value);

// Each Get* consumes from the front of *input; false (input unchanged or partially consumed) when
// the input is truncated or malformed.
bool GetFixed32(Slice* input, uint32_t* v);
bool GetFixed64(Slice* input, uint64_t* v);
bool GetVarint32(Slice* input, uint32_t* v);
bool GetVarint64(Slice* input, uint64_t* v);
bool GetLengthPrefixed(Slice* input, Slice* result);
bool GetBytes(Slice* input, size_t n, Slice* result);

int VarintLength(uint64_t v);

// 8-byte big-endian encoding of an integer key (order-preserving under bytewise comparison).
std::string EncodeU64Key(uint64_t v);
inline void EncodeBigEndian64(char* dst, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(dst, &v, 8);
}
inline uint64_t DecodeBigEndian64(const char* p) { return __builtin_bswap64(DecodeFixed64(p)); }

}  // namespace grove
