#include "service/token_store.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace grove::service {
namespace {

constexpr const char* kReader = "reader-token-0123456789";
constexpr const char* kWriter = "writer-token-0123456789";

TEST(TokenStoreTest, Sha256MatchesKnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokenStoreTest, PlainAndHashedEntries) {
  const std::string text = std::string("# comment\n\nread ") + kReader +
                           "   # trailing comment\nwrite sha256:" + Sha256Hex(kWriter) + "\n";
  StatusOr<TokenStore> store = TokenStore::Parse(text, "tokens");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(store->size(), 2u);
  EXPECT_EQ(store->Lookup(kReader), Role::kRead);
  EXPECT_EQ(store->Lookup(kWriter), Role::kWrite);
  EXPECT_EQ(store->Lookup("nope-nope-nope-nope"), std::nullopt);
  EXPECT_EQ(store->Lookup(""), std::nullopt);
  EXPECT_EQ(store->Lookup(std::string(kReader) + "x"), std::nullopt);
}

TEST(TokenStoreTest, UppercaseDigestAccepted) {
  std::string digest = Sha256Hex(kWriter);
  for (char& c : digest) c = static_cast<char>(std::toupper(c));
  StatusOr<TokenStore> store = TokenStore::Parse("write sha256:" + digest, "t");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->Lookup(kWriter), Role::kWrite);
}

TEST(TokenStoreTest, ErrorsNameTheLine) {
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"root abcdefghijklmnopq", "t:1: unknown role 'root' (allowed: read, write, admin)"},
      {"\nread", "t:2: expected '<role> <token>'"},
      {"read short", "t:1: token is shorter than 16 characters"},
      {"read sha256:abcd", "t:1: sha256: must be followed by 64 hex digits"},
      {"read a b", "t:1: expected '<role> <token>'; tokens contain no spaces"},
      {"# nothing\n", "t: no tokens (auth would refuse every call)"},
  };
  for (const Case& c : cases) {
    StatusOr<TokenStore> store = TokenStore::Parse(c.text, "t");
    ASSERT_FALSE(store.ok()) << c.text;
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store.status().message(), c.error);
  }
}

TEST(TokenStoreTest, LoadFile) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("tokens")) << "write " << kWriter << "\n";
  StatusOr<TokenStore> store = TokenStore::LoadFile(dir.Sub("tokens"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->Lookup(kWriter), Role::kWrite);
  StatusOr<TokenStore> missing = TokenStore::LoadFile(dir.Sub("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("auth.tokens_file: cannot read"),
            std::string_view::npos);
}

TEST(TokenStoreTest, FirstMatchingEntryWins) {
  StatusOr<TokenStore> store =
      TokenStore::Parse(std::string("read ") + kWriter + "\nwrite " + kWriter, "t");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->Lookup(kWriter), Role::kRead);
}

}  // namespace
}  // namespace grove::service
