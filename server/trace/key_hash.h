#pragma once

// KeyHasher: the keys of a trace written so that their bytes are not readable, with their
// order kept (docs/formats/trace.md, "Hashed keys"). A trace started with hashed keys writes
// every key through one KeyHasher whose secret is drawn at the start and never stored.
//
// A key is cut into 8-byte words (the last one zero-padded); each word w becomes 13 bytes:
//
//   H(w) (12 bytes, big-endian) | marker (1 byte: 9 for a word followed by another, else the
//                                         number of key bytes in it, 1..8)
//
// H maps the 8-byte integer space onto a 96-bit one strictly increasingly: the word's top byte
// picks one of 256 segments, each with its own secret odd slope in [2^15, 2^16) and a secret gap
// before it, so H(w) = base[top byte] + slope[top byte] * (the other 7 bytes). Strictly
// increasing words and the markers keep byte order between keys (a key that is a prefix of
// another still sorts first) and distinct keys distinct. The empty key stays empty.
//
// What the hashed form keeps: key order and equality (so ranges, hot ranges and the skew of
// repeated keys), the number of distinct keys, a length of 13 bytes per started 8 of the
// original. What it changes: the spacing of keys, by a factor within 2x that changes at each
// 1/256 of the 8-byte space of every word. It is not encryption: a reader who knows some keys and
// their hashes learns the slope and base of their segments.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::trace {

class KeyHasher {
 public:
  static constexpr size_t kWordBytes = 13;  // per started 8 bytes of the key

  explicit KeyHasher(uint64_t secret);

  std::string Hash(std::string_view key) const;

 private:
  std::array<unsigned __int128, 256> base_{};
  std::array<uint32_t, 256> slope_{};
};

}  // namespace grove::trace
