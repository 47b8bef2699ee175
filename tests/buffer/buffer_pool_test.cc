// BufferPool over a real O_DIRECT data file, on both IO backends: the checkpoint round trip,
// no-steal and flushing frames, verification of every image read from disk (checksum, own id,
// epoch), single-flight misses, retention classes, batched loads, discards and the prefetch side
// pool. A counting wrapper around the backend shows what actually reached the disk.

#include "buffer/buffer_pool.h"

#include <atomic>
#include <cstring>
#include <latch>
#include <memory>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "grove/io_backend.h"

#include "page/epoch_table.h"
#include "page/extent_allocator.h"
#include "page/page.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove {
namespace {

// Counts the reads of a backend: the single-page reads made through its files and those pushed to
// its queues, and the batches submitted through the queues. With synchronous submission, Submit()
// also waits for the batch: a test then knows that a speculative read has finished before it
// changes the file underneath it.
class CountingBackend final : public IoBackend {
 public:
  explicit CountingBackend(std::shared_ptr<IoBackend> inner) : inner_(std::move(inner)) {}

  uint64_t reads() const { return reads_.load(); }
  uint64_t submits() const { return submits_.load(); }
  void set_synchronous_submit(bool on) { sync_submit_ = on; }

  std::string_view Name() const override { return inner_->Name(); }
  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path,
                                           const FileOptions& options) override {
    GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file, inner_->OpenFile(path, options));
    return std::unique_ptr<File>(std::make_unique<CountingFile>(this, std::move(file)));
  }
  Status DeleteFile(const std::string& path) override { return inner_->DeleteFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return inner_->RenameFile(from, to);
  }
  Status CreateDir(const std::string& path) override { return inner_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return inner_->SyncDir(path); }
  StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    return inner_->ListDir(path);
  }
  bool FileExists(const std::string& path) override { return inner_->FileExists(path); }
  std::unique_ptr<IoQueue> AcquireQueue() override {
    return std::make_unique<Queue>(this, inner_->AcquireQueue());
  }

 private:
  class CountingFile final : public File {
   public:
    CountingFile(CountingBackend* owner, std::unique_ptr<File> inner)
        : owner_(owner), inner_(std::move(inner)) {}
    const std::string& path() const override { return inner_->path(); }
    Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override {
      owner_->reads_.fetch_add(1);
      return inner_->Read(offset, n, buf, bytes_read);
    }
    Status Write(uint64_t offset, Slice data) override { return inner_->Write(offset, data); }
    Status Sync() override { return inner_->Sync(); }
    Status Truncate(uint64_t size) override { return inner_->Truncate(size); }
    Status Allocate(uint64_t offset, uint64_t len) override {
      return inner_->Allocate(offset, len);
    }
    StatusOr<uint64_t> Size() override { return inner_->Size(); }
    int fd() const override { return inner_->fd(); }

   private:
    CountingBackend* const owner_;
    std::unique_ptr<File> inner_;
  };

  class Queue final : public IoQueue {
   public:
    Queue(CountingBackend* owner, std::unique_ptr<IoQueue> inner)
        : owner_(owner), inner_(std::move(inner)) {}
    void Push(IoOp* op) override {
      if (op->kind == IoOp::Kind::kRead) owner_->reads_.fetch_add(1);
      ++pushed_;
      inner_->Push(op);
    }
    void Submit() override {
      if (pushed_ > 0) owner_->submits_.fetch_add(1);
      pushed_ = 0;
      inner_->Submit();
      if (owner_->sync_submit_) inner_->WaitAll();
    }
    void Wait(IoOp* op) override { inner_->Wait(op); }
    void WaitAll() override { inner_->WaitAll(); }
    size_t Poll() override { return inner_->Poll(); }
    size_t InFlight() const override { return inner_->InFlight(); }

   private:
    CountingBackend* const owner_;
    std::unique_ptr<IoQueue> inner_;
    size_t pushed_ = 0;
  };

  std::shared_ptr<IoBackend> inner_;
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> submits_{0};
  std::atomic<bool> sync_submit_{false};
};

// The body of test page `id` at `version`: the version in the first four bytes, then bytes that
// depend on id, version and position, so that a misplaced or mixed-up image is caught.
char BodyByte(PageId id, uint32_t version, size_t i) {
  return static_cast<char>((id * 131 + version * 31 + i * 7) & 0xff);
}
void FillBody(char* page, PageId id, uint32_t version) {
  std::memcpy(page + kPageHeaderSize, &version, 4);
  for (size_t i = kPageHeaderSize + 4; i < kPageSize; ++i) page[i] = BodyByte(id, version, i);
}
// The version the body holds, or -1 when the body is not a consistent test body of page `id`.
int64_t BodyVersion(const char* page, PageId id) {
  uint32_t version;
  std::memcpy(&version, page + kPageHeaderSize, 4);
  if (page::Id(page) != id) return -1;
  for (size_t i = kPageHeaderSize + 4; i < kPageSize; ++i) {
    if (page[i] != BodyByte(id, version, i)) return -1;
  }
  return version;
}

class BufferPoolTest : public ::testing::TestWithParam<IoBackendKind> {
 protected:
  void SetUp() override {
    auto inner = NewIoBackend({.kind = GetParam()}, nullptr);
    if (!inner.ok()) {
      if (GetParam() == IoBackendKind::kUring) {
        GTEST_SKIP() << "io_uring cannot be set up here: " << inner.status().ToString();
      }
      FAIL() << inner.status().ToString();
    }
    io_ = std::make_shared<CountingBackend>(*inner);
    auto file = io_->OpenFile(dir_.Sub("grove.data"), {.create = true, .direct = true});
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(file).value();
    MakePool(32);
  }

