// KeyHasher: hashed keys keep the order and the equality of the keys, not their bytes.

#include "trace/key_hash.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace grove::trace {
namespace {

// Keys that stress the word boundaries: prefixes of each other, zero bytes, 7/8/9-byte lengths,
// the top byte's extremes, and random ones.
std::vector<std::string> Keys() {
  std::vector<std::string> keys = {"",
                                   std::string(1, '\0'),
                                   std::string(8, '\0'),
                                   std::string(9, '\0'),
                                   "a",
                                   "a\0",
                                   "ab",
                                   "abcdefg",
                                   "abcdefgh",
                                   "abcdefgh\0",
                                   "abcdefghi",
                                   "abcdefgi",
                                   std::string(8, '\xff'),
                                   std::string(16, '\xff'),
                                   "user:000123",
                                   "user:000124"};
  keys[5] = std::string("a\0", 2);
  keys[9] = std::string("abcdefgh\0", 9);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string k(rng() % 24, '\0');
    for (char& c : k) c = static_cast<char>(rng() % 4 == 0 ? rng() % 3 : rng());
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

TEST(KeyHasherTest, KeepsOrderAndEquality) {
  const KeyHasher h(0x1234);
  const std::vector<std::string> keys = Keys();  // sorted, distinct
  std::string last;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string hashed = h.Hash(keys[i]);
    EXPECT_EQ(hashed, h.Hash(keys[i])) << "deterministic";
    EXPECT_EQ(hashed.size(), (keys[i].size() + 7) / 8 * KeyHasher::kWordBytes);
    if (i > 0) {
      EXPECT_LT(last, hashed) << "key " << i << " of " << keys.size();
    }
    last = hashed;
  }
}

TEST(KeyHasherTest, HidesTheBytesAndDependsOnTheSecret) {
  const KeyHasher a(1), b(2);
  const std::string key = "alice@example.com";
  EXPECT_EQ(a.Hash(key).find("alice"), std::string::npos);
  EXPECT_EQ(a.Hash(key).find("example"), std::string::npos);
  EXPECT_NE(a.Hash(key), b.Hash(key));
  // Neighbouring words stay apart (slopes of at least 2^15).
  const std::string x = a.Hash(std::string("\x10\0\0\0\0\0\0\x01", 8));
  const std::string y = a.Hash(std::string("\x10\0\0\0\0\0\0\x02", 8));
  EXPECT_LT(x, y);
}

}  // namespace
}  // namespace grove::trace
