#include "grove/client/codec.h"

#include <charconv>
#include <cstdint>

namespace grove::client {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<Format> ParseFormat(std::string_view name) {
  if (name == "text") return Format::kText;
  if (name == "hex") return Format::kHex;
  if (name == "base64") return Format::kBase64;
  if (name == "u64") return Format::kU64;
  return std::nullopt;
}

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kText:
      return "text";
    case Format::kHex:
      return "hex";
    case Format::kBase64:
      return "base64";
    case Format::kU64:
      return "u64";
  }
  return "text";
}

std::string HexEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHexDigits[c >> 4];
    out += kHexDigits[c & 15];
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16 |
                       uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8 |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kBase64Alphabet[v >> 18];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += kBase64Alphabet[(v >> 6) & 63];
    out += kBase64Alphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kBase64Alphabet[v >> 18];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool Base64Decode(std::string_view text, std::string* bytes) {
  if (text.size() % 4 != 0) return false;
  bytes->clear();
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return false;  // data after padding
      v[j] = Base64Value(c);
      if (v[j] < 0) return false;
    }
    const uint32_t n = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | v[3];
    bytes->push_back(static_cast<char>(n >> 16));
    if (pad < 2) bytes->push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) bytes->push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

std::string Encode(Format format, std::string_view bytes) {
  switch (format) {
    case Format::kText:
      return std::string(bytes);
    case Format::kHex:
      return HexEncode(bytes);
    case Format::kBase64:
      return Base64Encode(bytes);
    case Format::kU64: {
      if (bytes.size() != 8) return "0x" + HexEncode(bytes);
      uint64_t v = 0;
      for (unsigned char c : bytes) v = v << 8 | c;
      return std::to_string(v);
    }
  }
  return std::string(bytes);
}

bool Decode(Format format, std::string_view text, std::string* bytes, std::string* error) {
  switch (format) {
    case Format::kText:
      *bytes = std::string(text);
      return true;
    case Format::kHex: {
      if (text.size() % 2 != 0) {
        *error = "'" + std::string(text) + "' is not hex (two hex digits per byte)";
        return false;
      }
      bytes->clear();
      for (size_t i = 0; i < text.size(); i += 2) {
        const int hi = HexValue(text[i]);
        const int lo = HexValue(text[i + 1]);
        if (hi < 0 || lo < 0) {
          *error = "'" + std::string(text) + "' is not hex (two hex digits per byte)";
          return false;
        }
        bytes->push_back(static_cast<char>(hi << 4 | lo));
      }
      return true;
    }
    case Format::kBase64:
      if (!Base64Decode(text, bytes)) {
        *error = "'" + std::string(text) + "' is not base64 (standard alphabet, padded)";
        return false;
      }
      return true;
    case Format::kU64: {
      uint64_t v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
        *error = "'" + std::string(text) + "' is not a u64 (a decimal integer 0.." +
                 std::to_string(UINT64_MAX) + ")";
        return false;
      }
      bytes->resize(8);
      for (int i = 7; i >= 0; --i, v >>= 8) (*bytes)[i] = static_cast<char>(v & 0xff);
      return true;
    }
  }
  return false;
}

}  // namespace grove::client