  void MakePool(uint32_t frames, double high_fraction = 0.5, uint32_t side_pages = 16,
                uint32_t max_frames = 0, uint32_t ghost_pages = 0) {
    pool_.reset();
    frames_ = frames;
    pool_ = std::make_unique<BufferPool>(
        BufferPoolOptions{.capacity_bytes = uint64_t{frames} * kPageSize,
                          .max_capacity_bytes = uint64_t{max_frames} * kPageSize,
                          .ghost_pages = ghost_pages,
                          .side_pool_pages = side_pages,
                          .high_retention_fraction = high_fraction},
        io_.get(), file_.get(), &epochs_);
    ASSERT_EQ(pool_->capacity_pages(), frames);
  }

  PageId Allocate() {
    auto id = allocator_.Allocate(1);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : kInvalidPageId;
  }

  // Writes `image` (one page) at page `id` of the data file.
  void WriteRaw(PageId id, const char* image) {
    AlignedBuffer buf(kPageSize);
    std::memcpy(buf.data(), image, kPageSize);
    ASSERT_OK(file_->Write(id * kPageSize, Slice(buf.data(), kPageSize)));
  }

  // Writes page `id` at `version` straight to the file, sealed with `epoch`, and records that
  // epoch as the page's latest (as a bulk load does). Epoch 0 means "the next checkpoint's".
  void WriteOnDisk(PageId id, uint32_t version, uint32_t epoch = 0) {
    if (epoch == 0) epoch = epoch_ + 1;
    AlignedBuffer img(kPageSize);
    page::Init(img.data(), PageType::kBlob, id);
    FillBody(img.data(), id, version);
    page::Seal(img.data(), epoch);
    WriteRaw(id, img.data());
    epochs_.RecordDirect(id, 1, epoch);
  }

  std::vector<PageId> OnDiskPages(size_t n) {
    std::vector<PageId> ids;
    for (size_t i = 0; i < n; ++i) {
      ids.push_back(Allocate());
      WriteOnDisk(ids.back(), 0);
    }
    return ids;
  }

  // A new dirty page at `version`.
  PageId NewFilledPage(uint32_t version, Retention retention = Retention::kNormal) {
    const PageId id = Allocate();
    auto g = pool_->NewPage(id, PageType::kBlob, retention);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    if (g.ok()) FillBody(g->mutable_data(), id, version);
    return id;
  }

  // The first half of a checkpoint, as the engine runs it minus the double-write file: snapshot
  // the dirty pages, write the sealed images and the changed epoch-map pages in place, sync, and
  // commit the epochs. The frames stay flushing until EndCheckpoint.
  Status SnapshotAndWrite(std::vector<PageId>* ids, AlignedBuffer* arena) {
    const uint32_t epoch = ++epoch_;
    *ids = pool_->SnapshotDirty(epoch);
    *arena = AlignedBuffer(std::max<size_t>(1, ids->size()) * kPageSize);
    pool_->CopySnapshot(0, ids->size(), arena->data());
    for (size_t i = 0; i < ids->size(); ++i) {
      GROVE_RETURN_IF_ERROR(
          file_->Write((*ids)[i] * kPageSize, Slice(arena->data() + i * kPageSize, kPageSize)));
    }
    GROVE_RETURN_IF_ERROR(epochs_.Stage(*ids, epoch, &allocator_));
    const auto maps = epochs_.StagedImages(*ids);
    for (auto& m : maps) {
      GROVE_RETURN_IF_ERROR(file_->Write(m.id * kPageSize, Slice(m.image.data(), kPageSize)));
    }
    GROVE_RETURN_IF_ERROR(file_->Sync());
    epochs_.Commit(*ids, epoch);
    return Status::Ok();
  }

  Status Checkpoint() {
    std::vector<PageId> ids;
    AlignedBuffer arena;
    Status s = SnapshotAndWrite(&ids, &arena);
    pool_->EndCheckpoint(s.ok());
    return s;
  }

  // Reads enough other pages that every unpinned, clean, kNormal page leaves the cache: at least
  // two full turns of the CLOCK hand.
  void Churn() {
    if (churn_.empty()) churn_ = OnDiskPages(4 * frames_);
    for (PageId id : churn_) {
      auto g = pool_->FetchRead(id, IoCause::kScan);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
    }
  }

  void ExpectVersion(PageId id, uint32_t version) {
    auto g = pool_->FetchRead(id);
    ASSERT_TRUE(g.ok()) << "page " << id << ": " << g.status().ToString();
    EXPECT_EQ(BodyVersion(g->data(), id), version) << "page " << id;
  }

  testing::TempDir dir_;
  std::shared_ptr<CountingBackend> io_;
  std::unique_ptr<File> file_;
  EpochTable epochs_;
  ExtentAllocator allocator_;
  std::unique_ptr<BufferPool> pool_;  // declared last: destroyed before what it uses
  uint32_t frames_ = 0;
  uint32_t epoch_ = 0;
  std::vector<PageId> churn_;
};

TEST_P(BufferPoolTest, CheckpointedPageIsReadBackBitForBit) {
  const PageId id = NewFilledPage(1);
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  std::vector<PageId> ids;
  AlignedBuffer arena;
  ASSERT_OK(SnapshotAndWrite(&ids, &arena));
  ASSERT_EQ(ids, std::vector<PageId>{id});
  const std::string sealed(arena.data(), kPageSize);
  EXPECT_TRUE(page::Verify(sealed.data(), id).ok());
  EXPECT_EQ(page::Epoch(sealed.data()), epoch_);
  pool_->EndCheckpoint(true);
  EXPECT_EQ(pool_->dirty_pages(), 0u);
  EXPECT_EQ(pool_->flushing_pages(), 0u);

  Churn();
  ASSERT_FALSE(pool_->IsResident(id)) << "a clean page must be evictable";
  const BufferPoolStats before = pool_->GetStats();
  const uint64_t reads_before = io_->reads();
  auto g = pool_->FetchRead(id);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(std::memcmp(g->data(), sealed.data(), kPageSize), 0);
  const BufferPoolStats after = pool_->GetStats();
  EXPECT_EQ(io_->reads() - reads_before, 1u);
  EXPECT_EQ(after.page_reads[static_cast<int>(IoCause::kDemand)] -
                before.page_reads[static_cast<int>(IoCause::kDemand)],
            1u);
  EXPECT_EQ(after.misses - before.misses, 1u);
}

