#include "conformance/sorted_variant.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "buffer/buffer_pool.h"
#include "index/core/cursor.h"
#include "index/core/tree.h"
#include "page/extent_allocator.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

constexpr PageType kArrayLeaf = static_cast<PageType>(40);
constexpr size_t kHeader = 28;
constexpr size_t kCapacity = kPageSize - kHeader;

struct Item {
  std::string key, cell;
  size_t bytes() const { return 4 + key.size() + cell.size(); }
};

std::vector<Item> Decode(const char* page) {
  std::vector<Item> out;
  const uint16_t count = DecodeFixed16(page + 24);
  const char* p = page + kHeader;
  for (uint16_t i = 0; i < count; ++i) {
    const uint16_t k = DecodeFixed16(p), c = DecodeFixed16(p + 2);
    out.push_back({std::string(p + 4, k), std::string(p + 4 + k, c)});
    p += 4 + k + c;
  }
  return out;
}

size_t BytesOf(const std::vector<Item>& entries) {
  size_t b = 0;
  for (const Item& e : entries) b += e.bytes();
  return b;
}

// Writes `entries` into the page after its header. REQUIRES: BytesOf(entries) <= kCapacity.
void Encode(const std::vector<Item>& entries, char* page) {
  EncodeFixed16(page + 24, static_cast<uint16_t>(entries.size()));
  EncodeFixed16(page + 26, static_cast<uint16_t>(BytesOf(entries)));
  char* p = page + kHeader;
  for (const Item& e : entries) {
    EncodeFixed16(p, static_cast<uint16_t>(e.key.size()));
    EncodeFixed16(p + 2, static_cast<uint16_t>(e.cell.size()));
    std::memcpy(p + 4, e.key.data(), e.key.size());
    std::memcpy(p + 4 + e.key.size(), e.cell.data(), e.cell.size());
    p += e.bytes();
  }
}

// Checks what Decode relies on; "" or the first problem.
std::string Check(const char* page, const core::Fences& fences) {
  if (page::Type(page) != static_cast<uint16_t>(kArrayLeaf)) return "not a sorted-array leaf";
  const uint16_t count = DecodeFixed16(page + 24), bytes = DecodeFixed16(page + 26);
  if (bytes > kCapacity) return "more bytes than a page holds";
  size_t off = 0;
  std::string prev;
  for (uint16_t i = 0; i < count; ++i) {
    if (off + 4 > bytes) return "entry header past the end";
    const char* p = page + kHeader + off;
    const size_t k = DecodeFixed16(p), c = DecodeFixed16(p + 2);
    if (off + 4 + k + c > bytes) return "entry past the end";
    const std::string key(p + 4, k);
    if (i > 0 && !(prev < key)) return "keys out of order";
    if (!fences.Contains(key)) return "key outside the leaf's fences";
    prev = key;
    off += 4 + k + c;
  }
  return off == bytes ? "" : "byte count does not add up";
}

std::vector<Item>::iterator Find(std::vector<Item>& entries, Slice key) {
  return std::lower_bound(entries.begin(), entries.end(), key,
                          [](const Item& e, Slice k) { return Slice(e.key) < k; });
}

class SortedIndex final : public Index {
 public:
  explicit SortedIndex(const IndexContext& ctx) : ctx_(ctx), pool_(ctx.pool) {}

  static core::TreeOptions CoreOptions(const IndexContext& ctx) {
    core::TreeOptions o;
    o.name = "sorted";
    o.max_key = ctx.options->max_key_bytes;
    return o;
  }

