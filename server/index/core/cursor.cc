#include "index/core/cursor.h"

namespace grove::core {

void BatchCursor::Next() {
  if (++pos_ < batch_.size()) return;
  Fill();
}

void BatchCursor::Fill() {
  batch_.clear();
  pos_ = 0;
  if (done_ || !status_.ok()) return;
  Status s = opts_.reverse ? FillReverse() : FillForward();
  if (!s.ok()) {
    status_ = std::move(s);
    batch_.clear();
    done_ = true;
  }
}

Status BatchCursor::FillForward() {
  // Resume strictly after the last key returned: last + "\0" is the smallest larger key.
  std::string from = started_ ? last_ + std::string(1, '\0') : opts_.lower;
  bool first = !started_;
  started_ = true;
  for (;;) {
    Fences leaf;
    GROVE_RETURN_IF_ERROR(ReadForward(from, first, &batch_, &leaf));
    first = false;
    for (size_t i = 0; i < batch_.size(); ++i) {
      if (opts_.has_upper && batch_[i].key >= opts_.upper) {
        batch_.resize(i);
        done_ = true;
        break;
      }
    }
    if (!batch_.empty()) {
      last_ = batch_.back().key;
      return Status::Ok();
    }
    if (done_ || !leaf.has_high || (opts_.has_upper && leaf.high >= opts_.upper)) {
      done_ = true;
      return Status::Ok();
    }
    from = leaf.high;  // the next leaf starts there
  }
}

Status BatchCursor::FillReverse() {
  // Keys strictly below `before` (or from the very end when there is no bound yet).
  bool bounded = started_ || opts_.has_upper;
  std::string before = started_ ? last_ : opts_.upper;
  started_ = true;
  for (;;) {
    Fences leaf;
    GROVE_RETURN_IF_ERROR(ReadReverse(bounded, before, &batch_, &leaf));
    for (size_t i = 0; i < batch_.size(); ++i) {
      if (batch_[i].key < opts_.lower) {
        batch_.resize(i);
        done_ = true;
        break;
      }
    }
    if (!batch_.empty()) {
      last_ = batch_.back().key;
      return Status::Ok();
    }
    if (done_ || !leaf.has_low || leaf.low <= opts_.lower) {
      done_ = true;
      return Status::Ok();
    }
    before = leaf.low;  // the previous leaf ends just below it
    bounded = true;
  }
}

}  // namespace grove::core