TEST_P(BufferPoolTest, DirtyFramesAreNeverEvicted) {
  MakePool(16);
  const std::vector<PageId> on_disk = OnDiskPages(1);
  std::vector<PageId> dirty;
  for (uint32_t i = 0; i < 16; ++i) dirty.push_back(NewFilledPage(i));
  EXPECT_EQ(pool_->dirty_pages(), 16u);

  auto extra = pool_->NewPage(Allocate(), PageType::kBlob);
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.status().code(), StatusCode::kResourceExhausted) << extra.status().ToString();
  auto read = pool_->FetchRead(on_disk[0]);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted) << read.status().ToString();
  EXPECT_FALSE(pool_->IsResident(on_disk[0]));

  // Nothing was lost to make room.
  EXPECT_EQ(pool_->dirty_pages(), 16u);
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_TRUE(pool_->IsResident(dirty[i]));
    ExpectVersion(dirty[i], i);
  }
  EXPECT_EQ(pool_->GetStats().evictions, 0u);

  // Once checkpointed they are ordinary clean pages.
  ASSERT_OK(Checkpoint());
  EXPECT_TRUE(pool_->FetchRead(on_disk[0]).ok());
}

TEST_P(BufferPoolTest, FlushingFramesStayUntilEndCheckpoint) {
  MakePool(16);
  const std::vector<PageId> on_disk = OnDiskPages(1);
  for (uint32_t i = 0; i < 16; ++i) NewFilledPage(i);
  std::vector<PageId> ids;
  AlignedBuffer arena;
  ASSERT_OK(SnapshotAndWrite(&ids, &arena));
  ASSERT_EQ(ids.size(), 16u);
  EXPECT_EQ(pool_->dirty_pages(), 0u);
  EXPECT_EQ(pool_->flushing_pages(), 16u);

  // Clean now, but their in-place writes are not known to be durable until EndCheckpoint: a
  // read that needs a frame waits for it, for a bounded time.
  auto read = pool_->FetchRead(on_disk[0]);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted);

  // A checkpoint that ends while the read waits lets it through.
  std::thread ender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool_->EndCheckpoint(true);
  });
  auto waited = pool_->FetchRead(on_disk[0]);
  ender.join();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(pool_->flushing_pages(), 0u);
  for (uint32_t i = 0; i < 16; ++i) {
    if (pool_->IsResident(ids[i])) ExpectVersion(ids[i], i);
  }
}

TEST_P(BufferPoolTest, ASnapshotHoldsThePagesAsCapturedWhateverWritersDoAfter) {
  // The capture copies nothing while writers are paused; a writer that changes or frees a
  // captured page first copies it into a spare frame, and the rest are read from their frames.
  std::vector<PageId> ids_in;
  for (uint32_t i = 0; i < 4; ++i) ids_in.push_back(NewFilledPage(1));
  const uint64_t in_use = pool_->frames_in_use();
  auto ids = pool_->SnapshotDirty(++epoch_);
  ASSERT_EQ(ids, ids_in);
  for (int round = 2; round <= 3; ++round) {  // the second change finds it copied already
    auto w = pool_->FetchWrite(ids_in[1]);
    ASSERT_TRUE(w.ok());
    FillBody(w->mutable_data(), ids_in[1], round);
  }
  pool_->Discard(ids_in[2]);  // freed before the checkpoint wrote it
  EXPECT_EQ(pool_->GetStats().checkpoint_copies, 2u);
  EXPECT_EQ(pool_->GetStats().checkpoint_heap_copies, 0u);
  EXPECT_EQ(pool_->frames_in_use(), in_use + 2) << "the copies are frames of the pool";
  AlignedBuffer arena(ids_in.size() * kPageSize);
  pool_->CopySnapshot(0, ids_in.size(), arena.data());
  for (size_t i = 0; i < ids_in.size(); ++i) {
    const char* image = arena.data() + i * kPageSize;
    EXPECT_TRUE(page::Verify(image, ids_in[i]).ok()) << "page " << i << " is sealed";
    EXPECT_EQ(page::Epoch(image), epoch_);
    EXPECT_EQ(BodyVersion(image, ids_in[i]), 1) << "page " << i << " as it was captured";
  }
  {
    auto r = pool_->FetchRead(ids_in[1]);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(BodyVersion(r->data(), ids_in[1]), 3) << "the writer's change stays in the cache";
  }
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  pool_->EndCheckpoint(true);
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  EXPECT_EQ(pool_->frames_in_use(), in_use) << "the copies went back";
}

TEST_P(BufferPoolTest, FailedCheckpointRedirtiesItsPages) {
  std::vector<PageId> ids_in;
  for (uint32_t i = 0; i < 3; ++i) ids_in.push_back(NewFilledPage(1));
  AlignedBuffer arena;
  auto ids = pool_->SnapshotDirty(++epoch_);
  ASSERT_EQ(ids, ids_in);  // ascending page ids
  EXPECT_EQ(pool_->dirty_pages(), 0u);
  EXPECT_EQ(pool_->flushing_pages(), 3u);
  {
    // A writer changes a captured page while the checkpoint runs.
    auto w = pool_->FetchWrite(ids_in[1]);
    ASSERT_TRUE(w.ok());
    FillBody(w->mutable_data(), ids_in[1], 2);
  }
  EXPECT_EQ(pool_->dirty_pages(), 1u);

  pool_->EndCheckpoint(false);
  EXPECT_EQ(pool_->dirty_pages(), 3u) << "each page counted once";
  EXPECT_EQ(pool_->flushing_pages(), 0u);

  // The retry captures all three again, with the newest content.
  std::vector<PageId> again;
  ASSERT_OK(SnapshotAndWrite(&again, &arena));
  ASSERT_EQ(again, ids_in);
  EXPECT_EQ(BodyVersion(arena.data() + 0 * kPageSize, ids_in[0]), 1);
  EXPECT_EQ(BodyVersion(arena.data() + 1 * kPageSize, ids_in[1]), 2);
  {
    // Changed during a checkpoint that then succeeds: still dirty afterwards.
    auto w = pool_->FetchWrite(ids_in[2]);
    ASSERT_TRUE(w.ok());
    FillBody(w->mutable_data(), ids_in[2], 3);
  }
  pool_->EndCheckpoint(true);
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  std::vector<PageId> last;
  ASSERT_OK(SnapshotAndWrite(&last, &arena));
  EXPECT_EQ(last, std::vector<PageId>{ids_in[2]});
  pool_->EndCheckpoint(true);
}

