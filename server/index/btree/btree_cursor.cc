// BTree cursors: one leaf's worth of entries at a time, no latch held between calls.

#include <fmt/format.h>

#include "index/btree/btree.h"

namespace grove {
namespace {

using btree::NodeView;

class BTreeCursor final : public IndexCursor {
 public:
  BTreeCursor(BTree* tree, CursorOptions options) : tree_(tree), opts_(std::move(options)) {
    Fill();
  }

  bool Valid() const override { return pos_ < entries_.size(); }
  Slice key() const override { return entries_[pos_].first; }
  Slice cell() const override { return entries_[pos_].second; }
  Status status() const override { return status_; }

  void Next() override {
    if (++pos_ < entries_.size()) return;
    Fill();
  }

 private:
  // Refills entries_ from the next leaf that has qualifying keys, or marks the end.
  void Fill() {
    entries_.clear();
    pos_ = 0;
    if (done_ || !status_.ok()) return;
    if (opts_.reverse) {
      FillReverse();
    } else {
      FillForward();
    }
  }

  void FillForward() {
    // Resume strictly after the last key returned: last + "\0" is the smallest larger key.
    std::string target = started_ ? last_ + std::string(1, '\0') : opts_.lower;
    started_ = true;
    for (;;) {
      BTree::Fences fences;
      auto leaf = tree_->DescendPredicted(target, BTree::Seek::kAtOrAfter, IoCause::kScan, &fences);
      if (!leaf.ok()) return Fail(leaf.status());
      const NodeView n(leaf->data());
      bool found;
      for (int i = n.slots().LowerBound(target, &found); i < n.count(); ++i) {
        const Slice k = n.key(i);
        if (opts_.has_upper && k >= opts_.upper) {
          done_ = true;
          break;
        }
        entries_.emplace_back(k, n.payload(i));
      }
      if (!entries_.empty()) {
        last_ = entries_.back().first;
        return;
      }
      if (done_ || !fences.has_high || (opts_.has_upper && fences.high >= opts_.upper)) {
        done_ = true;
        return;
      }
      target = fences.high;  // the next leaf starts there
    }
  }

  void FillReverse() {
    // Keys strictly below `bound` (or from the very end when there is none yet).
    bool bounded = started_ || opts_.has_upper;
    std::string bound = started_ ? last_ : opts_.upper;
    started_ = true;
    for (;;) {
      BTree::Fences fences;
      auto leaf = tree_->DescendPredicted(
          bound, bounded ? BTree::Seek::kBefore : BTree::Seek::kLast, IoCause::kScan, &fences);
      if (!leaf.ok()) return Fail(leaf.status());
      const NodeView n(leaf->data());
      int i = n.count() - 1;
      if (bounded) {
        bool found;
        i = n.slots().LowerBound(bound, &found) - 1;
      }
      for (; i >= 0; --i) {
        const Slice k = n.key(i);
        if (k < opts_.lower) {
          done_ = true;
          break;
        }
        entries_.emplace_back(k, n.payload(i));
      }
      if (!entries_.empty()) {
        last_ = entries_.back().first;
        return;
      }
      if (done_ || !fences.has_low || fences.low <= opts_.lower) {
        done_ = true;
        return;
      }
      bound = fences.low;  // the previous leaf ends just below it
      bounded = true;
    }
  }

  void Fail(Status s) {
    status_ = std::move(s);
    entries_.clear();
    done_ = true;
  }

  BTree* const tree_;
  const CursorOptions opts_;
  std::vector<std::pair<std::string, std::string>> entries_;
  size_t pos_ = 0;
  std::string last_;
  bool started_ = false;
  bool done_ = false;
  Status status_;
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> BTree::NewCursor(const CursorOptions& options) {
  // Errors met while positioning surface through the cursor's status(), like later ones.
  return std::unique_ptr<IndexCursor>(std::make_unique<BTreeCursor>(this, options));
}

}  // namespace grove
