// DbImpl: the read path (Get, BatchGet, iterators).

#include <fmt/format.h>

#include "engine/db_impl.h"

namespace grove {
namespace {

class DbIterator final : public Iterator {
 public:
  DbIterator(DbImpl* db, std::unique_ptr<IndexCursor> cursor, bool keys_only)
      : db_(db), cursor_(std::move(cursor)), keys_only_(keys_only) {
    Settle();
  }

  bool Valid() const override { return status_.ok() && cursor_->Valid(); }
  Slice key() const override { return cursor_->key(); }
  Slice value() const override { return value_; }
  Status status() const override { return status_.ok() ? cursor_->status() : status_; }

  void Next() override {
    cursor_->Next();
    Settle();
  }

 private:
  // Resolves the current entry's value; skips entries deleted while the value was being read.
  void Settle() {
    value_.clear();
    while (cursor_->Valid()) {
      if (keys_only_) return;
      Status s = db_->ResolveCell(cursor_->key(), cursor_->cell(), IoCause::kScan, &value_);
      if (s.ok()) return;
      if (!s.IsNotFound()) {
        status_ = s;
        return;
      }
      cursor_->Next();
    }
  }

  DbImpl* const db_;
  std::unique_ptr<IndexCursor> cursor_;
  const bool keys_only_;
  std::string value_;
  Status status_;
};

}  // namespace

Status DbImpl::ResolveCell(Slice key, Slice cell, IoCause cause, std::string* value) {
  std::string again;  // a re-read cell, only when a blob was freed under the reader
  for (int attempt = 0;; ++attempt) {
    if (!IsValidCell(cell)) {
      return Status::DataLoss(
          fmt::format("index entry of a key has a malformed value cell ({} "
                      "bytes)",
                      cell.size()));
    }
    if (cell[0] == kInlineTag) {
      value->assign(cell.data() + 1, cell.size() - 1);
      return Status::Ok();
    }
    Status s = values_->Read(DecodeBlobCell(cell), cause, value);
    if (s.ok()) return s;
    // The blob may have been freed by a concurrent overwrite or delete of the key: look again.
    std::string fresh;
    GROVE_ASSIGN_OR_RETURN(const bool found, index_->Get(key, &fresh));
    if (!found) return Status::NotFound("deleted while being read");
    if (Slice(fresh) == cell || attempt >= 16) return s;  // unchanged: the damage is real
    again = std::move(fresh);
    cell = again;
  }
}

StatusOr<bool> DbImpl::Get(Slice key, std::string* value, const ReadOptions&) {
  if (closed_.load()) return Status::Unavailable("database is closed");
  GROVE_RETURN_IF_ERROR(CheckKey(key, "key"));
  gets_.fetch_add(1, std::memory_order_relaxed);
  std::string cell;
  GROVE_ASSIGN_OR_RETURN(const bool found, index_->Get(key, &cell));
  if (!found) return false;
  Status s = ResolveCell(key, cell, IoCause::kDemand, value);
  if (s.IsNotFound()) return false;
  GROVE_RETURN_IF_ERROR(s);
  return true;
}

Status DbImpl::BatchGet(const std::vector<Slice>& keys,
                        std::vector<std::optional<std::string>>* values, const ReadOptions&) {
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (keys.size() > options_.max_batch_entries) {
    return Status::ResourceExhausted(fmt::format("{} keys exceed limits.max_batch_entries ({})",
                                                 keys.size(), options_.max_batch_entries));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty() || keys[i].size() > options_.max_key_bytes) {
      return CheckKey(keys[i], fmt::format("keys[{}]", i).c_str());
    }
  }
  gets_.fetch_add(keys.size(), std::memory_order_relaxed);
  std::vector<std::optional<std::string>> cells;
  GROVE_RETURN_IF_ERROR(index_->BatchGet(keys, &cells));
  values->assign(keys.size(), std::nullopt);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!cells[i]) continue;
    std::string v;
    Status s = ResolveCell(keys[i], *cells[i], IoCause::kDemand, &v);
    if (s.IsNotFound()) continue;
    GROVE_RETURN_IF_ERROR(s);
    (*values)[i] = std::move(v);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Iterator>> DbImpl::NewIterator(const ScanOptions& options) {
  if (closed_.load()) return Status::Unavailable("database is closed");
  if (options.has_upper && options.upper < options.lower) {
    return Status::InvalidArgument("scan: end key sorts before start key");
  }
  scans_.fetch_add(1, std::memory_order_relaxed);
  CursorOptions c;
  c.lower = options.lower;
  c.upper = options.upper;
  c.has_upper = options.has_upper;
  c.reverse = options.reverse;
  c.expected_entries = options.expected_entries;
  GROVE_ASSIGN_OR_RETURN(auto cursor, index_->NewCursor(c));
  auto it = std::make_unique<DbIterator>(this, std::move(cursor), options.keys_only);
  return std::unique_ptr<Iterator>(std::move(it));
}

}  // namespace grove
