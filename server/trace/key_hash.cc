#include "trace/key_hash.h"

namespace grove::trace {
namespace {

// SplitMix64: a well-mixed stream from one 64-bit secret.
uint64_t Next(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr unsigned __int128 kSegmentWidth = static_cast<unsigned __int128>(1) << 56;

}  // namespace

KeyHasher::KeyHasher(uint64_t secret) {
  uint64_t state = secret;
  unsigned __int128 base = 0;
  for (size_t j = 0; j < 256; ++j) {
    // Slopes of at least 2^15 keep neighbouring words apart; odd ones mix the low bytes.
    slope_[j] = static_cast<uint32_t>((1u << 15) | (Next(&state) & 0x7fff) | 1u);
    // A gap of up to 2^64 before each segment hides where segments start.
    const unsigned __int128 span = kSegmentWidth * slope_[j];
    base += Next(&state);
    base_[j] = base;
    base += span;  // the segment's own values: base_[j] .. base_[j] + span - slope
  }
  // The last base plus its span stays below 2^(8 + 56 + 16 + 1) = 2^81 < 2^96.
}

std::string KeyHasher::Hash(std::string_view key) const {
  std::string out;
  out.reserve((key.size() + 7) / 8 * kWordBytes);
  for (size_t at = 0; at < key.size(); at += 8) {
    const size_t n = key.size() - at < 8 ? key.size() - at : 8;
    uint64_t w = 0;
    for (size_t i = 0; i < 8; ++i) {
      w = (w << 8) | (i < n ? static_cast<uint8_t>(key[at + i]) : 0u);
    }
    const size_t top = static_cast<size_t>(w >> 56);
    const unsigned __int128 h =
        base_[top] + static_cast<unsigned __int128>(w & ((1ull << 56) - 1)) * slope_[top];
    for (int b = 11; b >= 0; --b)
      out.push_back(static_cast<char>(static_cast<uint8_t>(h >> (8 * b))));
    // A word followed by another sorts after any last word with the same bytes (9 > 1..8).
    out.push_back(static_cast<char>(at + 8 < key.size() ? 9 : n));
  }
  return out;
}

}  // namespace grove::trace
