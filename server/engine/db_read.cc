// DbImpl: the read path (Get, BatchGet, iterators).

#include <fmt/format.h>

#include "engine/db_impl.h"
#include "util/clock.h"

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
  uint64_t expires_ms() const override { return meta_.expires_ms; }
  uint64_t version() const override { return meta_.version; }
  Status status() const override { return status_.ok() ? cursor_->status() : status_; }

  void Next() override {
    cursor_->Next();
    Settle();
  }

 private:
  // Resolves the current entry's value; skips entries deleted while the value was being read.
  void Settle() {
    value_.clear();
    meta_ = CellMeta();
    while (cursor_->Valid()) {
      if (keys_only_) {
        if (!db_->CellExpired(cursor_->cell())) return;
        cursor_->Next();
        continue;
      }
      Status s = db_->ResolveCell(cursor_->key(), cursor_->cell(), IoCause::kScan, &value_, &meta_);
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
  CellMeta meta_;
  Status status_;
};

}  // namespace

bool DbImpl::CellExpired(Slice cell) {
  CellView view;
  if (!ParseCell(cell, &view) || view.meta.expires_ms == 0) return false;
  if (!view.meta.Expired(NowUnixMillis())) return false;
  expired_reads_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

Status DbImpl::ResolveCell(Slice key, Slice cell, IoCause cause, std::string* value,
                           CellMeta* meta) {
  std::string again;  // a re-read cell, only when a blob was freed under the reader
  for (int attempt = 0;; ++attempt) {
    CellView view;
    if (!ParseCell(cell, &view)) {
      return Status::DataLoss(
          fmt::format("index entry of a key has a malformed value cell ({} bytes)", cell.size()));
    }
    if (meta != nullptr) *meta = view.meta;
    if (view.meta.expires_ms != 0 && view.meta.Expired(NowUnixMillis())) {
      // Invisible at once; the expiry sweep removes it later.
      expired_reads_.fetch_add(1, std::memory_order_relaxed);
      return Status::NotFound("the key has expired");
    }
    if (!view.blob) {
      value->assign(view.inline_value.data(), view.inline_value.size());
      return Status::Ok();
    }
    Status s = values_->Read(view.ref, cause, value);
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
  CellMeta meta;
  return ReadCurrent(key, value, &meta);
}

StatusOr<bool> DbImpl::GetWithMeta(Slice key, std::string* value, ValueMeta* meta) {
  *meta = ValueMeta();
  if (closed_.load()) return Status::Unavailable("database is closed");
  GROVE_RETURN_IF_ERROR(CheckKey(key, "key"));
  gets_.fetch_add(1, std::memory_order_relaxed);
  CellMeta cell;
  GROVE_ASSIGN_OR_RETURN(const bool found, ReadCurrent(key, value, &cell));
  if (found) *meta = ValueMeta{cell.version, cell.expires_ms};
  return found;
}

StatusOr<bool> DbImpl::ReadCurrent(Slice key, std::string* value, CellMeta* meta) {
  std::string cell;
  GROVE_ASSIGN_OR_RETURN(const bool found, index_->Get(key, &cell));
  if (!found) return false;
  Status s = ResolveCell(key, cell, IoCause::kDemand, value, meta);
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
  // All of a batch or none of it (key_locks.h): out-of-line values are read under the locks too,
  // or a blob freed by a later batch would be re-read from that batch.
  const std::vector<uint32_t> stripes = KeyLocks::StripesOf(keys);
  key_locks_.LockShared(stripes);
  Status s = BatchGetLocked(keys, values);
  key_locks_.UnlockShared(stripes);
  return s;
}

Status DbImpl::BatchGetLocked(const std::vector<Slice>& keys,
                              std::vector<std::optional<std::string>>* values) {
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
  c.readahead_pages = options_.scan_readahead_pages;
  GROVE_ASSIGN_OR_RETURN(auto cursor, index_->NewCursor(c));
  auto it = std::make_unique<DbIterator>(this, std::move(cursor), options.keys_only);
  return std::unique_ptr<Iterator>(std::move(it));
}

}  // namespace grove
