// BTree cursors: one leaf's entries at a time (core::BatchCursor holds no latch between calls).
// While a descent holds the level-1 node above the leaf, the cursor notes the sibling leaves its
// bounds allow; once it has seen how many entries the leaf gave, core::ScanReadahead reads as
// many of them ahead as the scan is expected to need.

#include "index/btree/btree.h"
#include "index/core/cursor.h"
#include "index/core/readahead.h"

namespace grove {
namespace {

class BTreeCursor final : public core::BatchCursor {
 public:
  BTreeCursor(BTree* tree, BufferPool* pool, CursorOptions options)
      : core::BatchCursor(std::move(options)), tree_(tree), readahead_(pool, this->options()) {
    Start();
  }

 private:
  Status ReadForward(const std::string& from, bool first, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, Descend(from, core::Seek::kAtOrAfter, first, leaf));
    const core::LeafView n(g.data());
    bool found;
    const int start = n.Find(from, &found);
    ReadAhead(static_cast<size_t>(n.count() - start), n.count());
    for (int i = start; i < n.count(); ++i) {
      out->push_back({std::string(n.key(i)), std::string(n.cell(i))});
    }
    return Status::Ok();
  }

  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard g,
        Descend(before, bounded ? core::Seek::kBefore : core::Seek::kLast, !started_, leaf));
    started_ = true;
    const core::LeafView n(g.data());
    int i = n.count() - 1;
    if (bounded) {
      bool found;
      i = n.Find(before, &found) - 1;
    }
    ReadAhead(static_cast<size_t>(i + 1), n.count());
    for (; i >= 0; --i) out->push_back({std::string(n.key(i)), std::string(n.cell(i))});
    return Status::Ok();
  }

  // The first read of a scan is a lookup like any other (its path may be predicted); later ones
  // follow the leaf just read. Every read takes its leaf from the readahead batch when it is there.
  StatusOr<PageReadGuard> Descend(const std::string& key, core::Seek mode, bool first,
                                  core::Fences* leaf) {
    ahead_.clear();
    const core::ParentVisitor note = [this](const core::ParentLatch& p) {
      if (!readahead_.enabled()) return;
      core::NextChildren(p, options(), readahead_.budget(), &children_);
      for (Slice payload : children_) ahead_.push_back(DecodeFixed64(payload.data()));
    };
    if (first) {
      return tree_->DescendPredicted(key, mode, IoCause::kScan, leaf, readahead_.batch(), &note);
    }
    return tree_->DescendToLeaf(key, mode, IoCause::kScan, leaf, readahead_.batch(), nullptr,
                                &note);
  }

  void ReadAhead(size_t entries, int leaf_entries) {
    readahead_.Visited(entries, static_cast<size_t>(leaf_entries));
    readahead_.Issue(ahead_);
  }

  BTree* const tree_;
  core::ScanReadahead readahead_;
  std::vector<PageId> ahead_;    // the sibling leaves noted by the last descent, nearest first
  std::vector<Slice> children_;  // scratch for NextChildren
  bool started_ = false;         // reverse: the first read was made
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> BTree::NewCursor(const CursorOptions& options) {
  // Errors met while positioning surface through the cursor's status(), like later ones.
  return std::unique_ptr<IndexCursor>(std::make_unique<BTreeCursor>(this, pool_, options));
}

}  // namespace grove