TEST_P(BufferPoolTest, DamagedImagesAreDataLossAndNeverCached) {
  enum Damage { kBitFlip, kOtherId, kOlderEpoch, kNeverWritten, kBeyondEnd };
  for (Damage damage : {kBitFlip, kOtherId, kOlderEpoch, kNeverWritten, kBeyondEnd}) {
    SCOPED_TRACE(damage);
    PageId id = Allocate();
    AlignedBuffer img(kPageSize);
    switch (damage) {
      case kBitFlip:
        WriteOnDisk(id, 1);
        page::Init(img.data(), PageType::kBlob, id);
        FillBody(img.data(), id, 1);
        page::Seal(img.data(), epoch_ + 1);
        img.data()[1000] ^= 0x10;
        WriteRaw(id, img.data());
        break;
      case kOtherId:  // a misdirected write: a valid page, but not this one
        WriteOnDisk(id, 1);
        page::Init(img.data(), PageType::kBlob, id + 1000);
        FillBody(img.data(), id + 1000, 1);
        page::Seal(img.data(), epoch_ + 1);
        WriteRaw(id, img.data());
        break;
      case kOlderEpoch:  // a lost write: the newest image never reached the disk
        WriteOnDisk(id, 1, 7);
        epochs_.RecordDirect(id, 1, 8);
        break;
      case kNeverWritten:  // zeros inside the file
        WriteRaw(id, img.data());
        break;
      case kBeyondEnd:
        id = 100000;
        break;
    }
    const BufferPoolStats before = pool_->GetStats();
    const uint64_t reads_before = io_->reads();
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto g = pool_->FetchRead(id);
      ASSERT_FALSE(g.ok());
      EXPECT_TRUE(g.status().IsDataLoss()) << g.status().ToString();
      EXPECT_FALSE(pool_->IsResident(id));
    }
    auto w = pool_->FetchWrite(id);
    ASSERT_FALSE(w.ok());
    EXPECT_TRUE(w.status().IsDataLoss()) << w.status().ToString();
    // Each attempt read the disk again: the bad image was never cached.
    EXPECT_EQ(io_->reads() - reads_before, 3u);
    EXPECT_EQ(pool_->GetStats().checksum_failures - before.checksum_failures, 3u);
    EXPECT_EQ(pool_->GetStats().resident_pages, before.resident_pages);

    // A good image is then read normally.
    if (damage != kBeyondEnd) {
      WriteOnDisk(id, 2, damage == kOlderEpoch ? 8 : 0);
      ExpectVersion(id, 2);
    }
  }
}

TEST_P(BufferPoolTest, ConcurrentMissesOfOnePageReadItOnce) {
  constexpr int kThreads = 8;
  const std::vector<PageId> ids = OnDiskPages(20);
  for (PageId id : ids) {
    const BufferPoolStats before = pool_->GetStats();
    const uint64_t reads_before = io_->reads();
    std::latch start(kThreads);
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        auto g = pool_->FetchRead(id);
        if (g.ok() && BodyVersion(g->data(), id) == 0) good.fetch_add(1);
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(good.load(), kThreads);
    EXPECT_EQ(io_->reads() - reads_before, 1u) << "page " << id;
    const BufferPoolStats after = pool_->GetStats();
    EXPECT_EQ(after.page_reads[0] - before.page_reads[0], 1u);
    EXPECT_EQ(after.misses - before.misses, 1u);
    EXPECT_EQ(after.hits - before.hits, kThreads - 1u);
  }
}

TEST_P(BufferPoolTest, HighRetentionPagesSurviveScansWithinTheirShare) {
  MakePool(32, /*high_fraction=*/0.25);  // 8 frames for kHigh pages
  const std::vector<PageId> inner = OnDiskPages(16);
  const std::vector<PageId> scan = OnDiskPages(200);
  auto read = [&](PageId id, Retention r) {
    auto g = pool_->FetchRead(id, IoCause::kDemand, r);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
  };
  for (int i = 0; i < 8; ++i) read(inner[i], Retention::kHigh);
  for (int round = 0; round < 2; ++round) {
    for (PageId id : scan) read(id, Retention::kNormal);
  }
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(pool_->IsResident(inner[i])) << i;

  // Twice the share: now they compete, and eviction brings them back down to the share.
  for (int i = 8; i < 16; ++i) read(inner[i], Retention::kHigh);
  for (int round = 0; round < 4; ++round) {
    for (PageId id : scan) read(id, Retention::kNormal);
  }
  int resident = 0;
  for (PageId id : inner) resident += pool_->IsResident(id) ? 1 : 0;
  EXPECT_EQ(resident, 8);
}