  Status Init(Slice* metadata) {
    if (metadata == nullptr) {
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, NewLeaf());
      GROVE_ASSIGN_OR_RETURN(
          tree_, core::BTreeCore::Create(ctx_, CoreOptions(ctx_), core::EncodeChild(leaf.id())));
      return Status::Ok();
    }
    GROVE_ASSIGN_OR_RETURN(tree_, core::BTreeCore::Open(ctx_, CoreOptions(ctx_), metadata));
    uint64_t entries, leaves;
    if (!GetVarint64(metadata, &entries) || !GetVarint64(metadata, &leaves) || !metadata->empty()) {
      return Status::DataLoss("sorted: malformed metadata");
    }
    entries_ = entries;
    leaves_ = leaves;
    return Status::Ok();
  }

  StatusOr<bool> Get(Slice key, std::string* cell) override {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard leaf, ReadLeaf(key, core::Seek::kAtOrAfter, nullptr));
    std::vector<Item> entries = Decode(leaf.data());
    auto it = Find(entries, key);
    if (it == entries.end() || it->key != key) return false;
    *cell = std::move(it->cell);
    return true;
  }

  Status Put(const WriteContext&, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override {
    return Change(key, [&](std::vector<Item>* entries) {
      auto it = Find(*entries, key);
      if (it != entries->end() && it->key == key) {
        old_cell->emplace(it->cell);
        it->cell.assign(cell);
        return 0;
      }
      entries->insert(it, Item{std::string(key), std::string(cell)});
      return 1;
    });
  }

  Status Delete(const WriteContext&, Slice key, std::optional<std::string>* old_cell) override {
    return Change(key, [&](std::vector<Item>* entries) {
      auto it = Find(*entries, key);
      if (it == entries->end() || it->key != key) return 0;
      old_cell->emplace(it->cell);
      entries->erase(it);
      return -1;
    });
  }

  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;

  Status BulkLoad(const BulkSource& source) override {
    if (entries_.load() != 0 || leaves_.load() != 1) {
      return Status::FailedPrecondition("bulk load needs an empty index");
    }
    std::vector<core::ChildRef> leaves;
    std::vector<Item> cur;
    std::string key, cell;
    uint64_t n = 0;
    core::RunWriter run(ctx_);
    auto flush = [&](const std::string& low) -> Status {
      GROVE_ASSIGN_OR_RETURN(auto slot, run.Next());
      page::Init(slot.second, kArrayLeaf, slot.first);
      Encode(cur, slot.second);
      leaves.push_back({low, core::EncodeChild(slot.first)});
      return Status::Ok();
    };
    std::string low;
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
      if (!more) break;
      if (n > 0 && !(cur.back().key < key)) {
        return Status::InvalidArgument(fmt::format("bulk load: key #{} is out of order", n));
      }
      if (BytesOf(cur) + 4 + key.size() + cell.size() > kCapacity * 9 / 10) {
        const std::string next_low = core::ShortestSeparator(cur.back().key, key);
        GROVE_RETURN_IF_ERROR(flush(low));
        low = next_low;
        cur.clear();
      }
      cur.push_back({key, cell});
      ++n;
    }
    if (n == 0) return Status::Ok();
    GROVE_RETURN_IF_ERROR(flush(low));
    GROVE_RETURN_IF_ERROR(run.Finish());
    PageId old_leaf;
    {
      GROVE_ASSIGN_OR_RETURN(
          core::ParentLatch p,
          tree_->DescendToParent("", core::Seek::kAtOrAfter, IoCause::kBulkLoad, false));
      old_leaf = core::InnerNodeView(p.data()).child(0);
    }
    leaves_ = leaves.size();
    GROVE_RETURN_IF_ERROR(tree_->BuildAbove(std::move(leaves), 0.9));
    pool_->Discard(old_leaf);
    ctx_.allocator->Free(old_leaf, 1);
    entries_ = n;
    return Status::Ok();
  }

  std::string SerializeMetadata() override {
    std::string s;
    tree_->Serialize(&s);
    PutVarint64(&s, entries_.load());
    PutVarint64(&s, leaves_.load());
    return s;
  }

  Status Verify(IndexVerifier* v) override {
    uint64_t entries = 0, leaves = 0;
    GROVE_RETURN_IF_ERROR(tree_->Verify(v, [&](Slice payload, const core::Fences& f) -> Status {
      const PageId id = DecodeFixed64(payload.data());
      auto g = pool_->FetchRead(id, IoCause::kScan);
      if (!g.ok()) {
        v->Problem(fmt::format("sorted: leaf {} unreadable: {}", id, g.status().ToString()));
        return g.status().IsDataLoss() ? Status::Ok() : g.status();
      }
      v->ClaimPages(id, 1, "sorted leaf");
      ++leaves;
      if (std::string why = Check(g->data(), f); !why.empty()) {
        v->Problem(fmt::format("sorted: leaf {}: {}", id, why));
        return Status::Ok();
      }
      for (const Item& e : Decode(g->data())) v->OnCell(e.key, e.cell);
      entries += DecodeFixed16(g->data() + 24);
      return Status::Ok();
    }));
    if (entries != entries_.load() || leaves != leaves_.load()) {
      v->Problem(fmt::format("sorted: {} entries in {} leaves, the counters say {} and {}", entries,
                             leaves, entries_.load(), leaves_.load()));
    }
    return Status::Ok();
  }

  IndexStats GetStats() override {
    IndexStats s;
    s.variant = "sorted";
    s.height = tree_->height();
    s.inner_pages = tree_->inner_pages();
    s.inner_bytes = s.inner_pages * kPageSize;
    s.leaf_pages = leaves_.load();
    s.entries = entries_.load();
    return s;
  }

  // The leaf for `key`, latched shared (with its fences when asked).
  StatusOr<PageReadGuard> ReadLeaf(Slice key, core::Seek mode, core::Fences* fences) {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p,
                           tree_->DescendToParent(key, mode, IoCause::kDemand, false));
    if (fences != nullptr) *fences = p.leaf_fences();
    GROVE_ASSIGN_OR_RETURN(PageReadGuard leaf,
                           pool_->FetchRead(DecodeFixed64(p.leaf_payload().data())));
    if (page::Type(leaf.data()) != static_cast<uint16_t>(kArrayLeaf)) {
      return Status::DataLoss(fmt::format("sorted: page {} is no leaf", leaf.id()));
    }
    return leaf;
  }

 private:
  StatusOr<PageWriteGuard> NewLeaf() {
    GROVE_ASSIGN_OR_RETURN(const PageId id, ctx_.allocator->Allocate(1));
    auto g = pool_->NewPage(id, kArrayLeaf);
    if (!g.ok()) ctx_.allocator->Free(id, 1);
    return g;
  }

  // Applies `edit` (which returns the change in the number of entries) to the array of the leaf
  // for `key` under its exclusively latched level-1 node; splits the leaf when the result no
  // longer fits, drops it when it empties.
  template <typename Edit>
  Status Change(Slice key, const Edit& edit) {
    bool emptied;
    {
      GROVE_ASSIGN_OR_RETURN(
          core::ParentLatch p,
          tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, true));
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf,
                             pool_->FetchWrite(DecodeFixed64(p.leaf_payload().data())));
      std::vector<Item> entries = Decode(leaf.data());
      const int delta = edit(&entries);
      emptied = entries.empty() && p.child > 0;
      if (BytesOf(entries) <= kCapacity && !emptied) {
        Encode(entries, leaf.mutable_data());
        entries_.fetch_add(delta);
        return Status::Ok();
      }
    }
    // The structure changes: latch the path a split or a removal may reach, and edit again (the
    // edit has not been applied: old_cell is set once more from the same entry).
    std::vector<PageWriteGuard> path;
    core::Fences fences;
    GROVE_RETURN_IF_ERROR(tree_->LatchPath(
        key, emptied ? core::BTreeCore::Change::kRemove : core::BTreeCore::Change::kInsert, &path,
        &fences));
    const core::InnerNodeView parent(path.back().data());
    const int pos = parent.ChildIndexFor(key);
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, pool_->FetchWrite(parent.child(pos)));
    std::vector<Item> entries = Decode(leaf.data());
    const int delta = edit(&entries);
    if (entries.empty() && pos > 0) {
      const PageId id = leaf.id();
      leaf.Discard();
      ctx_.allocator->Free(id, 1);
      leaves_.fetch_sub(1);
      entries_.fetch_add(delta);
      return tree_->RemoveChild(&path, pos, key);
    }
    if (BytesOf(entries) <= kCapacity) {
      Encode(entries, leaf.mutable_data());
      entries_.fetch_add(delta);
      return Status::Ok();
    }
    // Split at the byte midpoint; both halves fit (an entry is at most a quarter page).
    size_t m = 0;
    for (size_t acc = 0;
         m + 1 < entries.size() && 2 * (acc + entries[m].bytes()) <= BytesOf(entries); ++m) {
      acc += entries[m].bytes();
    }
    m = std::clamp<size_t>(m, 1, entries.size() - 1);
    core::BTreeCore::SplitPlan plan;
    const std::string sep = core::ShortestSeparator(entries[m - 1].key, entries[m].key);
    GROVE_RETURN_IF_ERROR(tree_->PlanInsert(path, sep.size(), &plan));
    auto fresh = NewLeaf();
    if (!fresh.ok()) {
      tree_->ReleasePlan(&plan);
      return fresh.status();
    }
    Encode(std::vector<Item>(entries.begin(), entries.begin() + m), leaf.mutable_data());
    Encode(std::vector<Item>(entries.begin() + m, entries.end()), fresh->mutable_data());
    const PageId fresh_id = fresh->id();
    fresh->Release();
    leaf.Release();
    leaves_.fetch_add(1);
    entries_.fetch_add(delta);
    return tree_->InsertChild(&path, &plan, sep, core::EncodeChild(fresh_id));
  }

  IndexContext ctx_;
  BufferPool* const pool_;
  std::unique_ptr<core::BTreeCore> tree_;
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> leaves_{1};
};

