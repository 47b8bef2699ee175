#pragma once

// How grovectl writes keys and values on the command line, in files and in its output.
//
//   text    the bytes as they are
//   hex     two hex digits per byte ("6b6579")
//   base64  standard alphabet with padding ("a2V5")
//   u64     an unsigned decimal integer stored as 8 bytes big-endian, so that numeric order is
//           key order (the papers' workloads use such keys). On output, a byte string that is
//           not 8 bytes long is shown as 0x<hex>.

#include <optional>
#include <string>
#include <string_view>

namespace grove::client {

enum class Format { kText, kHex, kBase64, kU64 };

// "text", "hex", "base64", "u64" -> Format.
std::optional<Format> ParseFormat(std::string_view name);
std::string_view FormatName(Format format);

// Bytes -> their written form.
std::string Encode(Format format, std::string_view bytes);

// Written form -> bytes. On failure returns false and sets *error to a reason that names the
// format, e.g. "'zz' is not hex (two hex digits per byte)".
bool Decode(Format format, std::string_view text, std::string* bytes, std::string* error);

std::string HexEncode(std::string_view bytes);
std::string Base64Encode(std::string_view bytes);
bool Base64Decode(std::string_view text, std::string* bytes);

}  // namespace grove::client