// The share is a cap, not only a protection: beyond it the oldest inner page is the next victim,
// before CLOCK runs. With a share of 0 an inner page stays only until the next miss.
TEST_P(BufferPoolTest, HighRetentionShareIsACap) {
  MakePool(32, /*high_fraction=*/0.0);
  const std::vector<PageId> inner = OnDiskPages(3);
  const std::vector<PageId> leaves = OnDiskPages(3);
  auto read = [&](PageId id, Retention r) {
    auto g = pool_->FetchRead(id, IoCause::kDemand, r);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
  };
  read(inner[0], Retention::kHigh);
  EXPECT_TRUE(pool_->IsResident(inner[0]));
  read(leaves[0], Retention::kNormal);  // the pool has free frames: nothing is evicted yet
  for (int i = 0; i < 40; ++i) read(OnDiskPages(1)[0], Retention::kNormal);  // fill it
  EXPECT_FALSE(pool_->IsResident(inner[0])) << "over budget: evicted before any normal page";
  read(inner[1], Retention::kHigh);
  read(inner[2], Retention::kHigh);
  read(leaves[1], Retention::kNormal);
  EXPECT_FALSE(pool_->IsResident(inner[1])) << "the oldest inner page goes first";
  read(leaves[2], Retention::kNormal);
  EXPECT_FALSE(pool_->IsResident(inner[2]));
  EXPECT_TRUE(pool_->IsResident(leaves[1]));
  EXPECT_TRUE(pool_->IsResident(leaves[2]));
}

// The write room and the high-retention share may together cover the whole pool. When everything
// else is dirty, a clean inner page within its share is evicted rather than a read failing.
TEST_P(BufferPoolTest, AProtectedPageGoesWhenEveryOtherFrameIsDirty) {
  MakePool(16, /*high_fraction=*/0.5);  // 8 frames for kHigh pages
  const std::vector<PageId> inner = OnDiskPages(6);
  const std::vector<PageId> leaf = OnDiskPages(1);
  for (PageId id : inner) {
    auto g = pool_->FetchRead(id, IoCause::kDemand, Retention::kHigh);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
  }
  for (uint32_t i = 0; i < 10; ++i) NewFilledPage(i);
  EXPECT_EQ(pool_->dirty_pages(), 10u);
  auto read = pool_->FetchRead(leaf[0]);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  int resident = 0;
  for (PageId id : inner) resident += pool_->IsResident(id) ? 1 : 0;
  EXPECT_EQ(resident, 5) << "one protected page made room";
  EXPECT_EQ(pool_->dirty_pages(), 10u) << "no dirty page was lost";
}

// The same, with a hot inner page (a root is on every path) pinned over and over by another
// thread: whichever protected page the sweep saw first may be pinned again by the time it would
// go, so any clean, unpinned one must do. Once only the first one seen was tried, and the read
// failed with RESOURCE_EXHAUSTED whenever that one was the hot page.
TEST_P(BufferPoolTest, AnyUnpinnedProtectedPageGoesWhileAHotOneIsPinned) {
  MakePool(16, /*high_fraction=*/0.5);
  const std::vector<PageId> inner = OnDiskPages(2);  // [0] hot, [1] idle
  for (PageId id : inner) {
    auto g = pool_->FetchRead(id, IoCause::kDemand, Retention::kHigh);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
  }
  for (uint32_t i = 0; i < 14; ++i) NewFilledPage(i);
  ASSERT_EQ(pool_->dirty_pages(), 14u);
  std::atomic<bool> stop{false};
  std::thread hot([&] {
    while (!stop.load()) {
      auto g = pool_->FetchRead(inner[0], IoCause::kDemand, Retention::kHigh);
      if (!g.ok()) continue;  // evicted for a moment: read back on the next turn
    }
  });
  const std::vector<PageId> leaves = OnDiskPages(100);
  int failures = 0;
  for (PageId leaf : leaves) {
    // Each leaf needs a frame only a protected page can give; reading the idle page back
    // (evicting the previous leaf) sets up the next round.
    failures += pool_->FetchRead(leaf).ok() ? 0 : 1;
    failures += pool_->FetchRead(inner[1], IoCause::kDemand, Retention::kHigh).ok() ? 0 : 1;
  }
  stop.store(true);
  hot.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(pool_->dirty_pages(), 14u) << "no dirty page was lost";
}

TEST_P(BufferPoolTest, TryFetchReadBacksOffFromAnExclusiveLatch) {
  const std::vector<PageId> ids = OnDiskPages(2);
  // Latches are held by another thread: a thread must not try-lock a latch it holds itself.
  auto hold = [&](bool exclusive, auto&& check) {
    std::latch held(1), done(1);
    std::atomic<bool> ok{false};
    std::thread holder([&] {
      if (exclusive) {
        auto g = pool_->FetchWrite(ids[0]);
        ok = g.ok();
        held.count_down();
        done.wait();
      } else {
        auto g = pool_->FetchRead(ids[0]);
        ok = g.ok();
        held.count_down();
        done.wait();
      }
    });
    held.wait();
    EXPECT_TRUE(ok.load());
    check();
    done.count_down();
    holder.join();
  };
  hold(true, [&] {
    auto t = pool_->TryFetchRead(ids[0]);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_FALSE(*t) << "busy must come back as an empty guard";
  });
  hold(false, [&] {
    auto t = pool_->TryFetchRead(ids[0]);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(*t) << "readers do not block readers";
    EXPECT_EQ(BodyVersion(t->data(), ids[0]), 0);
  });
  // Uncontended, and a missing page is read.
  auto t = pool_->TryFetchRead(ids[1]);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(*t);
  EXPECT_EQ(BodyVersion(t->data(), ids[1]), 0);
}

TEST_P(BufferPoolTest, LoadManyReadsTheMissingPagesInOneSubmission) {
  const std::vector<PageId> ids = OnDiskPages(12);
  for (int i = 0; i < 12; i += 3) ASSERT_TRUE(pool_->FetchRead(ids[i]).ok());
  const BufferPoolStats before = pool_->GetStats();
  const uint64_t reads_before = io_->reads(), submits_before = io_->submits();
  ASSERT_OK(pool_->LoadMany(ids, IoCause::kScan));
  // The 8 missing pages lie in 4 runs of 2 between the cached ones: one IO per run.
  EXPECT_EQ(io_->reads() - reads_before, 4u);
  EXPECT_EQ(io_->submits() - submits_before, 1u);
  const BufferPoolStats after = pool_->GetStats();
  EXPECT_EQ(after.misses - before.misses, 8u);
  EXPECT_EQ(after.hits - before.hits, 4u);
  EXPECT_EQ(after.page_reads[static_cast<int>(IoCause::kScan)] -
                before.page_reads[static_cast<int>(IoCause::kScan)],
            8u);
  for (PageId id : ids) {
    EXPECT_TRUE(pool_->IsResident(id));
    ExpectVersion(id, 0);
  }
  EXPECT_EQ(io_->reads() - reads_before, 4u) << "the loaded pages are hits now";
}

