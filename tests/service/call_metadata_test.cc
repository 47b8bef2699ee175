// CallMetadata over a ServerContext: client values by key, numbers read leniently, trailers added.

#include "service/call_metadata.h"

#include <grpcpp/test/server_context_test_spouse.h>
#include <gtest/gtest.h>

namespace grove::service {
namespace {

TEST(CallMetadataTest, ReadsClientValuesAndWritesTrailers) {
  grpc::ServerContext context;
  grpc::testing::ServerContextTestSpouse spouse(&context);
  spouse.AddClientMetadata("grove-map-version", "42");
  spouse.AddClientMetadata("grove-word", "apple");
  spouse.AddClientMetadata("grove-negative", "-3");
  ContextMetadata md(&context);

  EXPECT_EQ(md.Client("grove-word"), "apple");
  EXPECT_FALSE(md.Client("grove-absent").has_value());
  EXPECT_EQ(md.ClientNumber("grove-map-version"), 42u);
  EXPECT_EQ(md.ClientNumber("grove-absent"), 0u);
  EXPECT_EQ(md.ClientNumber("grove-word"), 0u);
  EXPECT_EQ(md.ClientNumber("grove-negative"), 0u);

  md.AddTrailer("grove-not-applied", "1");
  md.AddTrailer("grove-current-value-bin", std::string("a\0b", 3));
  const auto trailers = spouse.GetTrailingMetadata();
  ASSERT_EQ(trailers.count("grove-not-applied"), 1u);
  EXPECT_EQ(trailers.find("grove-not-applied")->second, "1");
  EXPECT_EQ(trailers.find("grove-current-value-bin")->second, std::string("a\0b", 3));
}

}  // namespace
}  // namespace grove::service
