// AHA-tree reads: point lookups top-down through the buffers, and cursors that merge them.

#include <algorithm>

#include "index/aha/aha.h"
#include "index/aha/merge.h"

namespace grove {

using aha::Entry;
using aha::Level;
using aha::Run;

StatusOr<bool> AhaTree::Get(Slice key, std::string* cell) {
  gets_.fetch_add(1, std::memory_order_relaxed);
  const Snapshot snap = TakeSnapshot();
  Entry e;
  auto answer = [&]() -> bool {
    if (e.tombstone) return false;
    *cell = std::move(e.cell);
    return true;
  };
  if (snap.active->Get(key, &e)) return answer();
  for (const auto& t : snap.version->frozen) {
    if (t->Get(key, &e)) return answer();
  }
  // Freshest first: the root's buffer, then each buffer on the path down to the leaf; within a
  // buffer level 0 newest run first, then one run per deeper level.
  uint64_t probed = 0, skipped = 0;
  auto probe = [&](const Run& r) -> StatusOr<bool> {
    ++probed;
    bool filtered = false;
    GROVE_ASSIGN_OR_RETURN(const bool found, r.Get(pool_, key, &e, &filtered));
    skipped += filtered;
    return found;
  };
  StatusOr<bool> result = false;
  bool done = false;
  for (const aha::Node* node = snap.version->root.get(); node != nullptr && !done;
       node = node->leaf() ? nullptr : node->children[node->ChildFor(key)].get()) {
    for (size_t l = 0; l < node->levels.size() && !done; ++l) {
      const Level& level = node->levels[l];
      if (l == 0) {
        for (const auto& r : level.runs) {
          if (!r->Covers(key)) continue;
          result = probe(*r);
          if (!result.ok() || *result) {
            done = true;
            break;
          }
        }
      } else if (const Run* r = level.RunFor(key); r != nullptr) {
        result = probe(*r);
        done = !result.ok() || *result;
      }
    }
    if (!done && node->adapted()) {  // below an adapted leaf's buffer: its pages
      result = aha::GetFromPages(pool_, node->pages, key, &e);
      done = true;
    }
  }
  runs_probed_.fetch_add(probed, std::memory_order_relaxed);
  filter_skips_.fetch_add(skipped, std::memory_order_relaxed);
  if (!result.ok()) return result.status();
  return *result && answer();
}

namespace {

// Live entries of a merge within [lower, upper) (reverse: downward from below upper).
class AhaCursor final : public IndexCursor {
 public:
  AhaCursor(AhaTree* tree, AhaTree::Snapshot snap, std::unique_ptr<aha::ScanContext> scan,
            std::unique_ptr<aha::MergingIterator> merge, const CursorOptions& o)
      : tree_(tree),
        snap_(std::move(snap)),
        scan_(std::move(scan)),
        merge_(std::move(merge)),
        o_(o) {
    Settle();
  }
  // The span this search covered feeds the hot-range detector.
  ~AhaCursor() override {
    if (seen_ == 0) return;
    const bool up = !o_.reverse;
    tree_->NoteScan(up ? first_ : last_, up ? last_ : first_, scan_->runs_opened);
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    if (!valid_) return;
    merge_->Next();
    Settle();
  }
  Slice key() const override { return merge_->entry().key; }
  Slice cell() const override { return merge_->entry().cell; }
  Status status() const override { return merge_->status(); }

 private:
  // Skips tombstones and, going backward, keys at or above the upper bound; stops at the bounds.
  void Settle() {
    valid_ = false;
    for (; merge_->Valid(); merge_->Next()) {
      const Slice k = merge_->entry().key;
      if (!o_.reverse) {
        if (o_.has_upper && k.compare(o_.upper) >= 0) return;
      } else {
        if (k.compare(o_.lower) < 0) return;
        if (o_.has_upper && k.compare(o_.upper) >= 0) continue;
      }
      if (merge_->entry().tombstone) continue;
      valid_ = true;
      if (seen_++ == 0) first_ = merge_->entry().key;
      last_ = merge_->entry().key;
      return;
    }
  }

  AhaTree* tree_;
  AhaTree::Snapshot snap_;                  // keeps the runs and memtables alive
  std::unique_ptr<aha::ScanContext> scan_;  // the tree's sources refer to it
  std::unique_ptr<aha::MergingIterator> merge_;
  CursorOptions o_;
  bool valid_ = false;
  uint64_t seen_ = 0;
  std::string first_, last_;  // in the scan's direction
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> AhaTree::NewCursor(const CursorOptions& o) {
  Snapshot snap = TakeSnapshot();
  const bool from_start = o.reverse && !o.has_upper;
  const Slice start = o.reverse ? Slice(o.upper) : Slice(o.lower);
  // The memtables copy out nothing past the scan's far bound.
  const Slice end = o.reverse ? Slice(o.lower) : Slice(o.upper);
  const bool has_end = o.reverse || o.has_upper;
  std::vector<std::unique_ptr<aha::Source>> sources;
  sources.push_back(
      aha::NewMemTableSource(snap.active, start, from_start, o.reverse, end, has_end));
  for (const auto& t : snap.version->frozen) {
    sources.push_back(aha::NewMemTableSource(t, start, from_start, o.reverse, end, has_end));
  }
  // The tree, below the memtables: its nodes are opened as the scan reaches them.
  auto scan = std::make_unique<aha::ScanContext>(aha::ScanContext{
      pool_, IoCause::kScan, cfg_.readahead_pages, o.lower, o.upper, o.has_upper, o.reverse});
  sources.push_back(
      aha::NewNodeSource(scan.get(), snap.version->root, aha::KeyRange{}, start, from_start));
  auto merge = std::make_unique<aha::MergingIterator>(std::move(sources), o.reverse, false);
  return std::unique_ptr<IndexCursor>(
      new AhaCursor(this, std::move(snap), std::move(scan), std::move(merge), o));
}

}  // namespace grove
