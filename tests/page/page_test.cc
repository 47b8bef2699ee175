#include "page/page.h"

#include <cstring>

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(PageTest, SealedPageVerifies) {
  alignas(4096) char p[kPageSize];
  page::Init(p, PageType::kBlob, 42);
  std::memcpy(p + 100, "payload", 7);
  page::Seal(p, 7);
  EXPECT_TRUE(page::Verify(p, 42).ok());
  EXPECT_EQ(page::Epoch(p), 7u);
  EXPECT_EQ(page::Type(p), static_cast<uint16_t>(PageType::kBlob));
}

TEST(PageTest, EveryBitFlipIsDetected) {
  alignas(4096) char p[kPageSize];
  page::Init(p, PageType::kBlob, 9);
  for (size_t i = kPageHeaderSize; i < kPageSize; ++i) p[i] = static_cast<char>(i * 31);
  page::Seal(p, 3);
  for (size_t bit = 0; bit < kPageSize * 8; bit += 7) {
    p[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_TRUE(page::Verify(p, 9).IsDataLoss()) << "bit " << bit;
    p[bit / 8] ^= static_cast<char>(1 << (bit % 8));
  }
}

TEST(PageTest, ZeroedAndMisdirectedPagesAreDataLoss) {
  alignas(4096) char p[kPageSize];
  std::memset(p, 0, kPageSize);
  EXPECT_TRUE(page::Verify(p, 5).IsDataLoss());
  page::Init(p, PageType::kBlob, 5);
  page::Seal(p, 1);
  const Status s = page::Verify(p, 6);
  EXPECT_TRUE(s.IsDataLoss());
  EXPECT_NE(s.message().find("misdirected"), std::string_view::npos);
}

}  // namespace
}  // namespace grove
