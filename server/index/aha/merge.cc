#include "index/aha/merge.h"

namespace grove::aha {

namespace {

class RunSource final : public Source {
 public:
  RunSource(BufferPool* pool, std::shared_ptr<const Run> run, Slice start, bool from_start,
            bool reverse, IoCause cause, uint32_t readahead)
      : cursor_(pool, std::move(run), cause, readahead), reverse_(reverse) {
    if (from_start) {
      reverse ? cursor_.SeekToLast() : cursor_.SeekToFirst();
    } else {
      reverse ? cursor_.SeekForPrev(start) : cursor_.Seek(start);
    }
  }
  bool Valid() const override { return cursor_.Valid(); }
  const Entry& entry() const override { return cursor_.entry(); }
  void Next() override { reverse_ ? cursor_.Prev() : cursor_.Next(); }
  Status status() const override { return cursor_.status(); }

 private:
  RunCursor cursor_;
  bool reverse_;
};

class LevelSource final : public Source {
 public:
  LevelSource(BufferPool* pool, std::vector<std::shared_ptr<const Run>> runs, Slice start,
              bool from_start, bool reverse, IoCause cause, uint32_t readahead)
      : pool_(pool),
        runs_(std::move(runs)),
        reverse_(reverse),
        cause_(cause),
        readahead_(readahead) {
    const int n = static_cast<int>(runs_.size());
    if (from_start) {
      Open(reverse_ ? n - 1 : 0, true, start);
      return;
    }
    int i = 0;
    if (!reverse_) {
      while (i < n && Slice(runs_[i]->meta().max_key).compare(start) < 0) ++i;
    } else {
      i = n - 1;
      while (i >= 0 && Slice(runs_[i]->meta().min_key).compare(start) > 0) --i;
    }
    Open(i, false, start);
  }
  bool Valid() const override { return cursor_ && cursor_->Valid(); }
  const Entry& entry() const override { return cursor_->entry(); }
  void Next() override {
    reverse_ ? cursor_->Prev() : cursor_->Next();
    if (!cursor_->Valid() && cursor_->status().ok()) Open(i_ + (reverse_ ? -1 : 1), true, "");
  }
  Status status() const override { return cursor_ ? cursor_->status() : Status::Ok(); }

 private:
  // Positions on run i (from its first / last entry, or at `start`); skips nothing: runs are
  // never empty.
  void Open(int i, bool from_start, Slice start) {
    i_ = i;
    if (i < 0 || i >= static_cast<int>(runs_.size())) {
      cursor_.reset();
      return;
    }
    cursor_ = std::make_unique<RunCursor>(pool_, runs_[i], cause_, readahead_);
    if (from_start) {
      reverse_ ? cursor_->SeekToLast() : cursor_->SeekToFirst();
    } else {
      reverse_ ? cursor_->SeekForPrev(start) : cursor_->Seek(start);
    }
    if (!cursor_->Valid() && cursor_->status().ok()) Open(i + (reverse_ ? -1 : 1), true, "");
  }

  BufferPool* pool_;
  std::vector<std::shared_ptr<const Run>> runs_;
  bool reverse_;
  IoCause cause_;
  uint32_t readahead_;
  int i_ = -1;
  std::unique_ptr<RunCursor> cursor_;
};

class MemTableSource final : public Source {
 public:
  static constexpr size_t kFirstBatch = 16;
  static constexpr size_t kMaxBatch = 512;
  MemTableSource(std::shared_ptr<const MemTable> table, Slice start, bool from_start, bool reverse,
                 Slice end, bool has_end)
      : table_(std::move(table)),
        reverse_(reverse),
        end_(end.data(), end.size()),
        has_end_(has_end) {
    table_->Collect(start, from_start, /*inclusive=*/true, reverse_, batch_size_, end_, has_end_,
                    &batch_);
  }
  bool Valid() const override { return pos_ < batch_.size(); }
  const Entry& entry() const override { return batch_[pos_]; }
  void Next() override {
    if (++pos_ < batch_.size() || batch_.size() < batch_size_) return;
    last_.assign(batch_.back().key);
    batch_size_ = std::min(kMaxBatch, batch_size_ * 2);
    table_->Collect(last_, false, /*inclusive=*/false, reverse_, batch_size_, end_, has_end_,
                    &batch_);
    pos_ = 0;
  }
  Status status() const override { return Status::Ok(); }

 private:
  std::shared_ptr<const MemTable> table_;
  bool reverse_;
  std::string end_;
  bool has_end_;
  size_t batch_size_ = kFirstBatch;
  std::vector<Entry> batch_;
  std::string last_;
  size_t pos_ = 0;
};

class LazySource final : public Source {
 public:
  LazySource(std::string bound, std::function<std::unique_ptr<Source>()> open)
      : open_(std::move(open)) {
    bound_.key = std::move(bound);
  }
  bool Valid() const override { return inner_ == nullptr || inner_->Valid(); }
  const Entry& entry() const override { return inner_ == nullptr ? bound_ : inner_->entry(); }
  void Next() override { inner_->Next(); }  // REQUIRES: opened (the merge opens it first)
  Status status() const override { return inner_ == nullptr ? Status::Ok() : inner_->status(); }
  bool Pending() const override { return inner_ == nullptr; }
  void Open() override {
    if (inner_ == nullptr) inner_ = open_();
  }

