// IndexRegistry: variants by name, and the page-type claims that keep two variants (or a variant
// and a shared layer) from writing pages of one type.

#include "index/registry.h"

#include <gtest/gtest.h>

#include "page/page.h"

namespace grove {
namespace {

VariantSpec Fake(const std::string& name, std::vector<PageTypeClaim> types) {
  VariantSpec spec;
  spec.name = name;
  spec.page_types = std::move(types);
  return spec;
}

TEST(IndexRegistryTest, BuiltinsClaimDistinctPageTypes) {
  auto r = IndexRegistry::Builtins();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->PageTypeName(static_cast<uint16_t>(PageType::kBlob)), "blob");
  EXPECT_EQ(r->PageTypeName(4000), "page type 4000");
  for (const std::string& name : r->Names()) {
    for (const PageTypeClaim& c : r->Find(name)->page_types) {
      EXPECT_EQ(r->PageTypeName(c.type), c.name) << name;
    }
  }
}

TEST(IndexRegistryTest, ACollidingPageTypeFailsRegistrationAndNamesBothClaimants) {
  IndexRegistry r;
  ASSERT_TRUE(r.Register(Fake("first", {{40, "first leaf"}, {41, "first inner"}})).ok());
  const Status s = r.Register(Fake("second", {{42, "second leaf"}, {41, "second inner"}}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("'second'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("'first'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("41"), std::string::npos) << s.ToString();
  // Nothing of the failed registration stays: neither the variant nor its other claim.
  EXPECT_EQ(r.Find("second"), nullptr);
  EXPECT_EQ(r.PageTypeName(42), "page type 42");
  EXPECT_TRUE(r.Register(Fake("third", {{42, "third leaf"}})).ok());
}

TEST(IndexRegistryTest, EngineTypesAndDoubleClaimsAreRefused) {
  IndexRegistry r;
  EXPECT_EQ(r.Register(Fake("low", {{3, "mine"}})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Register(Fake("twice", {{50, "a"}, {50, "b"}})).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(r.ClaimPageTypes("a shared layer", {{60, "shared node"}}).ok());
  const Status s = r.Register(Fake("late", {{60, "late node"}}));
  EXPECT_NE(s.message().find("a shared layer"), std::string::npos) << s.ToString();
}

// TreeLine's buffer pool is a share of the budget with a floor: a large budget gets its share,
// a small one 8 MiB or a quarter of the budget, and a variant without a share all of it.
TEST(IndexRegistryTest, BufferPoolBytesTakesTheShareAboveAFloor) {
  auto r = IndexRegistry::Builtins();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_EQ(r->BufferPoolBytes("treeline", {}, 1000 * kMiB), 50 * kMiB);
  EXPECT_EQ(r->BufferPoolBytes("treeline", {{"buffer_pool_share", "0.5"}}, 100 * kMiB), 50 * kMiB);
  EXPECT_EQ(r->BufferPoolBytes("treeline", {}, 100 * kMiB), 8 * kMiB);
  EXPECT_EQ(r->BufferPoolBytes("treeline", {}, 8 * kMiB), 2 * kMiB);
  EXPECT_EQ(r->BufferPoolBytes("btree", {}, 8 * kMiB), 8 * kMiB);
}

TEST(IndexRegistryTest, NamesAreUnique) {
  auto r = IndexRegistry::Builtins();
  ASSERT_TRUE(r.ok());
  VariantSpec again = *r->Find("btree");
  EXPECT_EQ(r->Register(again).code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace grove
