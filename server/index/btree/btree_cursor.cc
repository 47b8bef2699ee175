// BTree cursors: one leaf's entries at a time (core::BatchCursor holds no latch between calls).

#include "index/btree/btree.h"
#include "index/core/cursor.h"

namespace grove {
namespace {

class BTreeCursor final : public core::BatchCursor {
 public:
  BTreeCursor(BTree* tree, CursorOptions options)
      : core::BatchCursor(std::move(options)), tree_(tree) {
    Start();
  }

 private:
  Status ReadForward(const std::string& from, bool, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, tree_->DescendPredicted(from, core::Seek::kAtOrAfter,
                                                                    IoCause::kScan, leaf));
    const core::LeafView n(g.data());
    bool found;
    for (int i = n.Find(from, &found); i < n.count(); ++i) {
      out->push_back({std::string(n.key(i)), std::string(n.cell(i))});
    }
    return Status::Ok();
  }

  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard g,
        tree_->DescendPredicted(before, bounded ? core::Seek::kBefore : core::Seek::kLast,
                                IoCause::kScan, leaf));
    const core::LeafView n(g.data());
    int i = n.count() - 1;
    if (bounded) {
      bool found;
      i = n.Find(before, &found) - 1;
    }
    for (; i >= 0; --i) out->push_back({std::string(n.key(i)), std::string(n.cell(i))});
    return Status::Ok();
  }

  BTree* const tree_;
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> BTree::NewCursor(const CursorOptions& options) {
  // Errors met while positioning surface through the cursor's status(), like later ones.
  return std::unique_ptr<IndexCursor>(std::make_unique<BTreeCursor>(this, options));
}

}  // namespace grove