// An extent (a huge leaf, a page group's segment) is one IO however long it is, and every page in
// it is still verified on its own: a damaged page fails the call and stays out, its neighbours in
// the same IO are loaded all the same.
TEST_P(BufferPoolTest, LoadManyReadsAnExtentWithOneIoAndVerifiesEachPage) {
  auto first = allocator_.Allocate(16);
  ASSERT_TRUE(first.ok());
  std::vector<PageId> extent;
  for (PageId id = *first; id < *first + 16; ++id) {
    WriteOnDisk(id, 3);
    extent.push_back(id);
  }
  const uint64_t reads_before = io_->reads();
  ASSERT_OK(pool_->LoadMany(extent, IoCause::kDemand));
  EXPECT_EQ(io_->reads() - reads_before, 1u);
  for (PageId id : extent) ExpectVersion(id, 3);

  // Out of order, the same pages are separate reads.
  for (PageId id : extent) pool_->Discard(id);
  std::vector<PageId> shuffled = {extent[3], extent[1], extent[2], extent[0]};
  const uint64_t reads_mid = io_->reads();
  ASSERT_OK(pool_->LoadMany(shuffled, IoCause::kDemand));
  EXPECT_EQ(io_->reads() - reads_mid, 3u) << "pages 1 and 2 are one run";

  for (PageId id : extent) pool_->Discard(id);
  AlignedBuffer zeros(kPageSize);
  WriteRaw(extent[7], zeros.data());
  const uint64_t failures = pool_->GetStats().checksum_failures;
  Status s = pool_->LoadMany(extent, IoCause::kScan);
  EXPECT_TRUE(s.IsDataLoss()) << s.ToString();
  EXPECT_EQ(pool_->GetStats().checksum_failures - failures, 1u);
  for (size_t i = 0; i < extent.size(); ++i) {
    EXPECT_EQ(pool_->IsResident(extent[i]), i != 7) << i;
    if (i != 7) ExpectVersion(extent[i], 3);
  }
}

TEST_P(BufferPoolTest, DiscardDropsCleanAndDirtyPages) {
  const std::vector<PageId> on_disk = OnDiskPages(1);
  ASSERT_TRUE(pool_->FetchRead(on_disk[0]).ok());
  pool_->Discard(on_disk[0]);
  EXPECT_FALSE(pool_->IsResident(on_disk[0]));
  const uint64_t reads_before = io_->reads();
  ExpectVersion(on_disk[0], 0);
  EXPECT_EQ(io_->reads() - reads_before, 1u);

  const PageId dirty = NewFilledPage(1);
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  pool_->Discard(dirty);
  EXPECT_FALSE(pool_->IsResident(dirty));
  EXPECT_EQ(pool_->dirty_pages(), 0u);

  const PageId by_guard = Allocate();
  {
    auto g = pool_->NewPage(by_guard, PageType::kBlob);
    ASSERT_TRUE(g.ok());
    FillBody(g->mutable_data(), by_guard, 1);
    g->Discard();
    EXPECT_FALSE(*g);
  }
  EXPECT_FALSE(pool_->IsResident(by_guard));
  EXPECT_EQ(pool_->dirty_pages(), 0u);
  pool_->Discard(by_guard);  // not resident: nothing happens

  auto ids = pool_->SnapshotDirty(++epoch_);
  EXPECT_TRUE(ids.empty()) << "a discarded page is never written";
  pool_->EndCheckpoint(true);
}

TEST_P(BufferPoolTest, NewPageReplacesAStaleResidentCopy) {
  // A reader faulted the page in after it was freed; the allocator hands its id out again.
  const std::vector<PageId> ids = OnDiskPages(1);
  ASSERT_TRUE(pool_->FetchRead(ids[0]).ok());
  auto g = pool_->NewPage(ids[0], PageType::kBlob);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(page::Id(g->data()), ids[0]);
  EXPECT_EQ(page::Type(g->data()), static_cast<uint16_t>(PageType::kBlob));
  for (size_t i = kPageHeaderSize; i < kPageSize; ++i) ASSERT_EQ(g->data()[i], 0) << i;
  g->Release();
  EXPECT_EQ(pool_->dirty_pages(), 1u);
  EXPECT_EQ(pool_->GetStats().resident_pages, 1u);
}

TEST_P(BufferPoolTest, ConfirmedPrefetchesAreUsedAndNotReadAgain) {
  const std::vector<PageId> ids = OnDiskPages(4);
  const BufferPoolStats before = pool_->GetStats();
  const uint64_t reads_before = io_->reads();
  {
    PrefetchBatch batch(pool_.get());
    EXPECT_EQ(batch.Issue(ids), 4u);
    EXPECT_EQ(batch.issued(), 4u);
    for (PageId id : ids) {
      auto g = pool_->FetchRead(id, IoCause::kDemand, Retention::kNormal, &batch);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      EXPECT_EQ(BodyVersion(g->data(), id), 0);
    }
  }
  const BufferPoolStats after = pool_->GetStats();
  EXPECT_EQ(io_->reads() - reads_before, 4u);
  EXPECT_EQ(after.prefetch_issued - before.prefetch_issued, 4u);
  EXPECT_EQ(after.prefetch_used - before.prefetch_used, 4u);
  EXPECT_EQ(after.prefetch_wasted - before.prefetch_wasted, 0u);
  EXPECT_EQ(after.page_reads[static_cast<int>(IoCause::kPrefetch)] -
                before.page_reads[static_cast<int>(IoCause::kPrefetch)],
            4u);
  EXPECT_EQ(after.page_reads[static_cast<int>(IoCause::kDemand)],
            before.page_reads[static_cast<int>(IoCause::kDemand)]);
  for (PageId id : ids) EXPECT_TRUE(pool_->IsResident(id));
}

