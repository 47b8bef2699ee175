#include "index/btree/btree_harness.h"

#include <atomic>

#include <fmt/format.h>

namespace grove::testing {

namespace {

class UnlimitedRoom final : public WriteRoom {
 public:
  Status Extend(uint64_t pages) override {
    pages_ += pages;
    return Status::Ok();
  }
  uint64_t reserved() const override { return pages_; }

 private:
  std::atomic<uint64_t> pages_{0};
};

}  // namespace

WriteContext TestWrite() {
  static UnlimitedRoom room;
  return WriteContext{1, &room};
}

// Seals and writes bulk-load runs the way the engine's writer does: the next checkpoint's epoch,
// recorded in the epoch table at once.
class BTreeHarness::Writer final : public DirectPageWriter {
 public:
  explicit Writer(BTreeHarness* h) : h_(h) {}
  Status WriteRun(PageId first, size_t count, char* images, IoCause cause) override {
    const uint32_t epoch = h_->epoch_ + 1;
    for (size_t i = 0; i < count; ++i) page::Seal(images + i * kPageSize, epoch);
    GROVE_RETURN_IF_ERROR(h_->file_->Write(first * kPageSize, Slice(images, count * kPageSize)));
    h_->epochs_.RecordDirect(first, count, epoch);
    h_->pool_->RecordWrites(cause, count);
    return Status::Ok();
  }

 private:
  BTreeHarness* const h_;
};

std::string VerifyResult::Summary() const {
  std::string s = fmt::format("{} problems", problems.size());
  for (size_t i = 0; i < problems.size() && i < 5; ++i) s += "; " + problems[i];
  return s;
}

BTreeHarness::BTreeHarness(HarnessConfig config)
    : config_(std::move(config)), registry_((*IndexRegistry::Builtins())) {
  auto io = NewIoBackend({.kind = config_.backend}, nullptr);
  EXPECT_TRUE(io.ok()) << io.status().ToString();
  if (!io.ok()) return;
  io_ = *io;
  auto file = io_->OpenFile(dir_.Sub("grove.data"), {.create = true, .direct = true});
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return;
  file_ = std::move(file).value();
  options_.data_dir = dir_.path();
  options_.max_key_bytes = config_.max_key_bytes;
  options_.inline_value_bytes = config_.inline_value_bytes;
  options_.logger = NewNullLogger();
  writer_ = std::make_unique<Writer>(this);
  pool_ = std::make_unique<BufferPool>(
      BufferPoolOptions{.capacity_bytes = uint64_t{config_.frames} * kPageSize}, io_.get(),
      file_.get(), &epochs_);
  ctx_ = IndexContext{pool_.get(), &allocator_,          io_.get(), writer_.get(), dir_.path(),
                      &options_,   options_.logger.get()};
}

BTreeHarness::~BTreeHarness() {
  index_.reset();  // before the pool it uses
  pool_.reset();
}

Status BTreeHarness::Create() {
  GROVE_ASSIGN_OR_RETURN(resolved_, registry_.Resolve("btree", config_.params));
  GROVE_ASSIGN_OR_RETURN(index_, registry_.Find("btree")->create(ctx_, resolved_));
  return Status::Ok();
}

Status BTreeHarness::Reopen() {
  const std::string metadata = index_->SerializeMetadata();
  GROVE_RETURN_IF_ERROR(Checkpoint());
  index_.reset();
  pool_ = std::make_unique<BufferPool>(
      BufferPoolOptions{.capacity_bytes = uint64_t{config_.frames} * kPageSize}, io_.get(),
      file_.get(), &epochs_);
  ctx_.pool = pool_.get();
  GROVE_ASSIGN_OR_RETURN(index_, registry_.Find("btree")->open(ctx_, resolved_, metadata));
  return Status::Ok();
}

Status BTreeHarness::Checkpoint() {
  const uint32_t epoch = ++epoch_;
  const std::vector<PageId> ids = pool_->SnapshotDirty(epoch);
  Status s = [&]() -> Status {
    AlignedBuffer image(kPageSize);
    for (size_t i = 0; i < ids.size(); ++i) {
      pool_->CopySnapshot(i, 1, image.data());
      GROVE_RETURN_IF_ERROR(file_->Write(ids[i] * kPageSize, Slice(image.data(), kPageSize)));
    }
    GROVE_RETURN_IF_ERROR(epochs_.Stage(ids, epoch, &allocator_));
    const auto maps = epochs_.StagedImages(ids);
    for (auto& m : maps) {
      GROVE_RETURN_IF_ERROR(file_->Write(m.id * kPageSize, Slice(m.image.data(), kPageSize)));
    }
    GROVE_RETURN_IF_ERROR(file_->Sync());
    epochs_.Commit(ids, epoch);
    return Status::Ok();
  }();
  pool_->EndCheckpoint(s.ok());
  return s;
}

void BTreeHarness::DropCleanPages() {
  for (PageId p = 0; p < allocator_.high_water_pages(); ++p) {
    if (pool_->IsResident(p)) pool_->Discard(p);
  }
}

VerifyResult BTreeHarness::Verify() {
  class Collector final : public IndexVerifier {
   public:
    explicit Collector(VerifyResult* r) : r_(r) {}
    void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
      for (PageId p = first; p < first + count; ++p) {
        if (!r_->pages.insert(p).second) {
          Problem(fmt::format("harness: page {} claimed twice (as {})", p, what));
        }
      }
    }
    void OnCell(Slice key, Slice cell) override { r_->cells.emplace_back(key, cell); }
    void OnShadowedCell(Slice key, Slice cell) override {
      Problem(fmt::format("harness: btree reported a shadowed cell ({} bytes)", cell.size()));
    }
    void Problem(std::string description) override {
      r_->problems.push_back(std::move(description));
    }

   private:
    VerifyResult* const r_;
  };
  VerifyResult r;
  Collector c(&r);
  Status s = index_->Verify(&c);
  if (!s.ok()) r.problems.push_back("Verify returned " + s.ToString());
  std::set<PageId> maps(epochs_.map_page_ids().begin(), epochs_.map_page_ids().end());
  for (PageId p : r.pages) {
    if (allocator_.IsFree(p)) r.problems.push_back(fmt::format("harness: page {} is free", p));
  }
  uint64_t leaked = 0;
  PageId first_leak = 0;
  for (PageId p = ExtentAllocator::kFirstDataPage; p < allocator_.high_water_pages(); ++p) {
    if (!allocator_.IsFree(p) && !r.pages.count(p) && !maps.count(p) && leaked++ == 0) {
      first_leak = p;
    }
  }
  if (leaked > 0) {
    r.problems.push_back(fmt::format("harness: {} pages leaked (first {})", leaked, first_leak));
  }
  for (size_t i = 1; i < r.cells.size(); ++i) {
    if (!(r.cells[i - 1].first < r.cells[i].first)) {
      r.problems.push_back(fmt::format("harness: cells out of order at #{}", i));
      break;
    }
  }
  return r;
}