 private:
  Entry bound_;
  std::function<std::unique_ptr<Source>()> open_;
  std::unique_ptr<Source> inner_;
};

class VectorSource final : public Source {
 public:
  explicit VectorSource(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  bool Valid() const override { return pos_ < entries_.size(); }
  const Entry& entry() const override { return entries_[pos_]; }
  void Next() override { ++pos_; }
  Status status() const override { return Status::Ok(); }

 private:
  std::vector<Entry> entries_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<Source> NewRunSource(BufferPool* pool, std::shared_ptr<const Run> run, Slice start,
                                     bool from_start, bool reverse, IoCause cause,
                                     uint32_t readahead) {
  return std::make_unique<RunSource>(pool, std::move(run), start, from_start, reverse, cause,
                                     readahead);
}

std::unique_ptr<Source> NewLevelSource(BufferPool* pool,
                                       std::vector<std::shared_ptr<const Run>> runs, Slice start,
                                       bool from_start, bool reverse, IoCause cause,
                                       uint32_t readahead) {
  return std::make_unique<LevelSource>(pool, std::move(runs), start, from_start, reverse, cause,
                                       readahead);
}

std::unique_ptr<Source> NewMemTableSource(std::shared_ptr<const MemTable> table, Slice start,
                                          bool from_start, bool reverse) {
  return NewMemTableSource(std::move(table), start, from_start, reverse, Slice(), false);
}

std::unique_ptr<Source> NewMemTableSource(std::shared_ptr<const MemTable> table, Slice start,
                                          bool from_start, bool reverse, Slice end, bool has_end) {
  return std::make_unique<MemTableSource>(std::move(table), start, from_start, reverse, end,
                                          has_end);
}

std::unique_ptr<Source> NewLazySource(std::string bound,
                                      std::function<std::unique_ptr<Source>()> open) {
  return std::make_unique<LazySource>(std::move(bound), std::move(open));
}

std::unique_ptr<Source> NewVectorSource(std::vector<Entry> entries) {
  return std::make_unique<VectorSource>(std::move(entries));
}

MergingIterator::MergingIterator(std::vector<std::unique_ptr<Source>> sources, bool reverse,
                                 bool keep_shadowed)
    : sources_(std::move(sources)), reverse_(reverse), keep_shadowed_(keep_shadowed) {
  for (size_t i = 0; i < sources_.size(); ++i) live_.push_back(i);
  Step();
}

void MergingIterator::Next() {
  if (!valid_) return;
  // The sources at the key just returned move on only now, so that entry() could point into
  // the winning source instead of copying it.
  if (at_key_.size() == 1) {
    // Fast path: one source held the smallest key. While its next key still comes before every
    // other source's (the runner-up, unchanged since nothing else moved), it wins again without
    // a look at the others: a long stretch from one source (a leaf's pages, one run) costs one
    // comparison per entry.
    Source& s = *sources_[at_key_[0]];
    s.Next();
    if (s.Valid() && !s.Pending() &&
        (runner_up_ == nullptr || Before(s.entry().key, *runner_up_))) {
      current_ = &s.entry();
      return;
    }
  } else {
    for (size_t i : at_key_) sources_[i]->Next();
  }
  Step();
}

void MergingIterator::Step() {
  valid_ = false;
  current_ = nullptr;
  shadowed_.clear();
  shadowed_sources_.clear();
  for (;;) {
    if (!FindSmallest()) return;
    // A lazy source whose bound is at the smallest key may hold entries there: open it and look
    // again. A bound never passes an entry of its source, so none is skipped.
    bool opened = false;
    for (size_t i : at_key_) {
      if (sources_[i]->Pending()) {
        sources_[i]->Open();
        opened = true;
      }
    }
    if (!opened) break;
  }
  size_t best = at_key_[0];
  for (size_t i : at_key_) {
    if (Newer(sources_[i]->entry().lsn, sources_[best]->entry().lsn)) best = i;
  }
  current_ = &sources_[best]->entry();
  source_ = best;
  if (keep_shadowed_) {
    for (size_t i : at_key_) {
      if (i == best) continue;
      shadowed_.push_back(sources_[i]->entry());
      shadowed_sources_.push_back(i);
    }
  }
  valid_ = true;
}

bool MergingIterator::FindSmallest() {
  at_key_.clear();
  runner_up_ = nullptr;
  for (size_t k = 0; k < live_.size();) {
    Source& s = *sources_[live_[k]];
    if (!s.Valid()) {
      // Exhausted, or failed: a failed source stops the merge (status() reports it).
      if (!s.status().ok()) {
        error_ = s.status();
        at_key_.clear();
        return false;
      }
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    const size_t i = live_[k++];
    if (at_key_.empty()) {
      at_key_.push_back(i);
      continue;
    }
    const std::string& key = s.entry().key;
    const std::string& best = sources_[at_key_[0]]->entry().key;
    const int c = Slice(key).compare(best);
    if (c == 0) {
      at_key_.push_back(i);
    } else if ((c < 0) != reverse_) {
      runner_up_ = &best;  // it came before every other source seen
      at_key_.assign(1, i);
    } else if (runner_up_ == nullptr || Before(key, *runner_up_)) {
      runner_up_ = &key;
    }
  }
  return !at_key_.empty();
}

Status MergingIterator::status() const {
  if (!error_.ok()) return error_;
  for (size_t i : live_) {
    if (!sources_[i]->status().ok()) return sources_[i]->status();
  }
  return Status::Ok();
}

}  // namespace grove::aha