TEST_P(BufferPoolTest, UnconfirmedPrefetchesAreWasted) {
  const std::vector<PageId> ids = OnDiskPages(4);
  const BufferPoolStats before = pool_->GetStats();
  {
    PrefetchBatch batch(pool_.get());
    ASSERT_EQ(batch.Issue(ids), 4u);
    ASSERT_TRUE(pool_->FetchRead(ids[0], IoCause::kDemand, Retention::kNormal, &batch).ok());
    // Read without the batch: a normal read; the speculative copy does not count as used.
    ASSERT_TRUE(pool_->FetchRead(ids[1]).ok());
  }
  const BufferPoolStats after = pool_->GetStats();
  EXPECT_EQ(after.prefetch_used - before.prefetch_used, 1u);
  EXPECT_EQ(after.prefetch_wasted - before.prefetch_wasted, 3u);
  EXPECT_FALSE(pool_->IsResident(ids[2])) << "unconfirmed pages never enter the cache";
  EXPECT_FALSE(pool_->IsResident(ids[3]));

  // The side pool got its buffers back: a full-size batch can be issued again.
  PrefetchBatch again(pool_.get());
  EXPECT_EQ(again.Issue(OnDiskPages(16)), 16u);
}

TEST_P(BufferPoolTest, OutdatedPrefetchedImageIsNotUsed) {
  io_->set_synchronous_submit(true);  // the speculative read completes inside Issue()
  const std::vector<PageId> ids = OnDiskPages(1);
  const BufferPoolStats before = pool_->GetStats();
  const uint64_t reads_before = io_->reads();
  {
    PrefetchBatch batch(pool_.get());
    ASSERT_EQ(batch.Issue(ids), 1u);
    // The page is rewritten by a later checkpoint after the speculative read.
    WriteOnDisk(ids[0], 5, epoch_ + 2);
    auto g = pool_->FetchRead(ids[0], IoCause::kDemand, Retention::kNormal, &batch);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(BodyVersion(g->data(), ids[0]), 5);
  }
  const BufferPoolStats after = pool_->GetStats();
  EXPECT_EQ(io_->reads() - reads_before, 2u);
  EXPECT_EQ(after.prefetch_used - before.prefetch_used, 0u);
  EXPECT_EQ(after.prefetch_wasted - before.prefetch_wasted, 1u);
  EXPECT_EQ(after.page_reads[static_cast<int>(IoCause::kDemand)] -
                before.page_reads[static_cast<int>(IoCause::kDemand)],
            1u);
  EXPECT_EQ(after.checksum_failures, before.checksum_failures)
      << "a stale speculative image is not damage";
}

TEST_P(BufferPoolTest, ResidentPagesAreNotPrefetched) {
  const std::vector<PageId> ids = OnDiskPages(3);
  ASSERT_TRUE(pool_->FetchRead(ids[0]).ok());
  const uint64_t reads_before = io_->reads();
  PrefetchBatch batch(pool_.get());
  EXPECT_EQ(batch.Issue(ids), 2u);
  EXPECT_EQ(batch.Issue(ids), 0u) << "pages already in the batch are not read twice";
  EXPECT_EQ(batch.Issue({kInvalidPageId}), 0u);
  EXPECT_EQ(io_->reads() - reads_before, 2u);
}

// A batch that runs out of side-pool buffers says how far it got, so a scan can offer the rest
// again (ScanReadahead looks only at pages past the last one looked at).
TEST_P(BufferPoolTest, IssueSaysHowFarItGotWhenTheSidePoolRunsOut) {
  const std::vector<PageId> ids = OnDiskPages(20);  // the side pool has 16 buffers
  ASSERT_TRUE(pool_->FetchRead(ids[1]).ok());       // resident: looked at, not read
  size_t considered = 0;
  PrefetchBatch batch(pool_.get());
  EXPECT_EQ(batch.Issue(ids.data(), ids.size(), &considered), 16u);
  EXPECT_EQ(considered, 17u) << "16 reads and one resident page, then no buffer for the 18th";
  // Once the batch gives its buffers back, the rest can be offered.
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool_->FetchRead(ids[i], IoCause::kDemand, Retention::kNormal, &batch).ok());
  }
  batch.Retain([&](PageId id) { return id >= ids[4]; });
  EXPECT_EQ(batch.Issue(ids.data() + considered, ids.size() - considered, &considered), 3u);
  EXPECT_EQ(considered, 3u);
}

