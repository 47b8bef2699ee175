#pragma once

// BatchCursor: the cursor of the tree variants. It hands out one batch of entries at a time (the
// rest of a leaf, or of one hln subnode) and holds no latch between batches: every batch descends
// again by key, and when a leaf has nothing more, the next batch starts at the leaf's fence key,
// so a slow consumer (a gRPC stream) never holds up writers and never follows a sibling pointer
// that may have gone stale. The variant supplies the two reads; bounds, direction, resumption
// after the last key returned and errors are handled here.
//
// Thread safety: a cursor is used by one thread; it may run concurrently with writers.

#include <string>
#include <vector>

#include "grove/index.h"

#include "index/core/inner_node.h"

namespace grove::core {

class BatchCursor : public IndexCursor {
 public:
  struct Entry {
    std::string key, cell;
  };

  bool Valid() const override { return pos_ < batch_.size(); }
  Slice key() const override { return batch_[pos_].key; }
  Slice cell() const override { return batch_[pos_].cell; }
  Status status() const override { return status_; }
  void Next() override;

 protected:
  explicit BatchCursor(CursorOptions options) : opts_(std::move(options)) {}
  // Reads the first batch; the derived constructor calls it last (it calls the virtuals).
  void Start() { Fill(); }

  // Forward: the entries with keys >= `from`, ascending, of the leaf holding `from` (or of the
  // part of it the variant reads at once); *leaf receives that leaf's fences. Empty when the leaf
  // has nothing at or after `from`. `first` marks the cursor's first read (a lookup like any
  // other: a variant may predict its path).
  virtual Status ReadForward(const std::string& from, bool first, std::vector<Entry>* out,
                             Fences* leaf) = 0;
  // Reverse: the entries with keys < `before` (all of the last leaf when !bounded), descending,
  // of the leaf holding the largest keys below it; *leaf receives its fences.
  virtual Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                             Fences* leaf) = 0;

  const CursorOptions& options() const { return opts_; }

 private:
  void Fill();
  Status FillForward();
  Status FillReverse();

  const CursorOptions opts_;
  std::vector<Entry> batch_;
  size_t pos_ = 0;
  std::string last_;
  bool started_ = false;
  bool done_ = false;
  Status status_;
};

}  // namespace grove::core
