// FaultInjectionBackend::SimulatePowerLoss in its three modes, over both real backends.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/fault_test_util.h"

namespace grove {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;
using Kind = FaultInjectionBackend::OpKind;
using Rule = FaultInjectionBackend::Rule;
using testing::Pattern;
using testing::ReadWholeFile;

constexpr size_t kPage = kIoAlignment;
constexpr size_t kSector = 512;

class PowerLossTest : public testing::FaultFixture {
 protected:
  // Writes `data` (page multiple) at `offset` through a queue of the fault backend.
  void QueueWrite(File* file, uint64_t offset, const std::string& data) {
    AlignedBuffer buf(data.size());
    std::memcpy(buf.data(), data.data(), data.size());
    IoOp op = RunOne(IoOp::Write(file, offset, buf.data(), data.size()));
    ASSERT_TRUE(op.status.ok()) << op.status.ToString();
  }
  void DirectWrite(File* file, uint64_t offset, const std::string& data) {
    AlignedBuffer buf(data.size());
    std::memcpy(buf.data(), data.data(), data.size());
    ASSERT_TRUE(file->Write(offset, Slice(buf.data(), buf.size())).ok());
  }

  // Synced state: a 4-page direct "data" file and a buffered "wal" holding "abc"; both files'
  // directory entries synced. Then a series of unsynced changes (4 of them writes) to both.
  // Returns the contents the files had just before the power loss.
  std::pair<std::string, std::string> SyncedThenUnsyncedChanges() {
    const std::string synced = Pattern(1, 4 * kPage);
    auto data = Open("data", /*direct=*/true);
    auto wal = Open("wal");
    QueueWrite(data.get(), 0, synced);
    EXPECT_TRUE(data->Sync().ok());
    EXPECT_TRUE(wal->Write(0, "abc").ok());
    EXPECT_TRUE(wal->Sync().ok());
    EXPECT_TRUE(fault_->SyncDir(dir_.path()).ok());

    DirectWrite(data.get(), 1 * kPage, Pattern(2, kPage));      // overwrite
    QueueWrite(data.get(), 2 * kPage, Pattern(3, kPage));       // overwrite via a queue
    DirectWrite(data.get(), 4 * kPage, Pattern(4, 2 * kPage));  // append
    EXPECT_TRUE(data->Allocate(0, 8 * kPage).ok());
    EXPECT_TRUE(data->Truncate(3 * kPage).ok());  // drops a synced page
    EXPECT_TRUE(wal->Write(3, "def").ok());       // append to the log
    return {ReadWholeFile(dir_.Sub("data")), ReadWholeFile(dir_.Sub("wal"))};
  }
};

TEST_P(PowerLossTest, DropRestoresExactlySyncedContentAndSize) {
  const std::string synced = Pattern(1, 4 * kPage);
  SyncedThenUnsyncedChanges();
  fault_->CrashAfter(0);
  EXPECT_FALSE(fault_->SyncDir(dir_.path()).ok());
  ASSERT_TRUE(fault_->crashed());

  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kDropUnsynced).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("data")), synced);
  EXPECT_EQ(ReadWholeFile(dir_.Sub("wal")), "abc");
  EXPECT_EQ(fault_->counters().unsynced_writes_dropped, 4u);

  // The backend is usable again, through O_DIRECT too, and no longer armed to crash.
  EXPECT_FALSE(fault_->crashed());
  auto data = Open("data", /*direct=*/true, /*create=*/false);
  ASSERT_NE(data, nullptr);
  AlignedBuffer in(4 * kPage);
  size_t n = 0;
  ASSERT_TRUE(data->Read(0, in.size(), in.data(), &n).ok());
  ASSERT_EQ(n, in.size());
  EXPECT_EQ(std::string(in.data(), n), synced);
  ASSERT_TRUE(data->Write(0, Slice(in.data(), kPage)).ok());
  EXPECT_FALSE(fault_->crashed());
}

TEST_P(PowerLossTest, KeepKeepsEverything) {
  const auto [data_before, wal_before] = SyncedThenUnsyncedChanges();
  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kKeepUnsynced).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("data")), data_before);
  EXPECT_EQ(ReadWholeFile(dir_.Sub("wal")), wal_before);
  EXPECT_EQ(data_before.size(), 3 * kPage);
  EXPECT_EQ(fault_->counters().unsynced_writes_kept, 4u);
  EXPECT_EQ(fault_->counters().unsynced_writes_dropped, 0u);
}

TEST_P(PowerLossTest, SyncedWritesSurviveAndFailedSyncsDoNotCount) {
  auto file = Open("f");
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Write(0, "durable").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Write(7, "-lost").ok());
  fault_->AddRule(Rule{Kind::kSync, "", EIO, 0, 1});
  ASSERT_FALSE(file->Sync().ok());  // failed: those bytes are not durable
  // A short write is undone too.
  fault_->AddRule(Rule{Kind::kWrite, "", EIO, 0, 1, /*short_write=*/true});
  ASSERT_FALSE(file->Write(0, "XXXXXXXXXXXX").ok());
  ASSERT_EQ(ReadWholeFile(dir_.Sub("f")), "XXXXXXe-lost");
  file.reset();

  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kDropUnsynced).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("f")), "durable");
}