// Readers, a writer and a checkpointer on a working set ten times the cache: every read sees a
// consistent image of the page it asked for (a pinned frame is never reused), and at the end the
// disk holds the newest version of every page.
TEST_P(BufferPoolTest, StressReadersWriterAndCheckpoints) {
  MakePool(32, 0.25);
  const std::vector<PageId> ids = OnDiskPages(320);
  std::vector<std::atomic<uint32_t>> version(ids.size());
  std::shared_mutex writers;  // the write gate: checkpoints snapshot with writers paused
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  auto error = [&](const std::string& what) {
    if (errors.fetch_add(1) < 5) ADD_FAILURE() << what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      while (!stop.load()) {
        const size_t i = rng() % ids.size();
        const Retention r = i % 10 == 0 ? Retention::kHigh : Retention::kNormal;
        const uint32_t at_least = version[i].load();
        auto g = pool_->FetchRead(ids[i], IoCause::kDemand, r);
        if (!g.ok()) {
          if (!g.status().IsResourceExhausted()) error(g.status().ToString());
          continue;
        }
        const int64_t v = BodyVersion(g->data(), ids[i]);
        if (v < at_least)
          error("page " + std::to_string(ids[i]) + ": version " + std::to_string(v));
      }
    });
  }
  threads.emplace_back([&] {  // writer: a few hot pages, so that dirty pages stay bounded
    std::mt19937_64 rng(99);
    for (int n = 0; n < 3000 && errors.load() == 0; ++n) {
      const size_t i = rng() % 8 * 40;
      std::shared_lock gate(writers);
      auto w = pool_->FetchWrite(ids[i]);
      if (!w.ok()) {
        if (!w.status().IsResourceExhausted()) error(w.status().ToString());
        continue;
      }
      const uint32_t v = version[i].load() + 1;
      FillBody(w->mutable_data(), ids[i], v);
      version[i].store(v);
    }
    stop = true;
  });
  threads.emplace_back([&] {  // checkpointer
    while (!stop.load()) {
      std::vector<PageId> captured;
      AlignedBuffer arena;
      Status s;
      {
        std::unique_lock gate(writers);
        s = SnapshotAndWrite(&captured, &arena);
      }
      pool_->EndCheckpoint(s.ok());
      if (!s.ok()) error(s.ToString());
    }
  });
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  ASSERT_OK(Checkpoint());
  EXPECT_EQ(pool_->dirty_pages(), 0u);

  // A fresh pool reads everything from disk.
  MakePool(32);
  for (size_t i = 0; i < ids.size(); ++i) ExpectVersion(ids[i], version[i].load());
}

// A pool whose limit moves (SetCapacityPages): lowered, it evicts down to it at once; raised, it
// grows by taking free frames on misses; never past the frames it was built with.
TEST_P(BufferPoolTest, ALoweredLimitEvictsDownToItAndARaisedOneLetsThePoolGrow) {
  MakePool(16, 0.5, 16, /*max_frames=*/64);
  EXPECT_EQ(pool_->max_capacity_pages(), 64u);
  const std::vector<PageId> pages = OnDiskPages(80);
  for (PageId id : pages) ASSERT_TRUE(pool_->FetchRead(id).ok());
  EXPECT_EQ(pool_->frames_in_use(), 16u) << "at the limit a miss reuses a victim's frame";
  EXPECT_EQ(pool_->SetCapacityPages(48), 16u);
  EXPECT_EQ(pool_->capacity_pages(), 48u);
  for (PageId id : pages) ASSERT_TRUE(pool_->FetchRead(id).ok());
  EXPECT_EQ(pool_->frames_in_use(), 48u);
  EXPECT_EQ(pool_->GetStats().resident_pages, 48u);
  EXPECT_EQ(pool_->GetStats().capacity_pages, 48u);
  // Lowered: clean, unpinned frames go at once.
  EXPECT_EQ(pool_->SetCapacityPages(20), 20u);
  EXPECT_EQ(pool_->GetStats().resident_pages, 20u);
  for (PageId id : pages) ExpectVersion(id, 0);
  EXPECT_EQ(pool_->frames_in_use(), 20u);
  // Clamped to what the pool was built with.
  EXPECT_EQ(pool_->SetCapacityPages(1000), 20u);
  EXPECT_EQ(pool_->capacity_pages(), 64u);
}

// Frames that cannot go (dirty, pinned) stay; the limit is soft rather than a failed read, and
// the pool comes down to it once they can go.
TEST_P(BufferPoolTest, DirtyFramesOverALoweredLimitStayUntilTheyCanGo) {
  MakePool(32, 0.5, 16, /*max_frames=*/32);
  std::vector<PageId> dirty;
  for (uint32_t i = 0; i < 24; ++i) dirty.push_back(NewFilledPage(i));
  EXPECT_EQ(pool_->SetCapacityPages(16), 24u) << "dirty frames are never evicted";
  // Every frame under the limit is dirty: a read takes a frame above it.
  const std::vector<PageId> on_disk = OnDiskPages(2);
  ASSERT_TRUE(pool_->FetchRead(on_disk[0]).ok());
  EXPECT_EQ(pool_->frames_in_use(), 25u);
  for (uint32_t i = 0; i < 24; ++i) ExpectVersion(dirty[i], i);
  ASSERT_OK(Checkpoint());
  EXPECT_EQ(pool_->SetCapacityPages(16), 16u);
  for (uint32_t i = 0; i < 24; ++i) ExpectVersion(dirty[i], i);
  EXPECT_LE(pool_->frames_in_use(), 16u);
}

// Ghost hits: read misses of pages evicted within the last ghost_pages evictions; none without a
// ghost set, for pages never cached, or for writes.
TEST_P(BufferPoolTest, GhostHitsCountMissesOfPagesEvictedLately) {
  for (uint32_t ghost : {0u, 64u}) {
    MakePool(16, 0.5, 16, 0, ghost);
    const std::vector<PageId> pages = OnDiskPages(24);
    for (PageId id : pages) ASSERT_TRUE(pool_->FetchRead(id).ok());
    EXPECT_EQ(pool_->ghost_hits(), 0u) << "first reads";
    const uint64_t misses = pool_->GetStats().misses;
    for (PageId id : pages) ASSERT_TRUE(pool_->FetchRead(id).ok());
    const uint64_t again = pool_->GetStats().misses - misses;
    ASSERT_GT(again, 0u);
    EXPECT_EQ(pool_->ghost_hits(), ghost == 0 ? 0 : again) << "ghost_pages " << ghost;
    // A write's miss is not counted.
    const uint64_t ghosts = pool_->ghost_hits();
    const uint64_t before = pool_->GetStats().misses;
    for (PageId id : pages) ASSERT_TRUE(pool_->FetchWrite(id).ok());
    ASSERT_GT(pool_->GetStats().misses, before);
    EXPECT_EQ(pool_->ghost_hits(), ghosts);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BufferPoolTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         [](const ::testing::TestParamInfo<IoBackendKind>& info) {
                           return info.param == IoBackendKind::kUring ? "uring" : "psync";
                         });

}  // namespace
}  // namespace grove