void BTreeHarness::Put(const std::string& key, const std::string& cell) {
  std::optional<std::string> old;
  const Status s = index_->Put(TestWrite(), key, cell, &old);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

bool BTreeHarness::Delete(const std::string& key) {
  std::optional<std::string> old;
  const Status s = index_->Delete(TestWrite(), key, &old);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return old.has_value();
}

std::optional<std::string> BTreeHarness::Get(const std::string& key) {
  std::string cell;
  auto found = index_->Get(key, &cell);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  if (!found.ok() || !*found) return std::nullopt;
  return cell;
}

std::vector<std::pair<std::string, std::string>> BTreeHarness::Scan(const CursorOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  auto cursor = index_->NewCursor(options);
  EXPECT_TRUE(cursor.ok()) << cursor.status().ToString();
  if (!cursor.ok()) return out;
  for (; (*cursor)->Valid(); (*cursor)->Next()) {
    out.emplace_back((*cursor)->key(), (*cursor)->cell());
  }
  EXPECT_TRUE((*cursor)->status().ok()) << (*cursor)->status().ToString();
  return out;
}

uint64_t BTreeHarness::AllocatedPages() const {
  return allocator_.high_water_pages() - ExtentAllocator::kFirstDataPage - allocator_.free_pages() -
         epochs_.map_page_ids().size();
}

std::vector<std::vector<PageId>> BTreeHarness::Levels() {
  std::vector<std::vector<PageId>> levels{{btree()->root()}};
  for (;;) {
    std::vector<PageId> next;
    for (PageId id : levels.back()) {
      auto g = pool_->FetchRead(id);
      EXPECT_TRUE(g.ok()) << g.status().ToString();
      if (!g.ok()) return levels;
      if (page::Type(g->data()) != static_cast<uint16_t>(core::kInnerPage)) return levels;
      const core::InnerNodeView n(g->data());
      for (int i = 0; i < n.count(); ++i) next.push_back(n.child(i));
    }
    levels.push_back(std::move(next));
  }
}

void ExpectClean(BTreeHarness& h, const Model& model) {
  const VerifyResult r = h.Verify();
  EXPECT_TRUE(r.problems.empty()) << r.Summary();
  EXPECT_TRUE(r.cells == Entries(model.begin(), model.end()))
      << "verify saw " << r.cells.size() << " cells, model has " << model.size();
  const IndexStats s = h.index()->GetStats();
  EXPECT_EQ(s.entries, model.size());
  EXPECT_EQ(s.leaf_pages + s.inner_pages, r.pages.size());
  EXPECT_EQ(h.AllocatedPages(), r.pages.size()) << "pages the allocator holds for the tree";
}

}  // namespace grove::testing
