// The torture test's oracle must itself be right: tagged values detect damage and misplaced
// values, and the ledger accepts exactly the states a crash may leave and names the others.

#include "reliability/ledger.h"

#include <gtest/gtest.h>

#include "reliability/tagged_value.h"

namespace grove::testing {
namespace {

TEST(TaggedValueTest, RoundTripsAndDetectsDamage) {
  const std::string v = MakeTaggedValue("key-1", 3, 77, 120);
  EXPECT_EQ(v.size(), 120u);
  ValueTag tag;
  ASSERT_EQ(CheckTaggedValue("key-1", v, &tag), TagCheck::kOk);
  EXPECT_EQ(tag.writer, 3u);
  EXPECT_EQ(tag.seq, 77u);
  EXPECT_EQ(CheckTaggedValue("key-2", v, &tag), TagCheck::kWrongKey);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string bad = v;
    bad[i] ^= 0x01;
    EXPECT_NE(CheckTaggedValue("key-1", bad, &tag), TagCheck::kOk) << "flip at " << i;
  }
  EXPECT_EQ(CheckTaggedValue("key-1", v.substr(0, 60), &tag), TagCheck::kCorrupt);
  EXPECT_EQ(CheckTaggedValue("key-1", "", &tag), TagCheck::kCorrupt);
  EXPECT_NE(MakeTaggedValue("key-1", 3, 78, 120), v) << "versions must differ byte for byte";
  EXPECT_EQ(MakeTaggedValue("k", 0, 1, 0).size(), MinTaggedValueSize("k"));
}

using Writes = std::vector<std::pair<std::string, KeyWrite>>;

std::optional<std::string> Val(const std::string& key, uint64_t seq) {
  return MakeTaggedValue(key, 1, seq, 64);
}

TEST(LedgerTest, AcknowledgedWritesMustBeVisible) {
  Ledger l(1);
  std::string why;
  EXPECT_EQ(l.Check("a", std::nullopt, &why), Verdict::kOk);
  l.Invoke({{"a", {1, true}}});
  l.Acknowledge({{"a", {1, true}}});
  EXPECT_EQ(l.Check("a", Val("a", 1), &why), Verdict::kOk);
  EXPECT_EQ(l.Check("a", std::nullopt, &why), Verdict::kLostAck) << why;
  l.Invoke({{"a", {2, true}}});
  l.Acknowledge({{"a", {2, true}}});
  EXPECT_EQ(l.Check("a", Val("a", 1), &why), Verdict::kLostAck) << "an older version";
  EXPECT_EQ(l.Check("a", Val("a", 9), &why), Verdict::kPhantom) << "never invoked";
  EXPECT_EQ(l.Check("a", MakeTaggedValue("a", 2, 2, 64), &why), Verdict::kPhantom)
      << "another writer's value";
  std::string damaged = *Val("a", 2);
  damaged[20] ^= 4;
  EXPECT_EQ(l.Check("a", damaged, &why), Verdict::kCorrupt);
  EXPECT_EQ(l.Check("a", Val("b", 2), &why), Verdict::kCorrupt) << "another key's value";
  l.Invoke({{"a", {3, false}}});
  l.Acknowledge({{"a", {3, false}}});
  EXPECT_EQ(l.Check("a", std::nullopt, &why), Verdict::kOk);
  EXPECT_EQ(l.Check("a", Val("a", 2), &why), Verdict::kLostAck) << "a deleted value came back";
}

TEST(LedgerTest, FailedWritesArePendingUntilResolved) {
  Ledger l(1);
  std::string why;
  l.Invoke({{"a", {1, true}}});
  l.Acknowledge({{"a", {1, true}}});
  l.Invoke({{"a", {2, false}}});
  l.Fail({{"a", {2, false}}});
  l.Invoke({{"a", {3, true}}});
  l.Fail({{"a", {3, true}}});
  EXPECT_EQ(l.Check("a", Val("a", 1), &why), Verdict::kOk);
  EXPECT_EQ(l.Check("a", std::nullopt, &why), Verdict::kOk);
  EXPECT_EQ(l.Check("a", Val("a", 3), &why), Verdict::kOk);

  ResolveCounts r = l.Resolve({{"a", Val("a", 3)}});
  EXPECT_EQ(r.keys_uncertain, 1u);
  EXPECT_EQ(r.resolved_new, 1u);
  // Resolved: only put #3 is allowed now.
  EXPECT_EQ(l.Check("a", Val("a", 3), &why), Verdict::kOk);
  EXPECT_EQ(l.Check("a", std::nullopt, &why), Verdict::kLostAck);
  EXPECT_EQ(l.Check("a", Val("a", 1), &why), Verdict::kLostAck);

  l.Invoke({{"a", {4, true}}});
  l.Fail({{"a", {4, true}}});
  r = l.Resolve({{"a", Val("a", 3)}});
  EXPECT_EQ(r.resolved_old, 1u);
  EXPECT_EQ(l.Check("a", Val("a", 4), &why), Verdict::kLostAck) << "#4 was found not applied";
}

TEST(LedgerTest, FailedBatchesMustBeAllOrNothing) {
  const Writes batch = {{"a", {5, true}}, {"b", {5, true}}, {"c", {5, false}}};
  for (int shape = 0; shape < 3; ++shape) {
    Ledger l(1);
    l.Invoke(batch);
    l.Fail(batch);
    std::map<std::string, std::optional<std::string>> seen;
    if (shape == 0) seen = {{"a", Val("a", 5)}, {"b", Val("b", 5)}};  // applied
    if (shape == 1) seen = {};                                        // dropped
    if (shape == 2) seen = {{"a", Val("a", 5)}};                      // torn
    const ResolveCounts r = l.Resolve(seen);
    EXPECT_EQ(r.batches_uncertain, 1u);
    EXPECT_EQ(r.batches_applied, shape == 0 ? 1u : 0u);
    EXPECT_EQ(r.batches_dropped, shape == 1 ? 1u : 0u);
    EXPECT_EQ(r.batches_torn, shape == 2 ? 1u : 0u);
  }
  // A later write to one of the keys makes that key say nothing about the batch.
  Ledger l(1);
  l.Invoke(batch);
  l.Fail(batch);
  l.Invoke({{"b", {6, false}}});
  l.Fail({{"b", {6, false}}});
  const ResolveCounts r = l.Resolve({{"a", Val("a", 5)}});
  EXPECT_EQ(r.batches_torn, 0u);
  EXPECT_EQ(r.batches_applied, 1u);
}

}  // namespace
}  // namespace grove::testing