class SortedCursor final : public core::BatchCursor {
 public:
  SortedCursor(SortedIndex* index, CursorOptions options)
      : core::BatchCursor(std::move(options)), index_(index) {
    Start();
  }

 private:
  Status ReadForward(const std::string& from, bool, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, index_->ReadLeaf(from, core::Seek::kAtOrAfter, leaf));
    for (auto& e : Decode(g.data())) {
      if (e.key >= from) out->push_back({std::move(e.key), std::move(e.cell)});
    }
    return Status::Ok();
  }
  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard g,
        index_->ReadLeaf(before, bounded ? core::Seek::kBefore : core::Seek::kLast, leaf));
    std::vector<Item> entries = Decode(g.data());
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      if (!bounded || it->key < before) out->push_back({std::move(it->key), std::move(it->cell)});
    }
    return Status::Ok();
  }

  SortedIndex* const index_;
};

StatusOr<std::unique_ptr<IndexCursor>> SortedIndex::NewCursor(const CursorOptions& options) {
  return std::unique_ptr<IndexCursor>(std::make_unique<SortedCursor>(this, options));
}

}  // namespace

VariantSpec SortedVariantSpec() {
  VariantSpec spec;
  spec.name = "sorted";
  spec.summary = "example: the B+-tree core above leaves holding packed sorted arrays";
  spec.page_types = {{static_cast<uint16_t>(kArrayLeaf), "sorted-array leaf"}};
  spec.create = [](const IndexContext& ctx, const ParamMap&) -> StatusOr<std::unique_ptr<Index>> {
    auto index = std::make_unique<SortedIndex>(ctx);
    GROVE_RETURN_IF_ERROR(index->Init(nullptr));
    return std::unique_ptr<Index>(std::move(index));
  };
  spec.open = [](const IndexContext& ctx, const ParamMap&,
                 Slice metadata) -> StatusOr<std::unique_ptr<Index>> {
    auto index = std::make_unique<SortedIndex>(ctx);
    GROVE_RETURN_IF_ERROR(index->Init(&metadata));
    return std::unique_ptr<Index>(std::move(index));
  };
  return spec;
}

}  // namespace grove::testing