TEST_P(PowerLossTest, TearLeavesEachSectorOldOrNew) {
  constexpr size_t kWrites = 16;
  const std::string old_content = Pattern(10, kWrites * kPage);
  const std::string new_content = Pattern(11, (kWrites + 2) * kPage);
  auto data = Open("data", /*direct=*/true);
  QueueWrite(data.get(), 0, old_content);
  ASSERT_TRUE(data->Sync().ok());
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());
  // 16 unsynced page overwrites, plus one unsynced 2-page append past the synced end.
  for (size_t i = 0; i < kWrites; ++i) {
    DirectWrite(data.get(), i * kPage, new_content.substr(i * kPage, kPage));
  }
  DirectWrite(data.get(), kWrites * kPage, new_content.substr(kWrites * kPage));
  data.reset();

  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kTearUnsynced).ok());
  const std::string after = ReadWholeFile(dir_.Sub("data"));
  ASSERT_EQ(after.size(), new_content.size());  // sizes persist in this mode
  size_t old_sectors = 0, new_sectors = 0;
  for (size_t s = 0; s < after.size(); s += kSector) {
    const std::string got = after.substr(s, kSector);
    const std::string was =
        s < old_content.size() ? old_content.substr(s, kSector) : std::string(kSector, '\0');
    if (got == new_content.substr(s, kSector)) {
      ++new_sectors;
    } else {
      ASSERT_EQ(got, was) << "sector " << s / kSector << " is neither old nor new";
      ++old_sectors;
    }
  }
  const auto c = fault_->counters();
  EXPECT_EQ(c.unsynced_writes_kept + c.unsynced_writes_dropped + c.unsynced_writes_torn,
            kWrites + 1);
  // With this seed every outcome occurs, so the old/new check above is not vacuous.
  EXPECT_GT(c.unsynced_writes_kept, 0u);
  EXPECT_GT(c.unsynced_writes_dropped, 0u);
  EXPECT_GT(c.unsynced_writes_torn, 0u);
  EXPECT_GT(old_sectors, 0u);
  EXPECT_GT(new_sectors, 0u);
}

TEST_P(PowerLossTest, TearIsReproducibleForASeed) {
  auto run = [this](const std::string& sub) {
    const std::string dir = dir_.Sub(sub);
    EXPECT_TRUE(inner_->CreateDir(dir).ok());
    auto fault = std::make_shared<FaultInjectionBackend>(inner_, kSeed);
    FileOptions create;
    create.create = true;
    auto file = fault->OpenFile(dir + "/f", create);
    EXPECT_TRUE(file.ok());
    EXPECT_TRUE(fault->SyncDir(dir).ok());
    EXPECT_TRUE((*file)->Write(0, Pattern(20, 32 * kSector)).ok());
    EXPECT_TRUE((*file)->Sync().ok());
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_TRUE((*file)->Write(i * 4 * kSector, Pattern(21 + i, 4 * kSector)).ok());
    }
    file->reset();
    EXPECT_TRUE(fault->SimulatePowerLoss(PowerLoss::kTearUnsynced).ok());
    return ReadWholeFile(dir + "/f");
  };
  EXPECT_EQ(run("one"), run("two"));
}

TEST_P(PowerLossTest, CreatedButNotDirSyncedFilesVanishOnDrop) {
  ASSERT_TRUE(fault_->CreateDir(dir_.Sub("sub")).ok());
  auto write_and_sync = [](File* f, const std::string& s) {
    ASSERT_TRUE(f->Write(0, s).ok());
    ASSERT_TRUE(f->Sync().ok());
  };

  auto a = Open("a");  // created, dir synced, data synced: survives
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());
  write_and_sync(a.get(), "A");

  auto c = Open("c");  // dir synced, then renamed (renames are durable at once): survives as d
  ASSERT_TRUE(fault_->SyncDir(dir_.path() + "/").ok());  // trailing slash: same directory
  write_and_sync(c.get(), "C");
  ASSERT_TRUE(fault_->RenameFile(dir_.Sub("c"), dir_.Sub("d")).ok());

  auto h = Open("h");  // deleted: stays deleted (deletes are durable at once)
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());
  h.reset();
  ASSERT_TRUE(fault_->DeleteFile(dir_.Sub("h")).ok());

  auto g = Open("sub/g");  // only the parent directory gets synced, not its own: vanishes
  write_and_sync(g.get(), "G");
  ASSERT_TRUE(fault_->SyncDir(dir_.path()).ok());

  // No SyncDir of the top directory from here on.
  auto b = Open("b");  // data synced, directory entry never: vanishes
  write_and_sync(b.get(), "B");

  auto e = Open("e");  // created and renamed, never dir synced: vanishes under its new name
  write_and_sync(e.get(), "E");
  ASSERT_TRUE(fault_->RenameFile(dir_.Sub("e"), dir_.Sub("f")).ok());

  auto u = Open("u");  // vanishing files lose their unsynced writes too
  ASSERT_TRUE(u->Write(0, "U").ok());

  a.reset(), b.reset(), c.reset(), e.reset(), g.reset(), u.reset();
  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kDropUnsynced).ok());

  EXPECT_EQ(ReadWholeFile(dir_.Sub("a")), "A");
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("b")));
  EXPECT_EQ(ReadWholeFile(dir_.Sub("d")), "C");
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("c")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("e")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("f")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("sub/g")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("h")));
  EXPECT_FALSE(inner_->FileExists(dir_.Sub("u")));
  EXPECT_EQ(fault_->counters().unsynced_writes_dropped, 1u);  // u's write
  auto names = fault_->ListDir(dir_.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "d", "sub"}));
}

TEST_P(PowerLossTest, KeepKeepsCreatedFiles) {
  auto b = Open("b");
  ASSERT_TRUE(b->Write(0, "B").ok());
  b.reset();
  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kKeepUnsynced).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("b")), "B");
  // Everything counts as synced afterwards: a second power loss changes nothing.
  ASSERT_TRUE(fault_->SimulatePowerLoss(PowerLoss::kDropUnsynced).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub("b")), "B");
}

INSTANTIATE_TEST_SUITE_P(io, PowerLossTest, ::testing::ValuesIn(testing::BackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace grove
