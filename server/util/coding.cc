#include "util/coding.h"

namespace grove {

void PutVarint32(std::string* dst, uint32_t v) { PutVarint64(dst, v); }

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst->append(buf, n);
}

void PutLengthPrefixed(std::string* dst, Slice value) {
  PutVarint32(dst, static_cast<uint32_t>(value.size()));
  dst->append(value.data(), value.size());
}

bool GetFixed32(Slice* input, uint32_t* v) {
  if (input->size() < 4) return false;
  *v = DecodeFixed32(input->data());
  input->remove_prefix(4);
  return true;
}

bool GetFixed64(Slice* input, uint64_t* v) {
  if (input->size() < 8) return false;
  *v = DecodeFixed64(input->data());
  input->remove_prefix(8);
  return true;
}

bool GetVarint64(Slice* input, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < input->size() && i < 10; ++i) {
    const uint64_t byte = static_cast<uint8_t>((*input)[i]);
    if (i == 9 && byte > 1) return false;  // would overflow 64 bits
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = result;
      input->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

bool GetVarint32(Slice* input, uint32_t* v) {
  Slice copy = *input;
  uint64_t wide;
  if (!GetVarint64(&copy, &wide) || wide > UINT32_MAX) return false;
  *v = static_cast<uint32_t>(wide);
  *input = copy;
  return true;
}

bool GetBytes(Slice* input, size_t n, Slice* result) {
  if (input->size() < n) return false;
  *result = input->substr(0, n);
  input->remove_prefix(n);
  return true;
}

bool GetLengthPrefixed(Slice* input, Slice* result) {
  Slice copy = *input;
  uint32_t len;
  if (!GetVarint32(&copy, &len) || !GetBytes(&copy, len, result)) return false;
  *input = copy;
  return true;
}

int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++len;
  }
  return len;
}

std::string EncodeU64Key(uint64_t v) {
  std::string s(8, '\0');
  EncodeBigEndian64(s.data(), v);
  return s;
}

}  // namespace grove
